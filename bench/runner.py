"""Run the search graph (extractive mode) over a benchmark question and rank what it found."""

from __future__ import annotations

import time
import uuid
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from bench.datasets import Dataset
from graph.context import Context
from graph.search import build_search_graph
from nodes.evidence import relevance
from nodes.services import Services, set_services
from providers.rerank import LocalReranker
from sources.embedded import EmbeddedIndex, EmbeddedSource, reranker_embedder
from sources.registry import SourceRegistry

SAVER = InMemorySaver()
GRAPH = build_search_graph().compile(checkpointer=SAVER)


def install(index: EmbeddedIndex, source: EmbeddedSource, data: Dataset) -> None:
    """Services for benchmark runs: the dataset's index as the only source."""
    users = {data.user_for(q).name: data.user_for(q) for q in data.questions}
    registry = SourceRegistry([source], users=list(users.values()))
    set_services(
        Services(
            registry=registry,
            embedder=index.embedder,
            reranker=LocalReranker(reranker_embedder(index.embedder, index)),
        )
    )


def doc_ranking(evidence: list[dict[str, Any]], fallback: list[str]) -> list[str]:
    """Documents in the order the graph trusts them: kept evidence first, then the rest."""
    kept = sorted((e for e in evidence if e["kept_by"] != "none"), key=relevance, reverse=True)
    ranked = list(dict.fromkeys(e["doc_id"] for e in kept))
    return ranked + [d for d in dict.fromkeys(fallback) if d not in ranked]


#: Wall seconds per graph stage, across every ``run_graph`` call (see ``stage_latency``).
STAGES: dict[str, list[float]] = {}


async def run_graph(question: str, user: str, **knobs: Any) -> tuple[dict[str, Any], float]:
    """The graph's final state for ``question``, and its wall time.

    Each node's wall time (from the previous step's end to its own update; parallel search
    branches overlap, so ``search_source`` is the wait for the slowest) is added to
    ``STAGES``.
    """
    started = last = time.perf_counter()
    config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
    per_run: dict[str, float] = {}
    async for update in GRAPH.astream(
        {"question": question},
        config,
        context=Context(user=user, mode="extractive", **knobs),
        stream_mode="updates",
    ):
        now = time.perf_counter()
        for node in update:
            per_run[node] = per_run.get(node, 0.0) + now - last
        last = now
    for node, seconds in per_run.items():
        STAGES.setdefault(node, []).append(seconds)
    values = (await GRAPH.aget_state(config)).values
    await SAVER.adelete_thread(config["configurable"]["thread_id"])
    return values, time.perf_counter() - started


def stage_latency() -> dict[str, dict[str, float]]:
    """p50/p95 seconds each graph stage took per run, over the runs so far."""
    out = {}
    for node, seconds in sorted(STAGES.items()):
        ordered = sorted(seconds)
        out[node] = {
            "p50": round(ordered[len(ordered) // 2], 4),
            "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 4),
        }
    return out
