"""Flows built from the same parts: the quick and reviewed examples, steps a builder leaves
out, and the search graph used as a subgraph by a parent flow."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from typing_extensions import TypedDict

from seekgraph.graph.context import Context, FilteringKnobs
from seekgraph.graph.flows import FLOWS
from seekgraph.graph.inspect import question_state
from seekgraph.graph.run import run, run_config
from seekgraph.graph.search import build_search_graph
from seekgraph.sources.indexes.memory import InMemorySource, MemoryDocument
from tests.conftest import make_services

HANDBOOK = MemoryDocument(
    "kb/oncall",
    "Handbook",
    "The on-call engineer carries the pager for one week.\n\n"
    "Handover happens every Monday at 09:00.",
    acl=["group:everyone"],
)
PAGER = "How long does the on-call engineer carry the pager and when does it rotate?"


def nodes_of(events: list[Any]) -> list[str]:
    return [e["node"] for e in events if e["event"] == "node"]


async def test_the_quick_flow_searches_once_and_answers(embedder) -> None:
    # The search flow reads the handbook whole here (test_reads_documents_then_answers).
    services = make_services(embedder, [InMemorySource("kb", "kb", [HANDBOOK])])
    graph = FLOWS["quick"].compile(services, InMemorySaver())
    ctx = Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False))
    result = await run(graph, {"question": PAGER}, run_config("q"), ctx)
    nodes = nodes_of(result.events)
    assert nodes.count("expand_query") == 1 and "read_documents" not in nodes
    assert nodes[-2:] == ["integrate", "check_answer"]
    # one round found the first passage only: the offline reader is not sure it answers
    # both parts, so it shows that passage whole, cited, and does not list the question's
    # own words as what is missing
    answer = result.values["answer"]
    assert result.values["status"] == "passages"
    assert "carries the pager for one week" in answer and "[src:kb/oncall#0]" in answer
    assert "Missing:" not in answer
    assert result.values["turns"][-1]["question"] == PAGER  # a thread, like the search flow
    again = await run(
        graph, {"question": "What does the on-call engineer carry?"}, run_config("q"), ctx
    )
    assert "[src:kb/oncall#0]" in again.values["answer"]
    assert len(again.values["turns"]) == 2


async def test_a_graph_without_reading_searches_again_instead(embedder) -> None:
    services = make_services(embedder, [InMemorySource("kb", "kb", [HANDBOOK])])
    graph = build_search_graph(services, read=False).compile(checkpointer=InMemorySaver())
    ctx = Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False), max_rounds=2)
    result = await run(graph, {"question": PAGER}, run_config("r"), ctx)
    first = next(e for e in result.events if e["event"] == "node" and e["node"] == "evaluate")
    assert first["detail"]["action"] == "search"
    assert "reads no documents whole" in first["detail"]["reason"]
    assert "read_documents" not in nodes_of(result.events)


async def test_the_reviewed_flow_waits_for_a_person_and_answers_from_what_they_kept(
    services,
) -> None:
    graph = FLOWS["reviewed"].compile(services, InMemorySaver())
    config = run_config("rev")
    question = "How do I connect to the VPN?"
    paused = await run(graph, {"question": question}, config, Context(user="bob"))
    assert paused.waiting and paused.events[-1]["event"] == "waiting"
    shown = paused.interrupts[0]["value"]["evidence"]
    assert "integrate" not in nodes_of(paused.events)
    dropped = "kb/vpn#0"
    assert dropped in {e["id"] for e in shown}
    done = await run(graph, Command(resume={"drop": [dropped]}), config, Context(user="bob"))
    assert done.events[-1]["event"] == "answer"
    assert dropped not in {c["id"] for c in done.values["citations"]}
    state = await question_state(graph, "rev")
    assert {e["kept_by"] for e in state["evidence"] if e["source_id"] == dropped} == {"none"}


class Report(TypedDict, total=False):
    question: str
    answer: str
    evidence: list[Any]
    sources_seen: list[str]


async def test_a_parent_flow_reuses_the_search_and_its_evidence(services) -> None:
    search = build_search_graph(services).compile(name="search")

    async def tally(state: Report) -> dict[str, Any]:
        kept = [e for e in state["evidence"] if e["kept_by"] != "none"]
        return {"sources_seen": sorted({e["source"] for e in kept})}

    builder: Any = StateGraph(Report, context_schema=Context)
    builder.add_node("search", search)
    builder.add_node("tally", tally)
    builder.add_edge(START, "search")
    builder.add_edge("search", "tally")
    builder.add_edge("tally", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    question = "What is the daily meal allowance when travelling?"
    result = await run(graph, {"question": question}, run_config("p"), Context(user="bob"))
    assert result.values["sources_seen"] == ["chat", "kb"]
    assert "$75" in result.values["answer"]
    # the search's own steps streamed through the parent
    assert {"prepare", "filter_results", "integrate"} <= set(nodes_of(result.events))
