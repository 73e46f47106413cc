"""The research flow: a planned, reviewable report built from the search graph.

plan_research → review_plan (interrupt, when asked) → schedule ⟲ Send(research_one: the
search graph as a subgraph) per ready sub-question → write_report → check_report → END, or
once, while the budget lasts, plan_gaps (what the report could not find, asked again) →
schedule → … → check_report → END.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy

from seekgraph.graph.routing import after_check, after_review, next_batch
from seekgraph.graph.search import build_search_graph
from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services, bind
from seekgraph.nodes.research.check_report import check_report
from seekgraph.nodes.research.plan_gaps import plan_gaps
from seekgraph.nodes.research.plan_research import plan_research
from seekgraph.nodes.research.research_one import record_subquestion_failure, research_one
from seekgraph.nodes.research.review_plan import review_plan
from seekgraph.nodes.research.schedule import schedule
from seekgraph.nodes.research.write_report import write_report
from seekgraph.state.research import ReportState, ResearchInput, ResearchState


def build_research_graph(
    services: Services | None, search: Any, context_schema: type[Context] = Context
) -> StateGraph[ResearchState, Context, ResearchInput, ReportState]:
    """The research flow over ``services``.

    ``search`` is the compiled search graph each sub-question is sent to.
    """
    b = StateGraph(
        ResearchState,
        context_schema=context_schema,
        input_schema=ResearchInput,
        output_schema=ReportState,
    )
    b.add_node("plan_research", bind(plan_research, services))
    b.add_node("review_plan", review_plan)
    b.add_node("schedule", schedule)
    b.add_node(
        "research_one",
        bind(research_one, services, search=search),
        retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.5),
        error_handler=record_subquestion_failure,
    )
    b.add_node("write_report", bind(write_report, services))
    b.add_node("check_report", bind(check_report, services))
    b.add_node("plan_gaps", bind(plan_gaps, services))
    b.add_edge(START, "plan_research")
    b.add_edge("plan_research", "review_plan")
    b.add_conditional_edges("review_plan", after_review, ["plan_research", "schedule"])
    b.add_conditional_edges("schedule", next_batch, ["research_one", "write_report"])
    b.add_edge("research_one", "schedule")
    b.add_edge("write_report", "check_report")
    b.add_conditional_edges("check_report", after_check, ["plan_gaps", END])
    b.add_edge("plan_gaps", "schedule")
    return b


def research_flow(
    services: Services, checkpointer: Any = None, context_schema: type[Context] = Context
) -> Any:
    """The compiled research flow: what the CLI, the server and Studio run."""
    search = build_search_graph(services, context_schema=context_schema).compile(name="search")
    return build_research_graph(services, search, context_schema).compile(
        checkpointer=checkpointer, name="seekgraph-research"
    )
