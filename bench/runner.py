"""Run the search graph (extractive mode) over a benchmark question and rank what it found."""

from __future__ import annotations

import time
import uuid
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from bench.datasets import Dataset
from seekgraph.graph.context import Context
from seekgraph.graph.run import RunResult, run_config, stream_run
from seekgraph.graph.search import build_search_graph
from seekgraph.nodes.plumbing.evidence import relevance
from seekgraph.nodes.plumbing.services import Services
from seekgraph.providers.rerank import LocalReranker
from seekgraph.server.bootstrap import configured_reranker
from seekgraph.server.settings import Settings
from seekgraph.sources.base import User
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.indexes.index_vectors import reranker_embedder
from seekgraph.sources.registry import SourceRegistry

#: Wall seconds per graph stage, across every ``run_graph`` call (see ``stage_latency``).
STAGES: dict[str, list[float]] = {}


class GraphRunner:
    """The search graph over one benchmark's services, run question by question."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.saver = InMemorySaver()
        self.graph = build_search_graph(services).compile(checkpointer=self.saver)
        self.last_stages: dict[str, float] = {}
        """The last run's wall seconds per node."""
        self.last_checks: list[dict[str, Any]] = []
        """The last run's ``answer_check`` of every round (a rejected one sent it searching)."""

    async def run_graph(
        self, question: str, user: str, **knobs: Any
    ) -> tuple[dict[str, Any], float]:
        """The graph's final state for ``question``, and its wall time.

        Each node's wall time (from the previous step's end to its own update; parallel
        search branches overlap, so ``search_source`` is the wait for the slowest) is added
        to ``STAGES``.
        """
        started = time.perf_counter()
        last = [started]
        per_run: dict[str, float] = {}

        def timed(mode: str, chunk: Any) -> None:
            if mode != "updates":
                return
            now = time.perf_counter()
            for node, update in chunk.items():
                per_run[node] = per_run.get(node, 0.0) + now - last[0]
                if isinstance(update, dict) and "answer_check" in update:
                    self.last_checks.append(update["answer_check"])
            last[0] = now

        self.last_checks = []
        thread = uuid.uuid4().hex
        result = RunResult()
        context = Context(**{"user": user, "mode": "extractive", **knobs})
        async for _ in stream_run(
            self.graph,
            {"question": question},
            run_config(thread),
            context,
            result,
            timed,
            starts=False,
        ):
            pass
        for node, seconds in per_run.items():
            STAGES.setdefault(node, []).append(seconds)
        self.last_stages = per_run
        await self.saver.adelete_thread(thread)
        return result.values, time.perf_counter() - started


def index_runner(index: EmbeddedIndex, source: EmbeddedSource, users: list[User]) -> GraphRunner:
    """A runner over one embedded index, reranked as the server would be configured.

    The local reranker (the index's own embedder) unless ``SEEKGRAPH_COHERE_API_KEY`` is
    set: then Cohere, or the Cohere-compatible server at ``SEEKGRAPH_COHERE_BASE_URL``.
    """
    local = LocalReranker(reranker_embedder(index.embedder, index))
    return GraphRunner(
        Services(
            registry=SourceRegistry([source], users=users),
            embedder=index.embedder,
            reranker=configured_reranker(Settings(), local),
        )
    )


def install(index: EmbeddedIndex, source: EmbeddedSource, data: Dataset) -> GraphRunner:
    """A runner for a dataset: its index as the only source, its users."""
    users = {data.user_for(q).name: data.user_for(q) for q in data.questions}
    return index_runner(index, source, list(users.values()))


def doc_ranking(evidence: list[dict[str, Any]], fallback: list[str]) -> list[str]:
    """Documents in the order the graph trusts them: kept evidence first, then the rest."""
    kept = sorted((e for e in evidence if e["kept_by"] != "none"), key=relevance, reverse=True)
    ranked = list(dict.fromkeys(e["doc_id"] for e in kept))
    return ranked + [d for d in dict.fromkeys(fallback) if d not in ranked]


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
