"""The dev-set bench says where an answerable question lost its passage, and how well a
signal of the offline reader tells a near miss from an answerable question."""

from __future__ import annotations

from typing import Any

from bench.devsets import judge
from bench.sure_signals import SIGNALS, auc, summary

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


def test_a_signal_that_does_not_tell_near_misses_apart_scores_a_half() -> None:
    assert auc([0.9, 0.8], [0.1, 0.2]) == 1.0 and auc([0.1], [0.9]) == 0.0
    assert auc([0.5, 0.5], [0.5]) == 0.5 and auc([], [0.1]) is None
    row = dict.fromkeys(SIGNALS, 0.0)
    rows = [
        {**row, "class": "right", "status": "answered", "pulled": 1.0, "agree": 1.0},
        {**row, "class": "near", "status": "passages", "pulled": 1.0},
        {**row, "class": "wrong", "status": "passages", "nothing": 1.0},
    ]
    out = summary(rows)
    assert out["questions"] == {"right": 1, "wrong": 1, "near": 1}
    assert out["signals"]["pulled"]["auc_right_vs_near"] == 0.5  # both pulled: no tell
    assert out["signals"]["agree"]["auc_right_vs_near"] == 1.0
    answered = [r for r in out["sure_rule"] if r["status"] == "answered"]
    assert answered == [
        {"status": "answered", "pulled": 1, "nothing": 0, "agree": 1, "class": "right", "n": 1}
    ]
