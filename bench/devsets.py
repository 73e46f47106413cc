"""Questions in an asker's own words over public documentation nobody here wrote.

    python -m bench.devsets --half tune --json bench/results/devsets_tune.json
    python -m bench.devsets --half report --json bench/results/devsets_report.json

Each ``--data`` folder (default: every ``bench/data/devset_*``) holds ``corpus/`` (Markdown
pages, indexed as ``seekgraph index`` does, readable by everyone), ``questions.jsonl`` (its
README says the rule they were written by) and ``research.jsonl``. Every question runs through
the search graph in extractive mode. Per corpus and half:

- **shown**: the answer (any status) states every ``must`` string, cites one of ``doc`` and
  is under 1,500 characters (target ≥ 85 %);
- **answered right**: the same, with ``status: answered`` (target ≥ 50 %);
- **found nothing** on an answerable question: ``status: not_found`` (target ≤ 5 %);
- **unanswerable answered**: a near-miss with ``status: answered`` (target ≤ 10 %);
- p50 seconds, and where each answerable question not shown lost its passage: ``missed``
  (no passage of a ``doc`` among the candidates), ``cut`` (found, then dropped by a filter
  stage), ``not shown`` (kept, but not in the answer).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.answers import CITATION, normal
from bench.report import command_line, write
from bench.runner import GraphRunner, index_runner
from seekgraph.nodes.reader.extractive import NOTHING_FOUND
from seekgraph.providers.embeddings import load_embedder
from seekgraph.sources.base import User
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.ingestion.workspace import sync_source

SOURCE = "docs"
MAX_CHARS = 1500


def doc_ids(q: dict[str, Any]) -> set[str]:
    """The document ids a question's ``doc`` paths are indexed under."""
    return {f"{SOURCE}/{Path(d).with_suffix('').as_posix()}" for d in q["doc"] or []}


def judge(q: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """One question's outcome."""
    answer = str(values.get("answer", ""))
    # (a build before answers had a status: "found nothing" or an answer)
    status = values.get("status") or (
        "not_found" if answer.startswith(NOTHING_FOUND) else "answered"
    )
    cited = {c.split("#")[0] for c in CITATION.findall(answer)}
    gold = doc_ids(q)
    text = normal(answer)
    states = bool(q["must"]) and all(normal(m) in text for m in q["must"] or [])
    shown = bool(gold) and states and bool(cited & gold) and len(answer) < MAX_CHARS
    evidence = values.get("evidence", []) or []
    kept = [e for e in evidence if e["doc_id"] in gold and e.get("kept_by") != "none"]
    # a hit a filter stage dropped is not evidence: the round's filter log names it
    cut = [
        c
        for log in values.get("filter_log", []) or []
        for c in log.get("cut", [])
        if c["id"].split("#")[0] in gold
    ]
    lost = None
    if gold and not shown:
        lost = "not shown" if kept else "cut" if cut else "missed"
    return {
        "_id": q["_id"],
        "half": q["half"],
        "answerable": bool(gold),
        "status": status,
        "shown": shown,
        "right": shown and status == "answered",
        "chars": len(answer),
        "lost": lost,
        "style": q.get("style"),
        "needs_code": q.get("needs_code", False),
        "answer": answer,
    }


def rates(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The targets' numbers for a set of results."""
    answerable = [r for r in results if r["answerable"]]
    near = [r for r in results if not r["answerable"]]

    def share(rows: list[dict[str, Any]], key: str, value: Any = True) -> float | None:
        return round(sum(r[key] == value for r in rows) / len(rows), 3) if rows else None

    seconds = [r["seconds"] for r in results]
    return {
        "questions": len(results),
        "answerable": len(answerable),
        "unanswerable": len(near),
        "shown": share(answerable, "shown"),
        "answered_right": share(answerable, "right"),
        "found_nothing": share(answerable, "status", "not_found"),
        "unanswerable_answered": share(near, "status", "answered"),
        "p50_seconds": round(statistics.median(seconds), 2) if seconds else None,
        "lost": {
            k: sum(r["lost"] == k for r in answerable) for k in ("missed", "cut", "not shown")
        },
        "not_shown": [r["_id"] for r in answerable if not r["shown"]],
        "near_answered": [r["_id"] for r in near if r["status"] == "answered"],
    }


def build_index(folder: Path, workdir: Path, embedding: str) -> EmbeddedIndex:
    """A corpus folder indexed as ``seekgraph index`` does (cached in ``workdir``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    index = EmbeddedIndex(workdir / "index.sqlite", load_embedder(embedding))
    sync_source(index, folder / "corpus", SOURCE, "docs", ["group:everyone"])
    return index


def corpus_runner(folder: Path, workdir: Path, embedding: str) -> tuple[GraphRunner, User]:
    """The search graph over one dev set's corpus (indexed in ``workdir``), and its reader."""
    index = build_index(folder, workdir / folder.name, embedding)
    reader = User("bench", frozenset({"everyone"}))
    return index_runner(index, EmbeddedSource(index, SOURCE, "docs"), [reader]), reader


async def run_set(folder: Path, args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    """Every chosen question of one dev set, judged."""
    lines = (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(x) for x in lines if x.strip()]
    questions = [q for q in questions if args.half in (None, q["half"])][: args.limit]
    if args.only:
        questions = [q for q in questions if q["_id"] in args.only]
    runner, reader = corpus_runner(folder, workdir, args.embedding)
    results = []
    for q in questions:
        values, seconds = await runner.run_graph(q["question"], reader.name)
        results.append({**judge(q, values), "seconds": round(seconds, 2)})
    return results


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    folders = [Path(d) for d in args.data] or sorted(Path("bench/data").glob("devset_*"))
    out: dict[str, Any] = {}
    answers: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.cache) if args.cache else Path(tmp)
        for folder in folders:
            results = await run_set(folder, args, work)
            answers[folder.name] = results
            out[folder.name] = {
                half: rates([r for r in results if r["half"] == half])
                for half in ("tune", "report")
                if any(r["half"] == half for r in results)
            }
    if args.answers:
        args.answers.write_text(json.dumps(answers, indent=1, ensure_ascii=False) + "\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="*", default=[], help="dev set folders (default: all)")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--answers", type=Path, help="also write every answer here (JSON)")
    parser.add_argument("--half", choices=["tune", "report"], help="only this half")
    parser.add_argument("--limit", type=int, help="only the first N questions of each set")
    parser.add_argument("--only", nargs="*", help="only these question ids")
    parser.add_argument("--embedding", default="minilm")
    parser.add_argument("--cache", help="keep the indexes in this folder between runs")
    args = parser.parse_args()
    started = time.time()
    out = asyncio.run(evaluate(args))
    write(args.json, {"command": command_line("bench.devsets", args), **out}, started)


if __name__ == "__main__":
    main()
