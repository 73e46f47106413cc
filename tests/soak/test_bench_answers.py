"""``bench.answers`` on pinned READMEs of packages: it judges answers the way a reader would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_answers_bench_passes_right_answers_and_fails_wrong_ones(tmp_path: Path) -> None:
    data = tmp_path / "set"
    data.mkdir()
    (data / "packages.txt").write_text("# corpus\npython-dotenv\norjson\n")
    questions = [
        {
            "_id": "right",
            "question": "What type does orjson.dumps return?",
            "kind": "what",
            "doc": "orjson",
            "must": ["bytes"],
        },
        {  # a string the README never says: this answer cannot pass
            "_id": "wrong",
            "question": "What type does orjson.dumps return?",
            "kind": "what",
            "doc": "orjson",
            "must": ["returns a frozenset of tuples"],
        },
        {
            "_id": "none",
            "question": "How do I encrypt secrets inside a .env file with python-dotenv?",
            "kind": "unanswerable",
            "doc": None,
            "must": [],
        },
    ]
    (data / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    out = tmp_path / "answers.json"
    answers = tmp_path / "all.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.answers", "--data", str(data), "--json", str(out)]
        + ["--answers", str(answers)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["failed"] == ["wrong"]
    assert result["unanswerable_honesty"] == 1.0
    assert result["junk_rate"] == 0.0
    assert result["documents"] == ["python-dotenv", "orjson"]
    every = {a["_id"]: a for a in json.loads(answers.read_text())}
    assert "[src:docs/orjson#" in every["right"]["answer"]
    assert every["none"]["status"] in ("passages", "not_found")
    assert out.with_suffix(".md").exists()
