"""Run the search graph (extractive mode) over a benchmark question and rank what it found."""

from __future__ import annotations

import time
import uuid
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from bench.datasets import Dataset, reranker_embedder
from graph.context import Context
from graph.search import build_search_graph
from nodes.evidence import relevance
from nodes.services import Services, set_services
from providers.rerank import LocalReranker
from sources.embedded import EmbeddedIndex, EmbeddedSource
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
            reranker=LocalReranker(reranker_embedder(index)),
        )
    )


def doc_ranking(evidence: list[dict[str, Any]], fallback: list[str]) -> list[str]:
    """Documents in the order the graph trusts them: kept evidence first, then the rest."""
    kept = sorted((e for e in evidence if e["kept_by"] != "none"), key=relevance, reverse=True)
    ranked = list(dict.fromkeys(e["doc_id"] for e in kept))
    return ranked + [d for d in dict.fromkeys(fallback) if d not in ranked]


async def run_graph(question: str, user: str, **knobs: Any) -> tuple[dict[str, Any], float]:
    """The graph's final state for ``question`` (no checkpointer), and its wall time."""
    started = time.perf_counter()
    config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
    await GRAPH.ainvoke(
        {"question": question}, config, context=Context(user=user, mode="extractive", **knobs)
    )
    values = (await GRAPH.aget_state(config)).values
    await SAVER.adelete_thread(config["configurable"]["thread_id"])
    return values, time.perf_counter() - started
