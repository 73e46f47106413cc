"""The LLM-mode bench on the dev sets: chosen as bench.devsets chooses, judged as it judges."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from bench.llm_mode import chosen, devset_judge, devset_rates, run
from seekgraph.nodes.reader.extractive import NOTHING_FOUND


def args(tmp_path: Path, **given: Any) -> argparse.Namespace:
    base = {"set": "devsets", "half": "report", "limit": 2, "resume": False, "summarize": True}
    return argparse.Namespace(**{**base, "log": tmp_path / "log.jsonl", **given})


def test_the_first_questions_of_each_half_are_asked_one_of_each_set_in_turn(
    tmp_path: Path,
) -> None:
    questions = chosen(args(tmp_path))
    # every dev set in bench/data, not a fixed list
    every = sorted(p.name for p in Path("bench/data").glob("devset_*"))
    assert len(every) >= 5
    assert [q["devset"] for q in questions] == every * 2
    assert [q["_id"] for q in questions[:2]] == ["app-state", "faq-opt-prefix-reason"]
    assert questions[len(every)]["_id"] == "auth-redirect"  # the api set's second report question
    assert all(q["half"] == "report" for q in questions)
    assert [q["_id"] for q in chosen(args(tmp_path, set="devset_faq", limit=1))] == [
        "faq-opt-prefix-reason"
    ]


def test_a_partial_answer_stating_the_fact_is_right_only_as_partial() -> None:
    q = {"_id": "app-state", "half": "report", "doc": ["applications.md"], "must": ["app.state"]}
    answer = "Keep it on `app.state` [src:docs/applications#0]."
    partial = devset_judge(q, {"answer": answer, "status": "partial"})
    assert partial["passed"] and partial["shown"] and not partial["right"]
    nothing = devset_judge(q, {"answer": NOTHING_FOUND, "status": "not_found", "evidence": []})
    assert not nothing["passed"] and nothing["lost"] == "missed"
    near = {"_id": "near", "half": "report", "doc": [], "must": []}
    answered = devset_judge(near, {"answer": "It is 5 [src:docs/x#0].", "status": "answered"})
    rows = [
        {**partial, "seconds": 3.0},
        {**nothing, "seconds": 1.0},
        {**answered, "seconds": 2.0},
    ]
    rates = devset_rates(rows)
    assert rates["shown"] == 0.5 and rates["answered_right"] == 0.0
    assert rates["answered_or_partial_right"] == 0.5
    assert rates["found_nothing"] == 0.5 and rates["unanswerable_answered"] == 1.0
    assert "p50_seconds" not in rates


def mode_record(answer: str, status: str, mode: str, **more: Any) -> dict[str, Any]:
    return {
        "passed": False,  # judged again from the answer
        "answerable": True,
        "refused": answer.startswith(NOTHING_FOUND),
        "mode": mode,
        "seconds": 1.0,
        "stages": {},
        "citations_valid": True,
        "bad_citation_rounds": 0,
        "unsupported": [],
        "calls": [],
        "degraded": [],
        "noted": [],
        "tokens": 0,
        "answer": answer,
        "status": status,
        "evidence": [{"doc_id": "docs/routing", "kept_by": "rerank"}],
        # the right document was found, and dropped by the rerank stage
        "filter_log": [{"cut": [{"id": "docs/applications#0"}]}],
        **more,
    }


def test_a_log_is_summarized_per_dev_set_without_a_model(tmp_path: Path) -> None:
    right = "Keep it on `app.state` [src:docs/applications#0]."
    degraded = ["integrate: the reply stated 7, which no passage it cites holds"]
    record = {
        "_id": "app-state",
        "devset": "devset_api",
        "llm": mode_record(right, "answered", "llm", degraded=degraded),
        "extractive": mode_record(NOTHING_FOUND, "not_found", "extractive"),
    }
    given = args(tmp_path, limit=1)
    given.log.write_text(json.dumps(record) + "\n")
    out = asyncio.run(run(given))
    api = out["per_corpus"]["devset_api"]
    assert api["questions_in_set"] == 1 and api["questions"] == 1
    assert api["llm"]["answered_right"] == 1.0 and api["llm"]["answers_degraded_by_integrate"] == 1
    assert api["extractive"]["found_nothing"] == 1.0
    assert api["extractive"]["lost"] == {"missed": 0, "cut": 1, "not shown": 0}
    assert api["head_to_head"]["llm_only"]["which"] == ["app-state"]
    assert out["per_corpus"]["devset_faq"] == {"questions_in_set": 1, "questions": 0}
    assert out["systems"]["devset_api llm"]["shown"] == 1.0
    assert set(out["systems"]) == {"devset_api llm", "devset_api extractive"}
