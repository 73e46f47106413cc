"""One engine, many graphs: services are given to a graph, and one admission rule holds."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models import GenericFakeChatModel

from seekgraph.graph.context import Context, FilteringKnobs
from seekgraph.nodes.plumbing.admission import AdmissionError, admit
from seekgraph.providers.rerank import LocalReranker, Reranked
from seekgraph.sources.indexes.memory import InMemorySource, MemoryDocument
from tests.conftest import kb_docs, make_services, run_graph, scripted_model


class NamedReranker:
    """The local reranker, reporting a name of its own per call (as Cohere's failover does)."""

    def __init__(self, inner: LocalReranker, served_by: str) -> None:
        self.inner, self.name, self.served_by = inner, "named", served_by

    async def rerank(self, query: str, passages: list[str]) -> list[float]:
        return await self.inner.rerank(query, passages)

    async def rerank_detailed(self, query: str, passages: list[str]) -> Reranked:
        return Reranked(await self.inner.rerank(query, passages), self.served_by)


async def test_two_graphs_with_other_workspaces_and_models_run_side_by_side(embedder) -> None:
    # Both workspaces name their source "kb": a graph finds its own by its services alone.
    office = InMemorySource("kb", "kb", kb_docs(), delay=0.02)
    garden_doc = MemoryDocument(
        "kb/greenhouse",
        "Greenhouse",
        "The greenhouse key hangs on the hook inside the potting shed.",
        acl=["group:everyone"],
    )
    garden = InMemorySource("kb", "kb", [garden_doc], delay=0.02)
    a = make_services(embedder, [office], chat_model=scripted_model())
    a.model_name = "model-a"
    a.reranker = NamedReranker(LocalReranker(embedder), "reranker-a")
    b = make_services(embedder, [garden])
    b.reranker = NamedReranker(LocalReranker(embedder), "reranker-b")
    ctx = Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False))
    run_a, run_b = await asyncio.gather(
        run_graph(a, "How do I install the VPN client?", ctx),
        run_graph(b, "Where does the greenhouse key hang?", ctx),
    )
    assert run_a.output["mode"] == "llm" and run_b.output["mode"] == "extractive"
    assert run_a.state.values["model"] == "model-a" and run_b.state.values["model"] is None
    assert len(run_a.state.values["model_calls"]) == 5  # every scripted reply went to graph a
    assert not run_b.state.values.get("model_calls")
    assert {c["doc_id"] for c in run_a.output["citations"]} <= {d.doc_id for d in kb_docs()}
    assert {c["doc_id"] for c in run_b.output["citations"]} == {"kb/greenhouse"}
    assert "potting shed" in run_b.output["answer"]
    assert "WireGuard" not in str(run_b.state.values) and "greenhouse" not in str(
        run_a.state.values
    )
    assert {log["reranker"] for log in run_a.state.values["filter_log"]} == {"reranker-a"}
    assert {log["reranker"] for log in run_b.state.values["filter_log"]} == {"reranker-b"}
    assert all("greenhouse" in q.lower() for _, q in garden.searches)
    assert not any("greenhouse" in q.lower() for _, q in office.searches)


async def test_a_node_registered_under_another_name_labels_its_events_with_it(services) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    from seekgraph.graph.run import run, run_config
    from seekgraph.nodes.plumbing.services import bind
    from seekgraph.nodes.search.prepare import prepare
    from seekgraph.state.schemas import InputState, OutputState, SearchState

    builder: Any = StateGraph(
        SearchState, context_schema=Context, input_schema=InputState, output_schema=OutputState
    )
    builder.add_node("check_input", bind(prepare, services))
    builder.add_edge(START, "check_input")
    builder.add_edge("check_input", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    result = await run(graph, {"question": "vpn?"}, run_config("t"), Context(user="bob"))
    assert [e["node"] for e in result.events if e["event"] == "node"] == ["check_input"]
    assert [e["node"] for e in result.events if e["event"] == "node_start"] == ["check_input"]


def vision_services(embedder: Any) -> Any:
    services = make_services(embedder, chat_model=GenericFakeChatModel(messages=iter([])))
    services.model_name = "text-model"
    services.vision_model = GenericFakeChatModel(messages=iter([]))
    services.vision_model_name = "vision-model"
    return services


def test_the_vision_model_may_be_asked_for_in_llm_mode(embedder) -> None:
    # The route used to accept it and the graph then refused it, after the lock was taken.
    services = vision_services(embedder)
    ctx = Context(user="bob", mode="llm", model="vision-model")
    assert admit(services, ctx, "vpn?", has_images=False).model == "vision-model"
    with pytest.raises(AdmissionError, match="'gpt-9' is not configured; configured: text-model"):
        admit(services, Context(user="bob", model="gpt-9"), "vpn?", has_images=False)
    with pytest.raises(AdmissionError, match="holds images and model 'text-model' cannot"):
        admit(services, Context(user="bob", model="text-model"), "vpn?", has_images=True)


async def test_the_question_limit_is_the_configured_one_in_the_graph_too(embedder) -> None:
    # SEEKGRAPH_MAX_QUESTION_CHARS above the old hard-coded 4000 reaches the graph.
    services = make_services(embedder)
    services.max_question_chars = 6000
    question = "How do I install the VPN client? " + "Please. " * 600
    assert 4000 < len(question.strip()) <= 6000
    run = await run_graph(services, question, Context(user="bob", max_rounds=1))
    assert "kb/vpn#0" in {c["id"] for c in run.output["citations"]}
    services.max_question_chars = 100
    with pytest.raises(AdmissionError, match="the limit is 100"):
        await run_graph(services, question, Context(user="bob"))
