"""How close a generated plan's sub-questions are: where "the same topic twice" begins.

    python -m bench.plan_duplicates --data ../shared/data/locomo_reports \
        --json bench/results/plan_duplicates.json

For each report task, the extractive plan's topic sub-questions are generated without
merging; every pair's embedding cosine is recorded, with how many pairs each candidate
threshold would merge and the closest pairs' texts, so the threshold
(``nodes.reader.report_plan.DUPLICATE_COSINE``) is chosen by reading what it merges.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

import seekgraph.nodes.reader.report_plan as planning
from bench.report import command_line, write
from bench.research import report_services, report_tasks
from seekgraph.graph.context import Context, SearchKnobs
from seekgraph.providers.embeddings import aembed_queries

THRESHOLDS = (0.8, 0.85, 0.9, 0.95)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    folder = Path(args.data)
    tasks = report_tasks(folder)
    data, _, _, services = report_services(folder, tasks, args.embedding)
    planning.DUPLICATE_COSINE = 1.01  # nothing merged: every topic's question is kept
    cosines: list[float] = []
    pairs: list[tuple[float, str, str]] = []
    questions_per_task = []
    for task in tasks:
        ctx = Context(
            user=data.user_for(task).name, mode="extractive", search=SearchKnobs(search_k=20)
        )
        plan, _, _, _ = await planning.extractive_plan(task["request"], ctx, services)
        questions = [s["question"] for s in plan]
        questions_per_task.append(len(questions))
        vectors = np.asarray(await aembed_queries(services.embedder, questions))
        for i in range(len(questions)):
            for j in range(i + 1, len(questions)):
                cos = float(vectors[i] @ vectors[j])
                cosines.append(cos)
                pairs.append((round(cos, 3), questions[i], questions[j]))
    pairs.sort(reverse=True)
    return {
        "tasks": len(tasks),
        "sub_questions_per_plan": statistics.fmean(questions_per_task),
        "pairs": len(cosines),
        "cosine_median": round(statistics.median(cosines), 3),
        "cosine_p95": round(float(np.percentile(cosines, 95)), 3),
        "merged_pairs_at": {str(t): sum(c >= t for c in cosines) for t in THRESHOLDS},
        "closest_pairs": [list(p) for p in pairs[:20]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--embedding", default="minilm")
    args = parser.parse_args()
    started = time.time()
    result = asyncio.run(measure(args))
    write(args.json, {"command": command_line("bench.plan_duplicates", args), **result}, started)


if __name__ == "__main__":
    main()
