"""Research reports on documentation: a request that names its parts, over each dev set.

    python -m bench.devset_research --json bench/results/devset_research.json

Each ``research.jsonl`` line of ``bench/data/devset_*`` is a request naming three parts, each
with the documents that hold its key passages. The research flow (extractive) writes the
report over the set's corpus; reported per request: the plan's and the report's section
headings, whether each part got a section of its own (``sections_per_part``), and evidence
recall — a part counts when one of its documents is cited in the report (``part_recall``) or
in the part's own section (``in_own_section``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from bench.devsets import SOURCE, build_index
from bench.report import command_line, write
from seekgraph.graph.context import Context
from seekgraph.graph.flows import FLOWS
from seekgraph.graph.run import run, run_config
from seekgraph.nodes.plumbing.services import Services
from seekgraph.providers.rerank import LocalReranker
from seekgraph.sources.base import User
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.indexes.index_vectors import reranker_embedder
from seekgraph.sources.registry import SourceRegistry

_REF = re.compile(r"\[(\d+)\]")


def sections_of(report: str) -> list[tuple[str, str]]:
    """(heading, body) of each ``## `` section of a report."""
    parts = re.split(r"^## (.+)$", report, flags=re.M)
    return [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def close(a: str, b: str) -> bool:
    """Two headings name the same part (words shared, case aside)."""
    wa, wb = set(re.findall(r"\w+", a.lower())), set(re.findall(r"\w+", b.lower()))
    return bool(wa and wb) and len(wa & wb) / min(len(wa), len(wb)) >= 0.5


async def run_set(folder: Path, work: Path, embedding: str) -> list[dict[str, Any]]:
    requests = [json.loads(x) for x in (folder / "research.jsonl").open() if x.strip()]
    index = build_index(folder, work / folder.name, embedding)
    reader = User("bench", frozenset({"everyone"}))
    services = Services(
        registry=SourceRegistry([EmbeddedSource(index, SOURCE, "docs")], users=[reader]),
        embedder=index.embedder,
        reranker=LocalReranker(reranker_embedder(index.embedder, index)),
    )
    graph = FLOWS["research"].compile(services, InMemorySaver())
    out = []
    for r in requests:
        started = time.perf_counter()
        done = await run(
            graph,
            {"question": r["request"]},
            run_config(uuid.uuid4().hex),
            Context(user=reader.name),
        )
        report = str(done.values.get("answer", ""))
        refs = {str(x["n"]): x["id"].split("#")[0] for x in done.values.get("references", [])}
        sections = sections_of(report)
        parts = []
        for part in r["parts"]:
            gold = {f"{SOURCE}/{Path(d).with_suffix('').as_posix()}" for d in part["docs"]}
            own = [body for title, body in sections if close(title, part["name"])]
            cited_own = {refs.get(n) for body in own for n in _REF.findall(body)}
            cited = {refs.get(n) for n in _REF.findall(report)}
            parts.append(
                {
                    "part": part["name"],
                    "section": bool(own),
                    "cited": bool(gold & cited),
                    "in_own_section": bool(gold & cited_own),
                }
            )
        out.append(
            {
                "_id": r["_id"],
                "set": folder.name,
                "headings": [t for t, _ in sections],
                "parts": parts,
                "sections_per_part": round(statistics.fmean(p["section"] for p in parts), 3),
                "part_recall": round(statistics.fmean(p["cited"] for p in parts), 3),
                "in_own_section": round(statistics.fmean(p["in_own_section"] for p in parts), 3),
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
    return out


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    folders = [Path(d) for d in args.data] or sorted(Path("bench/data").glob("devset_*"))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.cache) if args.cache else Path(tmp)
        for folder in folders:
            rows += await run_set(folder, work, args.embedding)
    keys = ("sections_per_part", "part_recall", "in_own_section")
    return {
        "all": {k: round(statistics.fmean(r[k] for r in rows), 3) for k in keys},
        "requests": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="*", default=[], help="dev set folders (default: all)")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--embedding", default="minilm")
    parser.add_argument("--cache", help="keep the indexes in this folder between runs")
    args = parser.parse_args()
    started = time.time()
    out = asyncio.run(evaluate(args))
    write(args.json, {"command": command_line("bench.devset_research", args), **out}, started)


if __name__ == "__main__":
    main()
