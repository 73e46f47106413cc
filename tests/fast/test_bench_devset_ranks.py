"""The retriever comparison finds the chunk stating a fact, and names facts no chunk holds."""

from __future__ import annotations

import json
from pathlib import Path

from bench.devset_ranks import corpus_ranks


def test_the_fact_chunk_is_ranked_per_retriever_and_split_facts_are_named(tmp_path: Path) -> None:
    folder = tmp_path / "devset_tiny"
    (folder / "corpus").mkdir(parents=True)
    (folder / "corpus" / "timeouts.md").write_text(
        "# Timeouts\n\nThe client gives up after 5 seconds of network inactivity.\n"
    )
    (folder / "corpus" / "pools.md").write_text(
        "# Connection pools\n\nAt most 100 connections are kept open per client.\n"
    )
    questions = [
        {
            "_id": "t",
            "half": "tune",
            "question": "How many seconds of network inactivity before the client gives up?",
            "doc": ["timeouts.md"],
            "must": ["5 seconds"],
        },
        {
            "_id": "split",
            "half": "tune",
            "question": "Timeouts and pools?",
            "doc": ["timeouts.md"],
            "must": ["5 seconds", "100 connections"],
        },
        {
            "_id": "other-half",
            "half": "report",
            "question": "How many connections?",
            "doc": ["pools.md"],
            "must": ["100 connections"],
        },
        {"_id": "near", "half": "tune", "question": "Does it retry?", "doc": [], "must": []},
    ]
    (folder / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in questions))

    out = corpus_ranks(folder, tmp_path / "work", "tune")

    assert out["questions"] == 1  # the report half and the near miss are not ranked
    assert out["fact_split_over_chunks"] == ["split"]
    for name, scores in out["retrievers"].items():
        assert scores["hit@6"] == 1.0, name  # two chunks: every retriever ranks it in the six
    assert out["retrievers"]["bm25"]["mrr"] == 1.0  # its words are the question's
