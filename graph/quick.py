"""Example flow "quick": one round of search, then the answer (no reading, no re-search).

Wired by hand from the shared parts, as a team would: the same nodes as the search flow,
bound to the same services, fewer steps. ``evaluate`` is told that answering is the only
step left, so its verdict (coverage, what is missing) still reaches the answer.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from seekgraph.graph.routing import fan_out_expand_query
from seekgraph.graph.search import add_search_source, build_search_flow
from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services, bind
from seekgraph.nodes.search.check_answer import check_answer
from seekgraph.nodes.search.evaluate import evaluate
from seekgraph.nodes.search.expand_query import expand_query
from seekgraph.nodes.search.filter_results import filter_results
from seekgraph.nodes.search.integrate import integrate
from seekgraph.nodes.search.prepare import prepare
from seekgraph.state.schemas import OutputState, SearchInput, SearchState


def build_quick_graph(services: Services | None, context_schema: type[Context] = Context) -> Any:
    """Prepare → expand_query → search_source (fan-out) → filter → evaluate → answer."""
    b = StateGraph(
        SearchState,
        context_schema=context_schema,
        input_schema=SearchInput,
        output_schema=OutputState,
    )
    b.add_node("prepare", bind(prepare, services))
    b.add_node("expand_query", bind(expand_query, services))
    add_search_source(b, services)
    b.add_node("filter_results", bind(filter_results, services))
    b.add_node("evaluate", bind(evaluate, services, actions=frozenset({"answer"})))
    b.add_node("integrate", bind(integrate, services))
    b.add_node("check_answer", bind(check_answer, services))
    b.add_edge(START, "prepare")
    b.add_edge("prepare", "expand_query")
    b.add_conditional_edges(
        "expand_query", fan_out_expand_query, ["search_source", "filter_results"]
    )
    b.add_edge("search_source", "filter_results")
    b.add_edge("filter_results", "evaluate")
    b.add_edge("evaluate", "integrate")
    b.add_edge("integrate", "check_answer")
    b.add_edge("check_answer", END)
    return b


def quick_flow(services: Services, checkpointer: Any = None, context_schema: Any = Context) -> Any:
    """The quick flow as a thread (turns kept), compiled."""
    search = build_quick_graph(services, context_schema).compile(name="search")
    return build_search_flow(search, context_schema).compile(
        checkpointer=checkpointer, name="seekgraph-quick"
    )
