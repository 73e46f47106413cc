"""Example flow "reviewed": a person reviews the evidence before the answer is written.

The run stops before ``integrate`` at ``review_evidence``, which calls ``interrupt()`` with
the passages found; the person resumes with ``Command(resume={"drop": [ids]})`` (the
LangGraph SDK's ``runs.stream(..., command={"resume": ...})``, or Studio), and the answer
is written from what they kept. Only the route after ``evaluate`` differs from the search graph.
"""

from __future__ import annotations

from typing import Any

from seekgraph.graph.search import build_search_flow, build_search_graph
from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services


def reviewed_flow(
    services: Services, checkpointer: Any = None, context_schema: Any = Context
) -> Any:
    """The reviewed flow as a thread (turns kept), compiled."""
    search = build_search_graph(services, review=True, context_schema=context_schema)
    return build_search_flow(search.compile(name="search"), context_schema).compile(
        checkpointer=checkpointer, name="seekgraph-reviewed"
    )
