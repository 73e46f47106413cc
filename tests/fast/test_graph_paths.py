"""One test per path through the search graph, with in-memory sources and InMemorySaver."""

from __future__ import annotations

import asyncio

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from seekgraph.graph.context import BudgetKnobs, Context, FilteringKnobs, SearchKnobs
from seekgraph.sources.indexes.memory import InMemorySource, MemoryDocument
from tests.conftest import chat_docs, kb_docs, make_services, run_graph
from tests.factories import single_doc_source


async def test_answered_in_the_first_round(services) -> None:
    run = await run_graph(
        services, "How do I install the WireGuard VPN client?", Context(user="bob")
    )
    out = run.output
    assert out["mode"] == "extractive"
    assert run.nodes().count("expand_query") == 1
    assert "read_documents" not in run.nodes()
    assert "kb/vpn#0" in [c["id"] for c in out["citations"]]
    assert "[src:kb/vpn#0]" in out["answer"]
    assert out["answer"].startswith("Extractive answer")
    assert run.state.values["answer_check"]["ok"]
    assert run.state.tasks == ()


async def test_reads_documents_then_answers(embedder) -> None:
    handbook = MemoryDocument(
        "kb/oncall",
        "Handbook",
        "The on-call engineer carries the pager for one week.\n\n"
        "Handover happens every Monday at 09:00.",
        acl=["group:everyone"],
    )
    services = make_services(embedder, [InMemorySource("kb", "kb", [handbook])])
    run = await run_graph(
        services,
        "How long does the on-call engineer carry the pager and when does it rotate?",
        Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    nodes = run.nodes()
    assert "read_documents" in nodes
    assert nodes.index("read_documents") < nodes.index("integrate")
    assert run.node_events("evaluate")[0]["detail"]["action"] == "read"
    assert "kb/oncall" in run.state.values["documents_read"]
    assert any("read" in e["scores"] for e in run.state.values["evidence"])


async def test_searches_again_with_gap_questions_first(real_services) -> None:
    services = real_services  # what is found is the point: the real model
    run = await run_graph(
        services,
        "What is the meal allowance and the Zanzibar parking rule?",
        Context(user="bob", max_rounds=2),
    )
    expansions = run.node_events("expand_query")
    assert len(expansions) == 2
    second = expansions[1]["detail"]["queries"]
    assert second, "a second round must try new queries"
    assert "Zanzibar" in second[0], "the gap question comes first"
    # not sure the meal allowance answers a question about Zanzibar parking: the closest
    # passages, cited, and never the question's own words listed as what is missing
    assert run.output["status"] == "passages"
    assert not any("Zanzibar" in u for u in run.output["unanswered"])


async def test_budget_spent_forces_an_answer_that_names_what_is_missing(services) -> None:
    run = await run_graph(
        services,
        "What is the Zanzibar parking rule for meal allowance claims?",
        Context(user="bob", max_rounds=1),
    )
    out = run.output
    assert run.state.values["forced_reason"] == "all 1 search rounds used"
    assert "Stopped searching after 1 search." in out["unanswered"]
    assert out["status"] == "passages" and "Stopped searching" in out["answer"]
    # said apart: a search out of rounds is no part of the answer that is missing
    assert "Missing: Stopped searching" not in out["answer"]
    # Never an invented source: every citation is retrieved evidence.
    ids = {e["source_id"] for e in run.state.values["evidence"]}
    assert all(c["id"] in ids for c in out["citations"])


async def test_failing_source_is_named_and_the_others_answer(embedder) -> None:
    broken = InMemorySource("chat", "messages", chat_docs(), fail_with=ConnectionError("refused"))
    services = make_services(embedder, [InMemorySource("kb", "kb", kb_docs()), broken])
    run = await run_graph(
        services, "How do I install the WireGuard VPN client?", Context(user="bob")
    )
    out = run.output
    assert "kb/vpn#0" in [c["id"] for c in out["citations"]]
    assert any("“chat” was unavailable (ConnectionError)" in u for u in out["unanswered"])
    failures = run.state.values["source_failures"]
    assert {f["source"] for f in failures} == {"chat"}
    assert any(e.get("event") == "error" and "chat" in e["message"] for e in run.events)


async def test_source_timeout_is_retried_then_recorded(embedder) -> None:
    slow = InMemorySource("chat", "messages", chat_docs(), delay=5.0)
    services = make_services(embedder, [InMemorySource("kb", "kb", kb_docs()), slow])
    run = await asyncio.wait_for(
        run_graph(services, "How do I install the WireGuard VPN client?", Context(user="bob")), 30
    )
    failures = run.state.values["source_failures"]
    assert failures and all(f["error"] == "NodeTimeoutError" for f in failures)
    # one timeout, one retry, per query variant
    assert len(slow.searches) == 2 * len(run.state.values["tried_queries"])
    assert "[src:kb/vpn#0]" in run.output["answer"]


async def test_fastpass_keeps_few_strong_hits_and_skips_later_stages(embedder) -> None:
    only = single_doc_source()
    services = make_services(embedder, [only])
    run = await run_graph(
        services, "WireGuard VPN client", Context(user="bob", search=SearchKnobs(max_variants=1))
    )
    log = run.state.values["filter_log"][0]
    assert log["fastpass"] == 1 and "rerank" not in log
    ev = run.state.values["evidence"][0]
    assert ev["kept_by"] == "fastpass"
    assert set(ev["scores"]) == {"retrieval"}


async def test_fastpass_switched_off_uses_rerank(embedder) -> None:
    only = single_doc_source()
    services = make_services(embedder, [only])
    run = await run_graph(
        services,
        "WireGuard VPN client",
        Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    ev = run.state.values["evidence"][0]
    assert ev["kept_by"] == "rerank" and "rerank" in ev["scores"]


async def test_deprecated_guide_is_replaced_by_its_newer_version(services) -> None:
    run = await run_graph(
        services, "How do I add a SAML app for single sign-on in OneLogin?", Context(user="bob")
    )
    out = run.output
    cited_docs = {c["doc_id"] for c in out["citations"]}
    assert "kb/sso-new" in cited_docs
    assert "kb/sso-old" not in cited_docs
    assert any("deprecated; used its newer version" in n for n in out["notes"])


async def test_conflicting_message_is_called_out_with_which_to_trust(services) -> None:
    run = await run_graph(
        services, "What is the daily meal allowance when travelling?", Context(user="bob")
    )
    conflicts = run.output["conflicts"]
    assert len(conflicts) == 1
    ids = {c["id"] for c in conflicts[0]["claims"]}
    assert ids == {"kb/travel#0", "chat/m2#0"}
    # "From 1 November …" (written 3 November 2026) announces a change already in effect
    assert conflicts[0]["trust"] == "chat/m2#0"
    assert "out of date" in conflicts[0]["reason"]
    assert run.output["answer"].index("$75") < run.output["answer"].index("$50")


def llm(*replies: str) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage(content=r) for r in replies]))


