"""The dev sets stay what their READMEs promise: a question's key fact is in the pages it
cites, both halves hold the same mix, and every set has its near misses.

A dev set whose ``must`` string is no longer in its cited page would score every run as a
miss; this catches an edited corpus or a mistyped fact before a benchmark is believed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

DATA = Path(__file__).parents[2] / "bench" / "data"
SETS = sorted(p for p in DATA.glob("devset_*") if (p / "questions.jsonl").exists())


def _squashed(text: str) -> str:
    return "".join(text.lower().split())


@pytest.mark.parametrize("folder", SETS, ids=[p.name for p in SETS])
def test_a_dev_set_cites_pages_that_state_its_facts_in_balanced_halves(folder: Path) -> None:
    lines = (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line) for line in lines if line.strip()]
    assert len({q["_id"] for q in questions}) == len(questions), "ids repeat"
    answerable = [q for q in questions if q["doc"]]
    near = [q for q in questions if not q["doc"]]
    assert len(answerable) >= 40 and len(near) >= 8
    halves = Counter(q["half"] for q in answerable)
    assert set(halves) == {"tune", "report"} and abs(halves["tune"] - halves["report"]) <= 1
    # each half has its near-misses; the tuning half may have more (written later, for tuning)
    near_halves = Counter(q["half"] for q in near)
    assert near_halves["report"] >= 6 and near_halves["tune"] >= near_halves["report"]
    for q in answerable:
        pages = [
            _squashed((folder / "corpus" / doc).read_text(encoding="utf-8")) for doc in q["doc"]
        ]
        for must in q["must"]:
            assert any(_squashed(must) in page for page in pages), (q["_id"], must)
    for q in near:
        assert q["must"] == [] and q.get("near"), q["_id"]
    assert (folder / "LICENSE").exists() and (folder / "README.md").exists()
