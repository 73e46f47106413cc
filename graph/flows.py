"""The flows seekgraph serves, by name: the CLI, the server's doors and Studio list them here.

A flow is a compiled graph over the shared services; a team adds one by writing its builder
(see ``graph/quick.py``) and a line below. Every flow is a thread that keeps its turns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seekgraph.graph.quick import quick_flow
from seekgraph.graph.research import research_flow
from seekgraph.graph.reviewed import reviewed_flow
from seekgraph.graph.search import search_flow
from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services


@dataclass(frozen=True)
class Flow:
    """A named flow and how to build it."""

    name: str
    description: str
    build: Callable[..., Any]
    """``build(services, checkpointer=None, context_schema=Context)`` → a compiled graph."""

    @property
    def graph_name(self) -> str:
        """The compiled graph's name (the OpenAI door's model, LangGraph's graph id)."""
        return f"seekgraph-{self.name}"

    def compile(
        self, services: Services, checkpointer: Any = None, context_schema: type[Context] = Context
    ) -> Any:
        """The flow over ``services``, checkpointed by ``checkpointer``."""
        return self.build(services, checkpointer, context_schema)


FLOWS: dict[str, Flow] = {
    flow.name: flow
    for flow in (
        Flow(
            "search",
            "answers with provable citations, searching and reading until enough",
            search_flow,
        ),
        Flow(
            "quick", "one round of search, then the answer (no reading, no re-search)", quick_flow
        ),
        Flow(
            "reviewed", "a person reviews the evidence before the answer is written", reviewed_flow
        ),
        Flow(
            "research",
            "a report: planned as a DAG of sub-questions, each searched, every sentence cited",
            research_flow,
        ),
    )
}
DEFAULT_FLOW = "search"


def flow_named(name: str) -> Flow:
    """The flow called ``name`` (``ValueError`` naming the known ones otherwise)."""
    if name not in FLOWS:
        raise ValueError(f"unknown flow {name!r}; flows: {', '.join(FLOWS)}")
    return FLOWS[name]
