"""The search graph: prepare → expand → search (fan-out) → filter → evaluate → read/answer."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy

from graph.routing import fan_out_expand_query, route_after_check_answer, route_after_evaluate
from nodes.check_answer import check_answer
from nodes.context import Context
from nodes.evaluate import evaluate
from nodes.expand_query import expand_query
from nodes.filter_results import filter_results
from nodes.integrate import integrate
from nodes.prepare import prepare
from nodes.read_documents import read_documents
from nodes.review_evidence import review_evidence
from nodes.search_source import record_source_failure, search_source
from nodes.services import Services, bind
from state.schemas import InputState, OutputState, SearchState

#: Seconds one source may take for one query before its branch fails (and is retried once).
SOURCE_TIMEOUT = 10.0


def _retryable(exc: Exception) -> bool:
    return (
        isinstance(exc, ConnectionError | TimeoutError) or type(exc).__name__ == "NodeTimeoutError"
    )


def build_search_graph(
    services: Services | None,
    source_timeout: float = SOURCE_TIMEOUT,
    context_schema: type[Context] = Context,
) -> StateGraph[SearchState, Context, InputState, OutputState]:
    """The search graph's builder over ``services`` (compile it with the checkpointer you need).

    ``services=None`` builds a graph to draw, not to run. ``context_schema`` may be a subclass
    of ``Context`` with other defaults (Studio's).
    """
    builder = StateGraph(
        SearchState,
        context_schema=context_schema,
        input_schema=InputState,
        output_schema=OutputState,
    )
    builder.add_node("prepare", bind(prepare, services))
    builder.add_node("expand_query", bind(expand_query, services))
    builder.add_node(
        "search_source",
        bind(search_source, services),
        retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.2, retry_on=_retryable),
        timeout=source_timeout,
        error_handler=record_source_failure,
    )
    builder.add_node("filter_results", bind(filter_results, services))
    builder.add_node("evaluate", bind(evaluate, services))
    builder.add_node("read_documents", bind(read_documents, services))
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
    builder.add_conditional_edges(
        "evaluate",
        route_after_evaluate,
        ["integrate", "review_evidence", "read_documents", "expand_query"],
    )
    builder.add_edge("review_evidence", "integrate")
    builder.add_edge("read_documents", "evaluate")
    builder.add_edge("integrate", "check_answer")
    builder.add_conditional_edges("check_answer", route_after_check_answer, ["expand_query", END])
    return builder


__all__ = ["build_search_graph"]