async def test_llm_citation_to_unknown_id_is_rejected_and_retried(embedder) -> None:
    model = llm(
        '{"queries": ["WireGuard VPN client install"]}',
        '{"grades": [{"id": "kb/vpn#0", "score": 0.9}, {"id": "kb/vpn#1", "score": 0.8}]}',
        '{"action": "answer", "reason": "KB covers it", "read_doc_ids": [], "gap_questions": []}',
        "Install WireGuard from Self Service [src:kb/invented#9].",
        # second round
        '{"queries": ["WireGuard Self Service"]}',  # finds nothing new: no grading call
        '{"action": "answer", "reason": "enough", "read_doc_ids": [], "gap_questions": []}',
        "Install the WireGuard client from Self Service [src:kb/vpn#0].",
        '{"supported": true, "definitive": true, "problems": []}',
    )
    services = make_services(embedder, chat_model=model)
    run = await run_graph(
        services,
        "How do I install the VPN client?",
        Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    checks = run.node_events("check_answer")
    assert len(checks) == 2
    assert checks[0]["detail"]["unknown_citations"] == ["kb/invented#9"]
    assert checks[1]["detail"]["ok"] is True
    out = run.output
    assert out["mode"] == "llm"
    assert out["answer"] == "Install the WireGuard client from Self Service [src:kb/vpn#0]."
    assert [c["id"] for c in out["citations"]] == ["kb/vpn#0"]
    tokens = [e["text"] for e in run.events if e.get("event") == "token"]
    assert "".join(tokens).strip().endswith("[src:kb/vpn#0].")


async def test_unknown_citation_is_stripped_when_no_budget_is_left(embedder) -> None:
    model = llm(
        '{"queries": ["WireGuard VPN client install"]}',
        '{"grades": [{"id": "kb/vpn#0", "score": 0.9}]}',
        '{"action": "answer", "reason": "ok", "read_doc_ids": [], "gap_questions": []}',
        "Install WireGuard [src:kb/vpn#0] and ask Carol [src:made/up#1].",
    )
    services = make_services(embedder, chat_model=model)
    run = await run_graph(
        services,
        "How do I install the VPN client?",
        Context(user="bob", max_rounds=1, filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    out = run.output
    assert "[src:made/up#1]" not in out["answer"]
    assert [c["id"] for c in out["citations"]] == ["kb/vpn#0"]


async def test_an_answer_that_copies_its_instructions_becomes_the_sources_quotes(
    embedder,
) -> None:
    """Seen with a real 0.5B model: it wrote the prompt's rules back as its answer."""
    model = llm(
        '{"queries": ["WireGuard VPN client install"]}',
        '{"grades": [{"id": "kb/vpn#0", "score": 0.9}]}',
        '{"action": "answer", "reason": "ok", "read_doc_ids": [], "gap_questions": []}',
        "- Use only the sources. After every claim write its citation as [src:ID] with the "
        "source id.\n- Prefer the most authoritative, newest, non-deprecated source.",
    )
    services = make_services(embedder, chat_model=model)
    run = await run_graph(
        services,
        "How do I install the VPN client?",
        Context(user="bob", max_rounds=1, filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    out = run.output
    assert out["mode"] == "extractive" and "Use only the sources" not in out["answer"]
    assert "Install the WireGuard client from Self Service" in out["answer"]
    assert [c["id"] for c in out["citations"]] == ["kb/vpn#0"]
    [call] = [c for c in run.state.values["model_calls"] if c["node"] == "integrate"]
    assert call["outcome"] == "degraded" and "repeated its instructions" in call["detail"]


async def test_history_shows_every_node_and_survives_as_checkpoints(services) -> None:
    run = await run_graph(
        services, "How do I install the WireGuard VPN client?", Context(user="bob")
    )
    writers = set()
    for snap in run.history:
        writes = (snap.metadata or {}).get("writes") or {}
        writers |= set(writes) if isinstance(writes, dict) else set()
    steps = [s.next for s in run.history]
    flat = {n for step in steps for n in step}
    assert {
        "prepare",
        "expand_query",
        "search_source",
        "filter_results",
        "evaluate",
        "integrate",
        "check_answer",
    } <= flat


async def test_second_question_in_a_thread_starts_fresh_but_keeps_turns(real_services) -> None:
    services = real_services  # what is found is the point: the real model
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    await run_graph(
        services, "How do I install the WireGuard VPN client?", Context(user="bob"), "t1", saver
    )
    run = await run_graph(
        services, "What is the daily meal allowance?", Context(user="bob"), "t1", saver
    )
    values = run.state.values
    assert [t["question"] for t in values["turns"]] == [
        "How do I install the WireGuard VPN client?",
        "What is the daily meal allowance?",
    ]
    assert not any(e["doc_id"] == "kb/vpn" for e in values["evidence"])
    alone = await run_graph(services, "What is the daily meal allowance?", Context(user="bob"))
    assert values["budget"]["rounds"] == alone.state.values["budget"]["rounds"]


async def test_time_budget_forces_an_answer(services) -> None:
    run = await run_graph(
        services,
        "What is the Zanzibar parking rule for meal allowance claims?",
        Context(user="bob", budget=BudgetKnobs(max_seconds=0.0)),
    )
    assert run.state.values["forced_reason"].startswith("time budget spent")
    assert run.nodes().count("expand_query") == 1
    assert run.output["answer"]


async def test_token_budget_stops_an_llm_run(embedder) -> None:
    model = llm(
        '{"queries": ["WireGuard VPN client install and every other detail you can find"]}',
        '{"grades": [{"id": "kb/vpn#0", "score": 0.9}]}',
        "Install the WireGuard client from Self Service [src:kb/vpn#0].",
        '{"supported": true, "definitive": true, "problems": []}',
    )
    services = make_services(embedder, chat_model=model)
    run = await run_graph(
        services,
        "How do I install the VPN client, and what is the Zanzibar parking rule?",
        Context(
            user="bob",
            budget=BudgetKnobs(max_tokens=10),
            filtering=FilteringKnobs(fastpass_enabled=False),
        ),
    )
    values = run.state.values
    assert values["forced_reason"].startswith("token budget spent")
    assert run.nodes().count("expand_query") == 1
    # No model call after the budget ran out: the answer is extractive and says why.
    assert values["mode"] == "extractive"
    assert any("token budget spent" in u for u in values["unanswered"])
    assert "[src:kb/vpn#0]" in values["answer"]


async def test_budget_and_evidence_survive_a_resume_from_the_checkpoint(services) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from seekgraph.graph.search import build_search_graph

    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "resume"}}
    ctx = Context(user="bob", max_rounds=2)
    question = "What is the meal allowance and the Zanzibar parking rule?"
    stopped = build_search_graph(services).compile(checkpointer=saver, interrupt_after=["evaluate"])
    await stopped.ainvoke({"question": question}, config, context=ctx)
    paused = await stopped.aget_state(config)
    assert paused.next  # interrupted with work left
    budget = paused.values["budget"]
    evidence = [e["source_id"] for e in paused.values["evidence"]]
    assert budget["rounds"] == 1 and evidence

    # A new graph object (as after a restart) continues from the checkpoint.
    resumed = build_search_graph(services).compile(checkpointer=saver)
    await resumed.ainvoke(None, config, context=ctx)
    final = await resumed.aget_state(config)
    assert final.tasks == ()
    assert final.values["budget"]["started_at"] == budget["started_at"]
    assert final.values["budget"]["rounds"] == 2  # counted on from 1, not reset
    assert set(evidence) <= {e["source_id"] for e in final.values["evidence"]}
    assert final.values["forced_reason"] == "all 2 search rounds used"


async def test_two_code_examples_with_different_hosts_are_no_disagreement(embedder) -> None:
    # each page's example calls a host of its own: examples, not facts the pages dispute
    docs = [
        MemoryDocument(f"docs/{name}", title, text, acl=["group:everyone"])
        for name, title, text in [
            ("quickstart", "Quickstart", "To send a GET request with a timeout of five "
             "seconds:\n```python\nr = requests.get('https://api.github.com/events', "
             "timeout=5)\n```"),
            ("advanced", "Advanced usage", "Send a GET request with a timeout like this:\n"
             "```python\nr = requests.get('https://www.httpbin.org/get', timeout=5)\n```"),
        ]
    ]  # fmt: skip
    services = make_services(embedder, [InMemorySource("docs", "docs", docs)])
    run = await run_graph(services, "How do I send a GET request with a timeout?",
                          Context(user="bob"))  # fmt: skip
    assert run.output["conflicts"] == []
    assert "Sources disagree" not in run.output["answer"]
    assert "timeout=5" in run.output["answer"]
