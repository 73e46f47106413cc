"""Each node called directly, with fakes: in-memory sources and GenericFakeChatModel."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from seekgraph.graph.context import Context, FilteringKnobs, OfflineReaderKnobs, SearchKnobs
from seekgraph.nodes.plumbing.admission import AdmissionError
from seekgraph.nodes.plumbing.evidence import relevance
from seekgraph.nodes.reader.conflicts import facts
from seekgraph.nodes.reader.coverage import bridge_questions, names_in
from seekgraph.nodes.search.check_answer import check_answer
from seekgraph.nodes.search.evaluate import evaluate
from seekgraph.nodes.search.expand_query import expand_query
from seekgraph.nodes.search.filter_results import filter_results
from seekgraph.nodes.search.integrate import integrate
from seekgraph.nodes.search.prepare import prepare
from seekgraph.nodes.search.read_documents import read_documents
from seekgraph.nodes.search.search_source import search_source
from seekgraph.sources.registry import UnknownUserError
from seekgraph.state.reducers import merge_evidence
from tests.conftest import make_services
from tests.factories import make_evidence, make_hit, make_state


def rt(**ctx: Any) -> tuple[Runtime[Context], list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    ctx.setdefault("user", "bob")
    return Runtime(context=Context(**ctx), stream_writer=events.append), events


def hit(source_id: str, score: float, snippet: str, **over: Any) -> Any:
    return make_hit(source_id, score, snippet, **over)


def evidence(source_id: str, snippet: str, **over: Any) -> Any:
    return make_evidence(source_id, snippet, **over)


def base_state(question: str, **over: Any) -> Any:
    state = make_state(question, **over)
    state["budget"] = {**state["budget"], "rounds": 1}
    state.setdefault("answer_check", {"ok": False, "unknown_citations": [], "reason": ""})
    return state


async def test_prepare_refuses_empty_question_unknown_user_and_unknown_source(services) -> None:
    with pytest.raises(ValueError, match="question is empty"):
        await prepare({"question": "   "}, rt()[0], services)
    with pytest.raises(UnknownUserError):
        await prepare({"question": "vpn?"}, rt(user="mallory")[0], services)
    with pytest.raises(AdmissionError, match="known sources: chat, kb"):
        await prepare({"question": "vpn?"}, rt(sources=("wiki",))[0], services)


async def test_prepare_picks_the_mode(embedder) -> None:
    # (a question's state starts empty: test_second_question_in_a_thread_starts_fresh…)
    services = make_services(embedder)
    out = await prepare({"question": "vpn?"}, rt()[0], services)
    assert out["mode"] == "extractive" and out["sources"] == ["kb", "chat"]
    with pytest.raises(AdmissionError, match="needs a configured chat model"):
        await prepare({"question": "vpn?"}, rt(mode="llm")[0], services)
    model = GenericFakeChatModel(messages=iter([]))
    services = make_services(embedder, chat_model=model)
    assert (await prepare({"question": "vpn?"}, rt()[0], services))["mode"] == "llm"
    assert (await prepare({"question": "vpn?"}, rt(mode="extractive")[0], services))[
        "mode"
    ] == "extractive"


async def test_expand_query_puts_gaps_first_and_original_last(services) -> None:
    state = base_state(
        "What is the meal allowance and the Zanzibar parking rule?",
        tried_queries=["What is the meal allowance and the Zanzibar parking rule?"],
    )
    state["verdict"]["gap_questions"] = ["Zanzibar parking rule"]
    state["tried_queries"] = ["meal allowance Zanzibar parking"]
    out = await expand_query(state, rt()[0], services)
    assert out["variants"][0] == "Zanzibar parking rule"
    assert out["variants"][-1] == state["question"]
    assert out["budget"]["rounds"] == 2


async def test_expand_query_drops_variants_too_close_to_tried_ones(real_services) -> None:
    services = real_services  # what is found is the point: the real model
    state = base_state(
        "How do I connect to the VPN?", tried_queries=["How can I connect to the VPN?"]
    )
    state["verdict"]["gap_questions"] = ["how can i connect to the VPN"]
    runtime, events = rt()
    out = await expand_query(state, runtime, services)
    assert "How do I connect to the VPN?" not in out["variants"]
    assert events[0]["detail"]["dropped"]
    loose, _ = rt(search=SearchKnobs(variant_similarity_threshold=0.9999))
    assert (
        "How do I connect to the VPN?" in (await expand_query(state, loose, services))["variants"]
    )


async def test_expand_query_llm_mode_uses_the_model(embedder) -> None:
    model = GenericFakeChatModel(
        messages=iter([AIMessage(content='```json\n{"queries": ["VPN gateway host"]}\n```')])
    )
    services = make_services(embedder, chat_model=model)
    out = await expand_query(
        base_state("How do I connect to the VPN?", mode="llm"), rt()[0], services
    )
    assert out["variants"] == ["VPN gateway host", "How do I connect to the VPN?"]


async def test_search_source_applies_the_users_permissions(services) -> None:
    branch = {"query": "Nightjar console password", "source": "kb", "round": 1}
    bob = await search_source(branch, rt(user="bob")[0], services)
    alice = await search_source(branch, rt(user="alice")[0], services)
    assert "kb/secret" not in {h["doc_id"] for h in bob["hits"]}
    assert "kb/secret" in {h["doc_id"] for h in alice["hits"]}


async def test_filter_results_rerank_threshold_and_top_k(services) -> None:
    hits = [hit(f"kb/d{i}#0", 0.5, f"WireGuard VPN client install step {i}") for i in range(5)]
    hits.append(hit("kb/cafe#0", 0.5, "The cafeteria closes on Fridays."))
    state = base_state("How do I install the WireGuard VPN client?", hits=hits)
    out = await filter_results(state, rt(filtering=FilteringKnobs(rerank_top_k=3))[0], services)
    kept = out["evidence"]
    assert len(kept) == 3 and all(e["kept_by"] == "rerank" for e in kept)
    assert all(e["scores"]["rerank"] >= 0.3 for e in kept)
    assert out["hits"] == {"replace": []}
    assert out["filter_log"][-1]["dropped"] == 3
    # the log says which passages the stage dropped and with what scores: why a passage a
    # person expected is not in the answer
    cut = {c["id"]: c for c in out["filter_log"][-1]["cut"]}
    assert "kb/cafe#0" in cut and len(cut) == 3
    assert {c["stage"] for c in cut.values()} == {"rerank"}
    assert not set(cut) & {e["source_id"] for e in kept}
    assert cut["kb/cafe#0"]["scores"]["rerank"] < 0.3


async def test_filter_results_counts_the_sources_ranking_and_what_is_found_again(
    services,
) -> None:
    text = "Install the WireGuard VPN client from the IT portal."
    first = [hit("kb/a#0", 0.9, text), hit("kb/b#0", 0.2, text)]
    question = "How do I install the WireGuard VPN client?"
    out = await filter_results(base_state(question, hits=first), rt()[0], services)
    a, b = sorted(out["evidence"], key=lambda e: e["source_id"])
    assert a["scores"]["reranker"] == b["scores"]["reranker"]  # same text, same judgement
    assert a["scores"]["rerank"] > b["scores"]["rerank"]  # the source ranked a first
    alone = await filter_results(
        base_state(question, hits=first),
        rt(filtering=FilteringKnobs(retrieval_weight=0))[0],
        services,
    )
    assert len({e["scores"]["rerank"] for e in alone["evidence"]}) == 1

    # Round 2: a later query finds b again, as its best match: b now ranks with a.
    state = base_state(question, hits=[hit("kb/b#0", 0.9, text)], evidence=out["evidence"])
    state["budget"] = {**state["budget"], "rounds": 2}
    again = await filter_results(state, rt()[0], services)
    merged = {e["source_id"]: e for e in merge_evidence(out["evidence"], again["evidence"])}
    assert merged["kb/b#0"]["scores"]["rerank"] == merged["kb/a#0"]["scores"]["rerank"]
    assert merged["kb/b#0"]["kept_by"] == "rerank"


async def test_a_hit_is_judged_by_its_own_query_only_when_that_query_is_a_hop(services) -> None:
    question = "Why is the Kestrel release famous?"
    # a gap question of the question's missing word finds a passage about anything famous
    lone = hit("kb/lone#0", 0.6, "Famous cafes in the old town are open late.", query="famous")
    answer = hit(
        "kb/kestrel#0", 0.6, "The Kestrel release is known for its zero-downtime upgrades."
    )
    answer["query"] = question
    state = base_state(question, hits=[lone, answer])
    state["verdict"]["gap_questions"] = ["famous"]
    out = await filter_results(state, rt(filtering=FilteringKnobs(rerank_min_score=0))[0], services)
    scores = {e["source_id"]: e["scores"] for e in out["evidence"]}
    assert "rerank_query" not in scores["kb/lone#0"]  # a part of the question is not a hop
    assert scores["kb/kestrel#0"]["rerank"] > scores["kb/lone#0"]["rerank"]

    # a bridge question names what the question does not (the second hop): judged by it too
    hop = hit("kb/ada#0", 0.6, "Ada Moreau led the Kestrel team.", query="Ada Moreau famous")
    state = base_state(question, hits=[hop])
    state["verdict"]["gap_questions"] = ["Ada Moreau famous"]
    out = await filter_results(state, rt(filtering=FilteringKnobs(rerank_min_score=0))[0], services)
    assert "rerank_query" in out["evidence"][0]["scores"]


def test_reading_a_document_never_demotes_the_passage_that_led_to_it() -> None:
    # the search judged a's passage (its rerank counts the index's ranking too) above b's
    found = evidence("kb/a#0", "Zhang is famous for his films.", scores={"rerank": 0.83})
    other = evidence("kb/b#0", "Famous cafes.", scores={"rerank": 0.80})
    # reading a whole judges the same passage again without the index's ranking
    read = evidence(
        "kb/a#0", "Zhang is famous for his films.", kept_by="read", scores={"read": 0.77}
    )
    merged = merge_evidence([found, other], [read])
    ranked = sorted(merged, key=relevance, reverse=True)
    assert [e["source_id"] for e in ranked] == ["kb/a#0", "kb/b#0"]
    # a passage only reading found is judged by reading; a grade outranks both
    only_read = evidence("kb/a#1", "More.", kept_by="read", scores={"read": 0.6})
    graded = evidence("kb/c#0", "x", scores={"rerank": 0.9, "read": 0.95, "grade": 0.2})
    assert relevance(only_read) == 0.6 and relevance(graded) == 0.2


def test_a_bridge_search_joins_the_name_to_what_the_passage_left_unanswered() -> None:
    question = "Where was the director of Polish Wedding born?"
    wiki = evidence(
        "kb/pw#0", "Polish Wedding is a 1998 film by the director Theresa Connelly.", kind="docs"
    )
    wiki["title"] = "Polish Wedding"
    state = base_state(question)
    # the first hop answered who directed it: the next searches the director and "born"
    assert bridge_questions(state, [wiki])[0] == "Theresa Connelly born"
    # a chat remark is not a statement of what was asked: the name gets the whole question
    chat = evidence(
        "chat/m1#0", "Theresa Connelly, the director of Polish Wedding!", kind="messages"
    )
    chat["title"] = "#general"
    assert bridge_questions(state, [chat])[0] == "Theresa Connelly director Polish Wedding born"


def test_a_name_ends_with_its_sentence() -> None:
    text = (
        "Polish Wedding. Theresa Connelly directed it in Paris. The film stars J. K. Rowling "
        "and the Duke of York. Located in Lodz, the set was built by U.S. Army engineers."
    )
    # "Paris. The" is a place and the next sentence's first word, not one name; a title glued
    # to the passage's first name would hide that name behind the question's words
    assert names_in("Polish Wedding", text) == [
        "Polish Wedding",
        "Theresa Connelly",
        "Paris",
        "J. K. Rowling",
        "Duke of York",
        "Lodz",
        "U.S. Army",
    ]
    # a lone capitalised word opening a sentence ("Located") is no name; one that also
    # shows its capital mid-sentence is
    assert names_in("#general", "Lodz is old. We met in Lodz.") == ["Lodz"]


def test_the_next_bridge_follows_the_name_the_last_hop_found() -> None:
    question = "Which river flows through the birthplace of the director of Polish Wedding?"
    first = evidence(
        "kb/pw#0",
        "Polish Wedding is a 1998 film by the director Theresa Connelly, shot in Detroit.",
        kind="docs",
        scores={"rerank": 0.9},
        query=question,
    )
    first["title"] = "Polish Wedding"
    # the bridge search for the director found where she was born; the question's wording
    # ranks that passage below the first hop's
    second = evidence(
        "kb/tc#0",
        "Theresa Connelly was born in Lodz and studied film in Warsaw.",
        kind="docs",
        scores={"rerank": 0.4},
        query="Theresa Connelly river flows birthplace",
    )
    second["title"] = "Theresa Connelly"
    state = base_state(question)
    assert bridge_questions(state, [first, second])[0].startswith("Theresa Connelly")
    state["verdict"]["gap_questions"] = ["Theresa Connelly river flows birthplace"]
    # the chain goes on from what that hop found: Lodz, not the first hop's Detroit again
    assert bridge_questions(state, [first, second])[0].startswith("Lodz ")


def test_a_chat_bridge_follows_who_said_it_and_when() -> None:
    question = "When did Melanie run the charity race?"
    said = evidence("chat/m4#0", "Caroline: Yeah, the race was great!", kind="messages")
    said["title"] = "Caroline (1:56 pm on 8 July, 2023)"
    queries = bridge_questions(base_state(question), [said])
    # a message's speaker and month are searched with the whole question, as a document's
    # sentence-opening word ("Yeah") or a date would not be
    assert queries == [
        "Caroline Melanie run charity race",
        "July Melanie run charity race",
    ]
    as_doc = {**said, "kind": "docs"}
    assert bridge_questions(base_state(question), [as_doc]) == []


async def test_filter_results_llm_grading_in_batches(embedder) -> None:
    hits = [hit(f"kb/d{i}#0", 0.5, f"WireGuard VPN client install step {i}") for i in range(3)]
    replies = [
        AIMessage(
            content='{"grades": [{"id": "kb/d0#0", "score": 0.9}, {"id": "kb/d1#0", "score": 0.2}]}'
        ),
        AIMessage(content='{"grades": [{"id": "kb/d2#0", "score": 0.7}]}'),
    ]
    model = GenericFakeChatModel(messages=iter(replies))
    services = make_services(embedder, chat_model=model)
    state = base_state("How do I install the WireGuard VPN client?", hits=hits, mode="llm")
    out = await filter_results(
        state,
        rt(filtering=FilteringKnobs(grading_batch_size=2, fastpass_enabled=False))[0],
        services,
    )
    kept = {e["source_id"]: e for e in out["evidence"]}
    assert set(kept) == {"kb/d0#0", "kb/d2#0"}
    assert kept["kb/d0#0"]["scores"]["grade"] == 0.9 and "rerank" in kept["kb/d0#0"]["scores"]
    assert out["filter_log"][-1]["grade"] == 2


async def test_evaluate_by_coverage(services) -> None:
    q = "How do I install the WireGuard VPN client?"
    full = base_state(q, evidence=[evidence("kb/vpn#0", "Install the WireGuard VPN client.")])
    assert (await evaluate(full, rt()[0], services))["verdict"]["action"] == "answer"
    part = base_state(
        "WireGuard client and Zanzibar parking rules?",
        evidence=[evidence("kb/vpn#0", "Install the WireGuard client.")],
    )
    v = (await evaluate(part, rt()[0], services))["verdict"]
    assert v["action"] == "read" and v["read_doc_ids"] == ["kb/vpn"]
    part["documents_read"] = ["kb/vpn"]
    v = (await evaluate(part, rt()[0], services))["verdict"]
    assert v["action"] == "search" and v["gap_questions"] == ["Zanzibar parking rules"]


async def test_evaluate_searches_for_a_need_no_quote_gives_by_its_subject_and_type(
    services,
) -> None:
    # every word of the question is in the evidence, but no date: search for the date
    q = "By when must I have requested my VPN profile?"
    undated = evidence("kb/vpn#1", "Request a VPN profile in the IT portal.")
    state = base_state(q, evidence=[undated], documents_read=["kb/vpn"])
    v = (await evaluate(state, rt()[0], services))["verdict"]
    assert v["action"] == "search" and "no quote gives a date or time" in v["reason"]
    assert v["gap_questions"] == ["requested VPN profile date deadline until"]
    # searched for once already: the round that added nothing for it was the last
    state["tried_queries"] = v["gap_questions"]
    assert (await evaluate(state, rt()[0], services))["verdict"]["action"] == "answer"


async def test_evaluate_checks_once_that_no_newer_source_changes_the_amount_it_quotes(
    services,
) -> None:
    q = "What is the daily meal allowance while travelling?"
    policy = evidence("kb/travel#0", "While travelling the daily meal allowance is $50 per person.")
    state = base_state(q, evidence=[policy], documents_read=["kb/travel"])
    v = (await evaluate(state, rt()[0], services))["verdict"]
    assert v["action"] == "search" and "no newer source changes" in v["reason"]
    assert v["gap_questions"] == ["travelling daily meal allowance 50 person"]
    state["budget"] = {**state["budget"], "rounds": 2}  # the probe's round: answer now
    assert (await evaluate(state, rt()[0], services))["verdict"]["action"] == "answer"
    # off, or for a question that asks for no amount or date: no extra round
    off = await evaluate(
        base_state(q, evidence=[policy]),
        rt(offline=OfflineReaderKnobs(freshness_probe=False))[0],
        services,
    )
    assert off["verdict"]["action"] == "answer"
    steps = base_state("How do I claim the meal allowance?", evidence=[policy])
    assert (await evaluate(steps, rt()[0], services))["verdict"]["action"] != "search"


async def test_a_model_asking_to_read_a_document_read_already_searches_instead(embedder) -> None:
    # Qwen 1.5B asked to read the same document 22 times in a row, until the time was spent
    again = '{"action": "read", "reason": "more", "read_doc_ids": ["kb/vpn"], "gap_questions": []}'
    model = GenericFakeChatModel(messages=iter([AIMessage(content=again)] * 2))
    services = make_services(embedder, chat_model=model)
    q = "How do I hook a new tool into our company-wide login?"
    state = base_state(q, evidence=[evidence("kb/vpn#0", "Install the WireGuard client.")])
    state["mode"] = "llm"
    first = (await evaluate(state, rt()[0], services))["verdict"]
    assert first["action"] == "read" and first["read_doc_ids"] == ["kb/vpn"]
    state["documents_read"] = ["kb/vpn"]
    second = (await evaluate(state, rt()[0], services))["verdict"]
    assert second["action"] == "search" and second["read_doc_ids"] == []


async def test_evaluate_reads_the_newer_version_of_a_deprecated_document(services) -> None:
    old = evidence("kb/sso-old#0", "OneLogin SSO", deprecated=True, superseded_by="kb/sso-new")
    v = (await evaluate(base_state("SSO setup OneLogin", evidence=[old]), rt()[0], services))[
        "verdict"
    ]
    assert v["action"] == "read" and v["read_doc_ids"] == ["kb/sso-new"]


async def test_read_documents_is_permission_checked(services) -> None:
    state = base_state("Nightjar console password", evidence=[evidence("kb/secret#0", "x")])
    state["verdict"]["read_doc_ids"] = ["kb/secret"]
    bob = await read_documents(state, rt(user="bob")[0], services)
    assert bob["evidence"] == []
    alice = await read_documents(state, rt(user="alice")[0], services)
    assert [e["doc_id"] for e in alice["evidence"]] == ["kb/secret"]


async def test_integrate_without_evidence_says_so_and_cites_nothing(services) -> None:
    out = await integrate(base_state("Zanzibar parking?"), rt()[0], services)
    assert "found nothing" in out["answer"]
    assert "[src:" not in out["answer"]
    assert out["unanswered"]


def test_facts_compare_money_hosts_and_quantities() -> None:
    f = facts("The gateway vpn2.fernhill.example allows $75 for 90 days")
    assert f == {"money": {"$75"}, "host": {"vpn2.fernhill.example"}, "quantity": {"90days"}}


async def test_check_answer_rejects_unknown_citations(services) -> None:
    state = base_state(
        "vpn?",
        evidence=[evidence("kb/vpn#0", "Install WireGuard.")],
        answer="Install WireGuard [src:kb/vpn#0] as Carol said [src:chat/fake#1].",
    )
    out = await check_answer(state, rt()[0], services)
    assert out["answer_check"]["ok"] is False
    assert out["answer_check"]["unknown_citations"] == ["chat/fake#1"]
    assert "[src:chat/fake#1]" not in out["answer"]
    assert [c["id"] for c in out["citations"]] == ["kb/vpn#0"]
    assert "turns" not in out  # not final: budget left for another round


async def test_the_llm_is_told_today_and_which_source_a_dated_change_made_out_of_date(
    embedder,
) -> None:
    prompts: list[str] = []

    class Recording(GenericFakeChatModel):
        async def astream(self, request: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            prompts.append(str(request))
            async for chunk in super().astream(request, *args, **kwargs):
                yield chunk

    model = Recording(messages=iter([AIMessage(content="It is $75 [src:chat/fin#0].")]))
    state = base_state(
        "What is the daily meal allowance?",
        mode="llm",
        evidence=[
            evidence("kb/travel#0", "The daily meal allowance is $50.", updated_at="2026-01-15"),
            evidence(
                "chat/fin#0",
                "dana: from 1 November the daily meal allowance is $75, up from $50.",
                kind="messages",
                authority=1,
                updated_at="2026-11-03",
            ),
        ],
    )
    services = make_services(embedder, chat_model=model)
    await integrate(state, rt(mode="llm")[0], services)
    [prompt] = prompts
    assert "<today>2026-" in prompt  # the model can tell whether "from 1 November" has passed
    assert 'updated="2026-11-03"' in prompt and 'authority="' in prompt
    assert "out of date" in prompt  # the freshness rule and this conflict's resolution
    assert "effective 1 November 2026" in prompt
