"""The dev-set bench says where an answerable question lost its passage."""

from __future__ import annotations

from typing import Any

from bench.devsets import judge

QUESTION = {
    "_id": "timeout-default",
    "half": "tune",
    "question": "How long does it wait on a silent server?",
    "doc": ["timeouts.md"],
    "must": ["5 seconds"],
}


def ev(source_id: str, kept_by: str = "rerank") -> dict[str, Any]:
    return {"source_id": source_id, "doc_id": source_id.split("#")[0], "kept_by": kept_by}


def outcome(evidence: list[dict[str, Any]], cut: list[str], answer: str) -> dict[str, Any]:
    log = [{"round": 0, "cut": [{"id": i, "stage": "rerank", "scores": {}} for i in cut]}]
    return judge(
        QUESTION, {"answer": answer, "status": "passages", "evidence": evidence, "filter_log": log}
    )


def test_a_passage_lost_is_told_by_where_it_was_lost() -> None:
    other = "I could not confirm a direct answer; the closest passages are: … [src:docs/api#2]"
    # never among the candidates
    assert outcome([ev("docs/api#2")], [], other)["lost"] == "missed"
    # found by the search, dropped by a filter stage (named in the round's filter log)
    assert outcome([ev("docs/api#2")], ["docs/timeouts#1"], other)["lost"] == "cut"
    # kept, and still not in the answer
    kept = [ev("docs/api#2"), ev("docs/timeouts#1")]
    assert outcome(kept, [], other)["lost"] == "not shown"
    shown = "After 5 seconds of network inactivity [src:docs/timeouts#1]."
    answered = outcome(kept, [], shown)
    assert answered["shown"] and answered["lost"] is None
