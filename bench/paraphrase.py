"""Questions in a person's own words: answered, honestly refused, nothing restricted shown.

    python -m bench.paraphrase --data bench/data/paraphrase --json bench/results/paraphrase.json

``--data DIR`` holds ``questions.jsonl`` (see its README: the rule the questions were written
by) and ``packages.txt``. ``corpus: demo`` questions run over the bundled demo workspace as
the CLI opens it, asked as their ``user``; ``corpus: readme`` ones over the READMEs of
``bench.answers``. Each runs through the search graph in extractive mode.

- **answered**: the answer states every ``must`` string and cites one of ``doc``;
- **refused**: for a question nothing the user may read answers, the answer says nothing was
  found and cites nothing;
- **restricted shown**: a marker of a document the user may not read appears anywhere in
  the run's final state (answer, evidence, variants — what a snapshot would show).

Reported for each half (``tune``, ``report``) and, with ``--compare OLD.json`` (an earlier
``--answers`` file), how many decisions moved (answered ↔ refused) on the same questions.
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

from bench.answers import CITATION, SOURCE, build, normal
from bench.report import command_line, write
from bench.runner import GraphRunner, index_runner
from seekgraph.nodes.reader.extractive import NOTHING_FOUND
from seekgraph.server.bootstrap import build_services
from seekgraph.server.settings import Settings
from seekgraph.sources.base import User
from seekgraph.sources.indexes.index_source import EmbeddedSource


def judge(q: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """One question's outcome."""
    answer = str(values.get("answer", ""))
    body = answer.split("\n\nMissing:")[0]
    cited = {c.split("#")[0] for c in CITATION.findall(body)}
    # not presented as an answer (the closest passages, or nothing found)
    refused = values.get("status", "not_found" if answer.startswith(NOTHING_FOUND) else "") in (
        "passages",
        "not_found",
    )
    seen = json.dumps(values, ensure_ascii=False, default=str).lower()
    shown = [m for m in q.get("restricted", []) if m.lower() in seen]
    if q["doc"] is None:
        passed = refused  # (the closest passages are cited; they are not an answer)
    else:
        docs = {d if q["corpus"] == "demo" else f"{SOURCE}/{d}" for d in q["doc"]}
        text = normal(body)
        passed = all(normal(m) in text for m in q["must"]) and bool(cited & docs)
    return {
        "_id": q["_id"],
        "half": q["half"],
        "corpus": q["corpus"],
        "answerable": q["doc"] is not None,
        "passed": passed,
        "refused": refused,
        "restricted_shown": shown,
        "answer": answer,
        "mode": values.get("mode"),
        "model_calls": [f"{c['node']}:{c['outcome']}" for c in values.get("model_calls", []) or []],
    }


def pass_rates(results: list[dict[str, Any]]) -> dict[str, float | None]:
    """Answerable questions answered, unanswerable ones refused (None: there are none)."""
    answerable = [r["passed"] for r in results if r["answerable"]]
    unanswerable = [r["passed"] for r in results if not r["answerable"]]
    return {
        "answered": round(statistics.fmean(answerable), 4) if answerable else None,
        "refused_unanswerable": round(statistics.fmean(unanswerable), 4) if unanswerable else None,
    }


def rates(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The targets' numbers for a set of results."""
    answerable = [r for r in results if r["answerable"]]
    return {
        "questions": len(results),
        **pass_rates(results),
        "answerable_refused": sum(r["refused"] for r in answerable),
        "restricted_shown": sum(bool(r["restricted_shown"]) for r in results),
        "failed": [r["_id"] for r in results if not r["passed"]],
    }


def demo_runner(workdir: Path) -> GraphRunner:
    """The bundled demo workspace, opened as the CLI opens it (its own index)."""
    services, _ = build_services(Settings(data_dir=workdir / "demo-data"))
    return GraphRunner(services)


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    data = Path(args.data)
    questions = [json.loads(line) for line in (data / "questions.jsonl").open() if line.strip()]
    questions = [q for q in questions if args.half in (None, q["half"])]
    questions = [q for q in questions if args.corpus in (None, q["corpus"])][: args.limit]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        demo = demo_runner(Path(tmp))
        index, _ = build(data, "minilm", Path(tmp))
        reader = User("bench", frozenset({"everyone"}))
        readmes = index_runner(index, EmbeddedSource(index, SOURCE, "docs"), [reader])
        for q in questions:
            started = time.perf_counter()
            if q["corpus"] == "demo":
                values, _ = await demo.run_graph(q["question"], q["user"], mode=args.mode)
            else:
                values, _ = await readmes.run_graph(q["question"], reader.name)
            results.append({**judge(q, values), "seconds": round(time.perf_counter() - started, 1)})
    out: dict[str, Any] = {
        "data": str(data),
        "all": rates(results),
        **{half: rates([r for r in results if r["half"] == half]) for half in ("tune", "report")},
        "by_corpus": {
            c: rates([r for r in results if r["corpus"] == c]) for c in ("demo", "readme")
        },
    }
    if args.compare:
        before = {r["_id"]: r for r in json.loads(args.compare.read_text())}
        moved = [
            (r["_id"], "refused→answered" if before[r["_id"]]["refused"] else "answered→refused")
            for r in results
            if r["_id"] in before and before[r["_id"]]["refused"] != r["refused"]
        ]
        out["moved"] = {"count": len(moved), "which": moved}
    if args.answers:
        args.answers.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="bench/data/paraphrase")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--answers", type=Path, help="also write every answer here (JSON)")
    parser.add_argument("--compare", type=Path, help="an earlier --answers file")
    parser.add_argument("--half", choices=["tune", "report"], help="only this half")
    parser.add_argument("--corpus", choices=["demo", "readme"], help="only this corpus")
    parser.add_argument("--limit", type=int, help="only the first N questions (after filters)")
    parser.add_argument(
        "--mode", default="extractive", choices=["extractive", "llm"],
        help="llm: the model of SEEKGRAPH_LLM_* answers the demo's questions",
    )  # fmt: skip
    args = parser.parse_args()
    started = time.time()
    out = asyncio.run(evaluate(args))
    write(args.json, {"command": command_line("bench.paraphrase", args), **out}, started)


if __name__ == "__main__":
    main()
