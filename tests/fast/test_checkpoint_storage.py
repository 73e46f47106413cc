"""How the Redis checkpointer keeps a run small: passages once, parts packed, short versions."""

from __future__ import annotations

import json

from langgraph.checkpoint.redis.base import BaseRedisSaver

from seekgraph.server.runs.compact import pack, restore, stow, unpack
from seekgraph.server.runs.fencing import FencedRedisSaver


def _hit(source_id: str, score: float) -> dict:
    return {
        "source_id": source_id,
        "doc_id": "vpn-guide",
        "title": "VPN guide",
        "snippet": "Install the client, then sign in with your SSO account. " * 3,
        "score": score,
        "query": "vpn laptop",
    }


def test_a_passage_seen_in_every_step_is_stored_once_and_comes_back_whole() -> None:
    hit = _hit("kb:vpn#1", 0.8)
    evidence = {**hit, "scores": {"retrieval": 0.8}, "kept_by": "fastpass"}
    answer = "Install the client and sign in with SSO [src:kb:vpn#1]. " * 4
    steps = [{"hits": [hit], "evidence": []}, {"hits": [], "evidence": [evidence]},
             {"evidence": [evidence], "answer": answer}, {"evidence": [evidence]}]  # fmt: skip
    found: dict[str, str] = {}
    stowed = [stow(step, found) for step in steps]
    assert len(found) == 3  # the hit, the evidence, the answer: once each
    assert all(hit["snippet"] not in json.dumps(s) for s in stowed)
    assert [restore(s, found) for s in stowed] == steps
    assert steps[0]["hits"][0] is hit  # what was given is not changed


def test_a_passage_no_longer_stored_says_so() -> None:
    found: dict[str, str] = {}
    stowed = stow({"answer": "x" * 500}, found)
    assert restore(stowed, {}) == {"answer": "[passage no longer stored]"}


def test_packed_parts_come_back_as_they_were() -> None:
    versions = {"evidence": "0000000012", "branch:to:evaluate": "0000000013"}
    packed = pack(versions)
    assert isinstance(packed, str) and len(packed) < len(json.dumps(versions)) * 2
    assert unpack(packed) == versions
    assert unpack(versions) == versions  # a checkpoint written unpacked reads as it is


def test_channel_versions_stay_ordered_and_follow_the_base_savers() -> None:
    saver = FencedRedisSaver.__new__(FencedRedisSaver)
    base = BaseRedisSaver.get_next_version(saver, None, None)  # type: ignore[arg-type]
    ours = [saver.get_next_version(None, None)]
    for _ in range(120):
        ours.append(saver.get_next_version(ours[-1], None))
    assert ours == sorted(ours) and len(set(ours)) == len(ours)
    assert len(ours[0]) == 10
    assert saver.get_next_version(base, None) > base  # a thread written before continues


def test_prune_counts_a_key_as_a_threads_only_when_a_thread_made_it() -> None:
    from seekgraph.server.runs.retention import thread_of

    made = ["seekgraph:passages:{t1}", "seekgraph:events:{t1}:r1:native", "seekgraph:thread:t1",
            "seekgraph:run:{t1}:r1", "checkpoint:t1:__empty__:c1", "write_keys_zset:t1:ns:c1",
            "checkpoint_latest:t1:__empty__", "seekgraph:fence:t1"]  # fmt: skip
    shared = ["seekgraph:index:{scope}:minilm:chunk:1", "seekgraph:runq", "seekgraph:audit",
              "seekgraph:lock:t1", "seekgraph:live-runs:key", "seekgraph:apikeys"]  # fmt: skip
    assert {thread_of(k) for k in made} == {"t1"}
    assert [thread_of(k) for k in shared] == [None] * len(shared)
