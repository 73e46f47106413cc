"""Multi-hop and chat-history retrieval: one BM25 search versus the graph's search loop.

    python -m bench.multihop --data ../shared/data/musique_dev100 --json bench/results/musique.json

Folder layout as in ``../shared/data/README.md`` (``supporting_ids`` per question). Reports
recall@5/@10 and all-supporting@5/@10 of supporting documents for plain BM25 (one search of
the question) and for the graph in extractive mode (variants, rerank, reading whole documents,
entity bridging, gap questions). With ``category`` 5 questions (unanswerable by design, as in
LoCoMo) it reports how often the graph says it could not answer; with ``answers`` it reports
hit@1, the character F1 of the extractive answer (CMRC's metric), and answer containment: the
share of answers holding a gold answer string (SQuAD-normalised) beside the same share for
the top passage of the index's own hybrid search.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.datasets import build_index, load
from bench.metrics import (
    all_supporting_at_k,
    char_f1,
    contains_answer,
    halves,
    recall_at_k,
    strip_citations,
)
from bench.report import command_line, write
from bench.runner import doc_ranking, install, stage_latency
from seekgraph.graph.context import OfflineReaderKnobs, SearchKnobs
from seekgraph.nodes.reader.extractive import NOTHING_FOUND
from seekgraph.providers.embeddings import EMBEDDING_MODELS

KS = (5, 10)


def unanswerable_said(values: dict[str, Any]) -> bool:
    """The graph reported that its sources do not answer (rather than answering from noise)."""
    answer = values.get("answer", "")
    return answer.startswith(NOTHING_FOUND) or any(
        u.startswith(
            ("No source found mentions", "Nothing in your sources", "No message found says this")
        )
        for u in values.get("unanswered", [])
    )


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    data = load(Path(args.data))
    if args.limit:
        data.questions = data.questions[: args.limit]
    index, source, index_seconds = build_index(data, args.embedding)
    runner = install(index, source, data)
    per: dict[str, dict[str, list[float]]] = {"bm25": {}, "graph": {}}
    latency: dict[str, list[float]] = {"bm25": [], "graph": []}
    unanswerable = {"asked": 0, "graph_said_unanswerable": 0}
    false_unanswerable = 0
    answer_f1: list[float] = []
    # does the answer hold a gold answer string; does the hybrid search's top passage
    containment: dict[str, list[float]] = {"graph_answer": [], "hybrid_top_passage": []}
    # per conversation (chat sets): the tuning and report halves are read from these
    groups: dict[str, dict[str, list[float]]] = {}
    # per number of hops (MuSiQue's 2-, 3- and 4-hop questions), every system
    by_hops: dict[str, dict[str, dict[str, list[float]]]] = {}
    for q in data.questions:
        group = groups.setdefault(str(q.get("conversation", "all")), {})
        user = data.user_for(q)
        supporting = list(data.qrels.get(q["_id"], {})) or q.get("supporting_ids", [])
        started = time.perf_counter()
        rows = await asyncio.to_thread(index.search, source.name, q["question"], user, 10, "bm25")
        bm25 = list(dict.fromkeys(h["doc_id"] for h in index.chunk_hits(rows, "", 2)))
        latency["bm25"].append(time.perf_counter() - started)
        values, seconds = await runner.run_graph(
            q["question"],
            user.name,
            max_rounds=args.rounds,
            search=SearchKnobs(search_k=args.search_k),
            offline=OfflineReaderKnobs(bridge_rounds=args.bridge_rounds),
        )
        latency["graph"].append(seconds)
        hybrid = await source.search(q["question"], user, 10)
        graph = doc_ranking(values.get("evidence", []), [h["doc_id"] for h in hybrid])
        said = unanswerable_said(values)
        if q.get("category") == 5:
            unanswerable["asked"] += 1
            unanswerable["graph_said_unanswerable"] += int(said)
            group.setdefault("unanswerable_said", []).append(float(said))
            continue
        false_unanswerable += int(said)
        group.setdefault("said_unanswerable_on_answerable", []).append(float(said))
        group.setdefault("graph_recall@5", []).append(recall_at_k(graph, supporting, 5))
        hops = by_hops.setdefault(str(q.get("hops", "")), {"bm25": {}, "graph": {}})
        for name, ranked in (("bm25", bm25), ("graph", graph)):
            for table in (per[name], hops[name]):
                for k in KS:
                    table.setdefault(f"recall@{k}", []).append(recall_at_k(ranked, supporting, k))
                    table.setdefault(f"all_supporting@{k}", []).append(
                        all_supporting_at_k(ranked, supporting, k)
                    )
                hit = 1.0 if ranked[:1] and ranked[0] in supporting else 0.0
                table.setdefault("hit@1", []).append(hit)
        if q.get("answers"):
            body = strip_citations(values.get("answer", "").split("\n\nMissing:")[0])
            containment["graph_answer"].append(float(contains_answer(body, q["answers"])))
            top = hybrid[0]["snippet"] if hybrid else ""
            containment["hybrid_top_passage"].append(float(contains_answer(top, q["answers"])))
            lines = [ln for ln in values.get("answer", "").splitlines() if "[src:" in ln]
            answer_f1.append(char_f1(strip_citations(lines[0]) if lines else "", q["answers"]))
    summary = {
        name: {metric: round(statistics.fmean(v), 4) for metric, v in metrics.items()}
        for name, metrics in per.items()
    }
    answered = len(per["graph"].get("recall@5", []))
    result: dict[str, Any] = {
        "questions": len(data.questions),
        "answerable": answered,
        "systems": summary,
        "ratio_graph_to_bm25": {
            m: round(summary["graph"][m] / summary["bm25"][m], 3) if summary["bm25"][m] else None
            for m in summary["bm25"]
            if m in summary["graph"] and summary["bm25"][m] is not None
        },
        "graph_stage_latency_seconds": stage_latency(),
        "latency_seconds": {
            n: {
                "p50": round(statistics.median(v), 3),
                "p95": round(sorted(v)[int(0.95 * (len(v) - 1))], 3),
            }
            for n, v in latency.items()
            if v
        },
        "reranker": runner.services.reranker.name,
        "indexing": {"documents": len(data.corpus), "seconds": round(index_seconds, 1)},
        "graph_said_unanswerable_on_answerable": round(false_unanswerable / max(1, answered), 4),
    }
    # defaults are chosen on the first half of a set and reported on the second (in order)
    result["by_half"] = halves(per)
    if len(by_hops) > 1:
        result["by_hops"] = {
            f"{hops} hops": {
                name: {m: round(statistics.fmean(v), 4) for m, v in metrics.items()}
                for name, metrics in systems.items()
            }
            | {"questions": len(systems["graph"].get("recall@5", []))}
            for hops, systems in sorted(by_hops.items())
        }
    if unanswerable["asked"]:
        result["unanswerable"] = unanswerable | {
            "rate": round(unanswerable["graph_said_unanswerable"] / unanswerable["asked"], 4)
        }
    if len(groups) > 1:
        result["by_conversation"] = {
            name: {m: round(statistics.fmean(v), 4) for m, v in metrics.items()}
            | {"questions": sum(len(v) for k, v in metrics.items() if k != "graph_recall@5")}
            for name, metrics in sorted(groups.items())
        }
    if containment["graph_answer"]:
        result["answer_containment"] = {
            name: round(statistics.fmean(v), 4) for name, v in containment.items()
        } | {"questions": len(containment["graph_answer"])}
    if answer_f1:
        result["extractive_answer_char_f1"] = round(statistics.fmean(answer_f1), 4)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument(
        "--embedding", choices=EMBEDDING_MODELS, default="minilm", help="embedding model"
    )
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    parser.add_argument(
        "--rounds", type=int, default=5, help="search rounds at most (bridge rounds included)"
    )
    parser.add_argument("--search-k", type=int, default=10)
    # each bridge round follows the names the last one found: a 3-hop question needs two,
    # and a third found MuSiQue's tuning half 0.48 -> 0.52 all-supporting@10 (a fourth 0.50)
    parser.add_argument("--bridge-rounds", type=int, default=3)
    # tracemalloc traces every allocation: it made e5's timings about 6x what they are, so
    # the Python heap is measured only when asked for (and the seconds are then inflated)
    parser.add_argument("--heap", action="store_true", help="also the peak Python heap (slow)")
    args = parser.parse_args()
    started = time.time()
    if args.heap:
        tracemalloc.start()
    result = asyncio.run(evaluate(args))
    out = {"command": command_line("bench.multihop", args), "data": str(args.data), **result}
    # the process's peak resident memory (Linux: kilobytes), which costs nothing to read
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if args.heap:
        out["peak_python_heap_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    write(args.json, out, started)


if __name__ == "__main__":
    main()
