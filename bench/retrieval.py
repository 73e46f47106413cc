"""Ranked retrieval: BM25 alone, dense alone, hybrid, and the graph's extractive search path.

    python -m bench.retrieval --data ../shared/data/scifact --json bench/results/scifact.json

nDCG@10 and recall@100 per system, on any folder in the shared layout; ``--qrels`` picks the
judgments (default: ``qrels/test.tsv``, else the first ``qrels/*.tsv`` or ``qrels.tsv``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from bench.datasets import build_index, load
from bench.metrics import halves, ndcg_at_k, recall_at_k
from bench.report import command_line, write
from bench.runner import doc_ranking, install, stage_latency
from seekgraph.graph.context import SearchKnobs
from seekgraph.providers.embeddings import EMBEDDING_MODELS


def docs(index: Any, rows: list[tuple[int, float]]) -> list[str]:
    return list(dict.fromkeys(h["doc_id"] for h in index.chunk_hits(rows, "", 2)))


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    data = load(Path(args.data), Path(args.qrels) if args.qrels else None)
    questions = [q for q in data.questions if q["_id"] in data.qrels]
    if args.limit:
        questions = questions[: args.limit]
    index, source, index_seconds = build_index(data, args.embedding)
    runner = install(index, source, data)
    scores: dict[str, dict[str, list[float]]] = {}
    latency: dict[str, list[float]] = {}
    for q in questions:
        user = data.user_for(q)
        relevant = data.qrels[q["_id"]]
        ranked: dict[str, list[str]] = {}
        for mode in ("bm25", "dense", "hybrid"):
            started = time.perf_counter()
            rows = await asyncio.to_thread(
                index.search, source.name, q["question"], user, 100, mode
            )
            ranked[mode] = docs(index, rows)
            latency.setdefault(mode, []).append(time.perf_counter() - started)
        if not args.no_graph:
            values, seconds = await runner.run_graph(
                q["question"],
                user.name,
                max_rounds=args.rounds,
                search=SearchKnobs(search_k=args.search_k),
            )
            ranked["graph"] = doc_ranking(values.get("evidence", []), ranked["hybrid"])
            latency.setdefault("graph", []).append(seconds)
        for name, docs_ in ranked.items():
            s = scores.setdefault(name, {"ndcg@10": [], "recall@100": []})
            s["ndcg@10"].append(ndcg_at_k(docs_, relevant, 10))
            s["recall@100"].append(recall_at_k(docs_, set(relevant), 100))
    systems = {
        n: {m: round(statistics.fmean(v), 4) for m, v in s.items()} for n, s in scores.items()
    }
    base = systems["bm25"]["ndcg@10"]
    return {
        "queries": len(questions),
        "systems": systems,
        "relative_ndcg@10_vs_bm25": {
            n: round(s["ndcg@10"] / base - 1, 4) for n, s in systems.items() if base
        },
        # defaults are chosen on the first half of the queries and reported on the second
        "by_half": halves(scores),
        "graph_stage_latency_seconds": stage_latency(),
        "latency_seconds": {
            n: {
                "p50": round(statistics.median(v), 4),
                "p95": round(sorted(v)[int(0.95 * (len(v) - 1))], 4),
            }
            for n, v in latency.items()
        },
        "reranker": runner.services.reranker.name,
        "indexing": {
            "documents": len(data.corpus),
            "seconds": round(index_seconds, 1),
            "docs_per_second": round(len(data.corpus) / index_seconds, 1)
            if index_seconds > 1
            else None,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--qrels")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument(
        "--embedding", choices=EMBEDDING_MODELS, default="minilm", help="embedding model"
    )
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--search-k", type=int, default=20)
    parser.add_argument("--no-graph", action="store_true")
    args = parser.parse_args()
    started = time.time()
    result = asyncio.run(evaluate(args))
    write(
        args.json,
        {"command": command_line("bench.retrieval", args), "data": str(args.data), **result},
        started,
    )


if __name__ == "__main__":
    main()
