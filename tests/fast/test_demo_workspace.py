"""The bundled demo workspace through the real embedded index: the questions it was made for."""

from __future__ import annotations

import json

import pytest

from seekgraph.graph.context import Context
from tests.conftest import run_graph
from tests.support import RESTRICTED_MARKERS


async def test_best_answer_combines_the_knowledge_base_with_a_chat_message(demo) -> None:
    run = await run_graph(
        demo, "How do I connect to the VPN from a new laptop?", Context(user="bob")
    )
    sources = {c["source"] for c in run.output["citations"]}
    assert {"kb", "chat"} <= sources
    assert "vpn2.fernhill.example" in run.output["answer"]
    assert "kb/vpn-access" in {c["doc_id"] for c in run.output["citations"]}


BOTH_USERS = pytest.mark.parametrize("user", ["alice", "bob"])


@BOTH_USERS
async def test_a_message_contradicting_the_knowledge_base_is_called_out(demo, user) -> None:
    run = await run_graph(
        demo, "What is the daily meal allowance when travelling?", Context(user=user)
    )
    [conflict] = run.output["conflicts"]
    ids = {c["id"] for c in conflict["claims"]}
    assert ids == {"kb/travel-expenses#0", "chat/finance-announcements/m002#0"}
    # the finance announcement's change took effect on 1 November: the article is out of date
    assert conflict["trust"] == "chat/finance-announcements/m002#0"
    assert "effective 1 November 2026" in conflict["reason"]
    assert "out of date" in conflict["reason"]
    answer = run.output["answer"]
    assert answer.index("$75") < answer.index("$50")  # the current fact first
    assert "(out of date) While travelling on company business" in answer
    assert "Sources disagree" not in answer  # the conflict is shown once, apart


@BOTH_USERS
async def test_the_vpn_answer_gives_the_new_gateway_first(demo, user) -> None:
    run = await run_graph(
        demo, "How do I connect to the VPN from a new laptop?", Context(user=user)
    )
    answer = run.output["answer"]
    assert answer.index("vpn2.fernhill.example") < answer.index("vpn.fernhill.example on UDP")
    assert "(out of date) The VPN gateway is vpn.fernhill.example" in answer
    assert any("out of date" in c["reason"] for c in run.output["conflicts"])


async def test_deprecated_sso_guide_gives_way_to_its_replacement(demo) -> None:
    run = await run_graph(demo, "How do I set up SSO for a new application?", Context(user="alice"))
    docs = {c["doc_id"] for c in run.output["citations"]}
    assert "kb/sso-setup-okta" in docs
    assert "kb/sso-setup-onelogin" not in docs
    assert any("OneLogin" in n and "deprecated" in n for n in run.output["notes"])


@BOTH_USERS
async def test_a_how_question_gets_the_steps_in_order(demo, user) -> None:
    run = await run_graph(demo, "How do I set up SSO for a new application?", Context(user=user))
    answer = run.output["answer"]
    steps = ["Okta app admin", "Create App Integration", "audience URI", "Preview SAML assertion"]
    at = [answer.index(step) for step in steps]  # every step is quoted, in the guide's order
    assert at == sorted(at)
    assert "1. Request the" in answer and "4. Test the sign-in" in answer
    # the steps come first, before the introduction and who to ask
    assert at[0] < answer.index("Post in #it-help")
    assert "[src:kb/sso-setup-okta#1]" in answer


async def test_a_question_no_visible_source_answers_is_not_answered(demo) -> None:
    # bob cannot see the engineering chat or roadmap where the freeze date is written: he
    # gets no answer (the closest passages he may read, or nothing), never the date
    run = await run_graph(demo, "When is the Pathfinder v2 freeze?", Context(user="bob"))
    out = run.output
    assert out["status"] in ("passages", "not_found")
    assert "1 December" not in out["answer"]
    assert not any(u.lower().startswith("no source found") for u in out["unanswered"])


async def test_the_freeze_date_is_found_by_alice_who_may_read_it(demo) -> None:
    run = await run_graph(demo, "When is the Pathfinder v2 freeze?", Context(user="alice"))
    assert "freeze on 1 December" in run.output["answer"]


async def test_restricted_documents_never_reach_a_user_without_access(demo) -> None:
    questions = [
        "What did the Project Nightjar penetration test find?",
        "Project Nightjar — penetration test findings",  # the restricted title, verbatim
        "What is the fleet console maintenance password?",
        "Where is the firmware signing key kept?",
    ]
    for question in questions:
        run = await run_graph(demo, question, Context(user="bob", max_rounds=2))
        seen = json.dumps(
            [
                run.output,
                run.events,
                [s.values for s in run.history],
                [s.metadata for s in run.history],
            ],
            default=str,
        )
        for marker in RESTRICTED_MARKERS:
            assert marker.lower() not in seen.lower(), (question, marker)
        assert not any(c["doc_id"].startswith("docs/security") for c in run.output["citations"])


async def test_the_same_question_reaches_the_restricted_documents_for_alice(demo) -> None:
    run = await run_graph(
        demo, "What did the Project Nightjar penetration test find?", Context(user="alice")
    )
    docs = {c["doc_id"] for c in run.output["citations"]}
    assert "docs/security/nightjar-pentest" in docs


async def test_a_follow_up_is_searched_with_the_threads_topic(demo) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    ctx = Context(user="alice")
    await run_graph(demo, "What did the Project Nightjar penetration test find?", ctx, "t", saver)
    run = await run_graph(demo, "When is the retest, and what was fixed already?", ctx, "t", saver)
    first = run.node_events("expand_query")[0]["detail"]["queries"]
    assert any("Nightjar" in q for q in first)  # the topic comes from the earlier turn
    kept = {e["source_id"] for e in run.state.values["evidence"] if e["kept_by"] != "none"}
    assert "chat/security/m006#0" in kept  # alice's own message: the password was rotated
