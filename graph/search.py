"""The search graph and the search flow built around it.

``build_search_graph`` answers one question in a state of its own: prepare → expand →
search (fan-out) → filter → evaluate → read/answer. Compiled, it is a subgraph any flow can
use (the research flow sends it one sub-question at a time). ``build_search_flow`` is what
a person talks to: a thread that keeps its turns around that subgraph.
"""

from __future__ import annotations

import functools
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy

from seekgraph.graph.routing import (
    fan_out_expand_query,
    route_after_check_answer,
    route_after_evaluate,
)
from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services, bind
from seekgraph.nodes.search.check_answer import check_answer
from seekgraph.nodes.search.evaluate import evaluate
from seekgraph.nodes.search.expand_query import expand_query
from seekgraph.nodes.search.filter_results import filter_results
from seekgraph.nodes.search.integrate import integrate
from seekgraph.nodes.search.prepare import prepare
from seekgraph.nodes.search.read_documents import read_documents
from seekgraph.nodes.search.remember import remember
from seekgraph.nodes.search.review_evidence import review_evidence
from seekgraph.nodes.search.search_source import record_source_failure, search_source
from seekgraph.state.schemas import (
    AnswerState,
    InputState,
    OutputState,
    SearchInput,
    SearchState,
    ThreadState,
)

#: Seconds one source may take for one query before its branch fails (and is retried once).
SOURCE_TIMEOUT = 10.0


def _retryable(exc: Exception) -> bool:
    return (
        isinstance(exc, ConnectionError | TimeoutError) or type(exc).__name__ == "NodeTimeoutError"
    )


def add_search_source(
    builder: StateGraph[Any, Any, Any, Any],
    services: Services | None,
    source_timeout: float = SOURCE_TIMEOUT,
) -> None:
    """The ``search_source`` branch node: its timeout, one retry, its failure as data."""
    builder.add_node(
        "search_source",
        bind(search_source, services),
        retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.2, retry_on=_retryable),
        timeout=source_timeout,
        error_handler=record_source_failure,
    )


def build_search_graph(
    services: Services | None,
    *,
    read: bool = True,
    search_again: bool = True,
    review: bool = False,
    source_timeout: float = SOURCE_TIMEOUT,
    context_schema: type[Context] = Context,
) -> StateGraph[SearchState, Context, SearchInput, OutputState]:
    """The search of one question over ``services`` (compile it as you need).

    ``read=False`` leaves out reading whole documents; ``search_again=False`` answers after
    one round (and after a rejected answer too): ``evaluate`` and the routes know which
    steps exist. ``review=True`` always stops for a person before the answer (otherwise a
    run asks for it with ``Context.review_before_answer``). ``services=None`` builds a graph
    to draw, not to run. ``context_schema`` may be a subclass of ``Context`` with other
    defaults (Studio's).
    """
    actions = frozenset(
        {"answer"} | ({"read"} if read else set()) | ({"search"} if search_again else set())
    )
    builder = StateGraph(
        SearchState,
        context_schema=context_schema,
        input_schema=SearchInput,
        output_schema=OutputState,
    )
    builder.add_node("prepare", bind(prepare, services))
    builder.add_node("expand_query", bind(expand_query, services))
    add_search_source(builder, services, source_timeout)
    builder.add_node("filter_results", bind(filter_results, services))
    builder.add_node("evaluate", bind(evaluate, services, actions=actions))
    builder.add_node("review_evidence", bind(review_evidence, services))
    builder.add_node("integrate", bind(integrate, services))
    builder.add_node("check_answer", bind(check_answer, services))

    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "expand_query")
    builder.add_conditional_edges(
        "expand_query", fan_out_expand_query, ["search_source", "filter_results"]
    )
    builder.add_edge("search_source", "filter_results")
    builder.add_edge("filter_results", "evaluate")
    after_evaluate = ["integrate", "review_evidence"]
    if read:
        builder.add_node("read_documents", bind(read_documents, services))
        builder.add_edge("read_documents", "evaluate")
        after_evaluate.append("read_documents")
    if search_again:
        after_evaluate.append("expand_query")
    route = functools.partial(route_after_evaluate, always_review=review)
    builder.add_conditional_edges("evaluate", route, after_evaluate)
    builder.add_edge("review_evidence", "integrate")
    builder.add_edge("integrate", "check_answer")
    if search_again:
        builder.add_conditional_edges(
            "check_answer", route_after_check_answer, ["expand_query", END]
        )
    else:
        builder.add_edge("check_answer", END)
    return builder


def build_search_flow(
    search: Any, context_schema: type[Context] = Context
) -> StateGraph[ThreadState, Context, InputState, AnswerState]:
    """A thread around a compiled search graph: each question searched afresh, then kept.

    ``search`` is compiled without a checkpointer: it runs as this flow's subgraph, its
    steps checkpointed in the flow's thread (inspectable, resumable after a crash).
    """
    builder = StateGraph(
        ThreadState,
        context_schema=context_schema,
        input_schema=InputState,
        output_schema=AnswerState,
    )
    builder.add_node("search", search)
    builder.add_node("remember", remember)
    builder.add_edge(START, "search")
    builder.add_edge("search", "remember")
    builder.add_edge("remember", END)
    return builder


def search_flow(
    services: Services,
    checkpointer: Any = None,
    context_schema: type[Context] = Context,
    **steps: Any,
) -> Any:
    """The compiled search flow over ``services``: what the CLI, the server and Studio run."""
    search = build_search_graph(services, context_schema=context_schema, **steps).compile(
        name="search"
    )
    return build_search_flow(search, context_schema).compile(
        checkpointer=checkpointer, name="seekgraph-search"
    )


__all__ = [
    "SOURCE_TIMEOUT",
    "add_search_source",
    "build_search_flow",
    "build_search_graph",
    "search_flow",
]
