"""Questions in a person's own words over the bundled demo, through the real embedded index.

None of these questions uses the words of the sentence that answers it (or only a name).
"""

from __future__ import annotations

import dataclasses
import itertools
import json

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from seekgraph.graph.context import Context
from seekgraph.nodes.reader.extractive import NOTHING_FOUND
from tests.conftest import run_graph
from tests.support import RESTRICTED_MARKERS


@pytest.mark.parametrize(
    ("question", "fact", "doc"),
    [
        # an amount
        ("How much is the yearly charge for the fleet software on one robot?", "$3,600",
         "docs/sales/pricing-2026"),
        # who
        ("Who approves a larger discount?", "sales director", "docs/sales/pricing-2026"),
        # when
        ("When do my remote-access profiles run out?", "every 90 days", "kb/vpn-access"),
        # how soon
        ("How soon will I get admin rights for Okta apps?", "one business day",
         "kb/sso-setup-okta"),
        # steps
        ("What do I do if my laptop gets stolen?", "page the security on-call",
         "kb/incident-response"),
    ],
)  # fmt: skip
async def test_a_question_in_other_words_is_answered_from_the_right_passage(
    demo, question: str, fact: str, doc: str
) -> None:
    run = await run_graph(demo, question, Context(user="bob"))
    answer = run.output["answer"]
    assert not answer.startswith(NOTHING_FOUND), answer
    assert fact in answer.split("\n\nMissing:")[0]
    assert doc in {c["doc_id"] for c in run.output["citations"]}


async def test_a_question_nothing_answers_gets_the_closest_passages_not_an_answer(demo) -> None:
    run = await run_graph(demo, "How many vacation days do new hires get?", Context(user="bob"))
    out = run.output
    assert out["status"] == "passages" and out["answer"].startswith("I could not confirm")
    assert not any("vacation" in u for u in out["unanswered"])  # never the question's words


async def test_a_chat_message_answers_in_its_own_words_but_not_for_another_name(demo) -> None:
    # a message says "30 robots" for "machines" and "Closed the … deal" for "buy": its
    # words are not asked of it; a name is — the Brightline deal is no Kestrel deal
    run = await run_graph(demo, "How many machines did Brightline buy?", Context(user="bob"))
    assert "30 robots" in run.output["answer"].split("\n\nMissing:")[0]
    assert "chat/general/m008" in {c["doc_id"] for c in run.output["citations"]}
    other = await run_graph(
        demo, "How many robots did the Kestrel deal include?", Context(user="bob")
    )
    assert other.output["status"] == "passages"  # shown as a close passage, not the answer


async def test_sources_that_disagree_on_what_was_asked_are_the_answer_not_found_nothing(
    demo,
) -> None:
    question = "How much can I spend on meals per day while travelling for work?"
    run = await run_graph(demo, question, Context(user="bob"))
    answer = run.output["answer"]
    assert not answer.startswith(NOTHING_FOUND), answer
    assert answer.index("$75") < answer.index("$50")  # the current fact first
    assert run.output["conflicts"]


@pytest.mark.parametrize(
    "question",
    [
        "What can I claim for food per day away on company business?",
        "How much is covered for food on each day of a work journey?",
    ],
)
async def test_a_newer_message_in_other_words_than_the_question_makes_the_quote_stale(
    demo, question: str
) -> None:
    # the question's words pick the travel article's "$50" and not the finance channel's
    # announcement ("daily meal allowance … is $75 … up from $50"): the announcement restates
    # the quoted fact, so it is quoted first and the article's line is marked out of date
    # (it was quoted as current, or marked stale with the current amount nowhere)
    run = await run_graph(demo, question, Context(user="bob"))
    lines = run.output["answer"].split("\n\nMissing:")[0].splitlines()
    current = next(i for i, line in enumerate(lines) if "$75" in line)
    stale = next(i for i, line in enumerate(lines) if "$50 per person" in line)
    assert current < stale and lines[stale].startswith("- (out of date) ")
    assert "chat/finance-announcements/m002#0" in lines[current]


@pytest.mark.parametrize(
    ("question", "fact"),
    [
        ("Who may take the code-signing key out of its hardware module?", "platform lead"),
        ("When will the pen-test findings be looked at again?", "1 December"),
    ],
)
async def test_a_restricted_answer_in_other_words_only_for_who_may_read_it(
    demo, question: str, fact: str
) -> None:
    alice = await run_graph(demo, question, Context(user="alice"))  # in the security group
    assert fact in alice.output["answer"]
    bob = await run_graph(demo, question, Context(user="bob"))
    assert bob.output["status"] != "answered"
    seen = json.dumps([bob.output, bob.events], default=str)
    assert not [m for m in RESTRICTED_MARKERS if m in seen]
    assert fact not in seen


class Recording(GenericFakeChatModel):
    """A scripted model that keeps the prompts it was sent."""

    prompts: list[str] = []

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self.prompts.append(str(messages[-1].content))
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk


async def test_a_models_not_found_stands(demo) -> None:
    """The model decides: its "not found" is the answer even where quotes look close."""
    refusal = "I could not find this in the sources."
    model = Recording(messages=itertools.cycle([AIMessage(content=refusal)]), prompts=[])
    services = dataclasses.replace(demo, chat_model=model, model_name="scripted")
    question = "When do my remote-access profiles run out?"
    run = await run_graph(services, question, Context(user="bob", mode="llm"))
    assert run.output["status"] == "not_found" and run.output["answer"] == refusal
    [call] = [c for c in run.state.values["model_calls"] if c["node"] == "integrate"]
    assert call["outcome"] == "ok"
    # what the model was asked to judge and answer: the question's typed needs
    answering = [p for p in model.prompts if "<needs>" in p and "<sources>" in p]
    assert answering and f"- a date or time: {question}" in answering[0]


async def test_who_asks_for_an_overview_is_not_what_the_sources_must_mention(demo) -> None:
    """ "a new employee" frames the question; the travel and expense policy never says
    "employee" and is what a new employee needs to know about expenses."""
    question = "What should a new employee know about expenses?"
    run = await run_graph(demo, question, Context(user="bob"))
    answer = run.output["answer"]
    assert not answer.startswith(NOTHING_FOUND), answer
    assert "kb/travel-expenses" in {c["doc_id"] for c in run.output["citations"]}


async def test_a_report_quotes_the_current_fact_of_each_part_it_names(demo) -> None:
    # "…IT access: VPN, SSO, and expenses": the expenses part is no IT matter; its section
    # quotes the $75 announcement, the travel policy's $50 only as what it replaced
    from langgraph.checkpoint.memory import InMemorySaver

    from seekgraph.graph.flows import FLOWS
    from seekgraph.graph.run import run, run_config

    graph = FLOWS["research"].compile(demo, InMemorySaver())
    request = (
        "What does a new Fernhill employee need to know about IT access: VPN, SSO, and expenses?"
    )
    done = await run(graph, {"question": request}, run_config("it"), Context(user="bob"))
    plan = next(e for e in done.events if e["event"] == "node" and e["node"] == "plan_research")
    asked = [s["question"] for s in plan["detail"]["plan"][:3]]
    assert asked[2] == "What does a new Fernhill employee need to know about expenses"
    body = done.values["answer"].partition("## Sources disagree or are out of date")[0]
    expenses = body.partition("## Expenses")[2].partition("\n## ")[0]
    assert "$75 per person" in expenses, body
    assert "meal allowance is $50" not in body
    sso = body.partition("## SSO")[2].partition("\n## ")[0]
    assert "Every SSO integration now lives in Okta" not in body.partition("## SSO")[0]
    assert "Okta" in sso
