"""What a question asks for (typed needs), and when a quote in other words answers it."""

from __future__ import annotations

import pytest

from seekgraph.nodes.reader.answerable import not_answered
from seekgraph.nodes.reader.needs import REFUSAL, carries, need_kind, needs_of
from tests.factories import make_evidence

DOC = make_evidence("kb/travel#0", kind="kb", title="Travel policy")


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("What is the nightly cap for accommodation in most cities?", "amount"),
        ("How long before I get admin rights?", "amount"),
        ("What does a single unit cost?", "amount"),
        ("By when must the software reach the machines?", "time"),
        ("When does the old server get shut down?", "time"),
        ("Who has to sign off on a bigger price cut?", "person"),
        ("Whom do I alert when I fell for a suspicious email?", "person"),
        ("Where can I get a hot drink?", "place"),
        ("Which host name should my tunnel point at?", "place"),
        ("Why was the gateway moved?", "reason"),
        ("How do I hook a new tool into our login?", "steps"),
        ("Can I use orjson on PyPy?", "yesno"),
        ("What kind of object comes out of dumps?", "thing"),
        # a superlative of a difference asks for a comparison, not an amount
        ("What is the largest difference between orjson.dumps and json.dumps?", "comparison"),
        ("What is the oldest Python that HTTPX runs on?", "amount"),
        # a condition that opens the question does not set its type
        ("When a key has nothing after it, what does dotenv_values give back?", "thing"),
        # Chinese: the question's form, not its words
        ("报销需要在多少天内提交？", "amount"),
        ("旧网关什么时候关闭？", "time"),
        ("谁负责审批折扣？", "person"),
        ("咖啡在哪里？", "place"),
        ("为什么要换网关？", "reason"),
        ("orjson 和 json 有什么区别？", "comparison"),
        ("如何连接公司网络？", "steps"),
    ],
)
def test_a_need_is_typed_by_the_questions_form(question: str, kind: str) -> None:
    assert need_kind(question) == kind


def test_a_two_part_question_has_two_needs() -> None:
    needs = needs_of("How long is the on-call shift, and when does it rotate?")
    assert [n.kind for n in needs] == ["amount", "time"]


def test_what_carries_a_type() -> None:
    assert carries("amount", "The nightly limit is $180 in most cities.")
    assert not carries("amount", "Use urllib3 and HTTP/2 for hotels.")  # names, not amounts
    assert carries("time", "Submit claims within 30 days of your return.")
    assert carries("time", "The old gateway is switched off on 30 November.")
    assert not carries("time", "The licence is $3,600 per robot per year.")
    assert carries("person", "Larger discounts need the sales director.")
    assert not carries("person", "Fernhill uses WireGuard for remote access.")
    # a date says when, not how much: "How much does a VPN profile cost?" is not answered
    # by "goes live on 10 November"
    assert not carries("amount", "The new gateway goes live on 10 November 2026.")
    assert not carries("amount", "Minutes of 2026-11-05; next sync on December 3rd.")
    assert carries("amount", "Ship 3 robots by 15 December.")


def test_an_amount_of_money_is_carried_only_by_money() -> None:
    [cost] = needs_of("How much does a VPN profile cost?")
    assert not cost.carried_by("Profiles expire every 90 days.")
    assert cost.carried_by("A profile is $12 a month.") and cost.carried_by("Profiles are free.")
    [days] = needs_of("How many days is a VPN profile valid?")
    assert days.carried_by("Profiles expire every 90 days.")
    [slots] = needs_of("How many hash slots does a Redis cluster have?")
    assert not slots.carried_by("Register the field names once, then send only values.")
    # a word of money in a question asking how long: the answer is a span, not a sum
    [claims] = needs_of("How long do I have to ask for reimbursement after a business trip?")
    assert claims.carried_by("Submit expense claims within 30 days of your return.")
    [often] = needs_of("How often are VPN profiles rotated?")
    assert often.carried_by("Profiles are rotated monthly.")


HOTEL = "The nightly limit is $180 in most cities."
MEALS = "Hotels should be booked through the travel portal early."


def test_a_quote_in_other_words_answers_when_it_means_it_and_carries_the_type() -> None:
    question = "What is the nightly cap for accommodation in most cities?"
    # by words alone, "cap" and "accommodation" are missing
    gaps, nothing = not_answered(question, [(HOTEL, DOC)], [0.4], {})
    assert nothing and gaps == ["an amount (cap, accommodation)"]
    # the same quote, close in meaning and pulled by the asker's words: it answers
    assert not_answered(question, [(HOTEL, DOC)], [0.4], {}, [0.6], [True], 0.3) == ([], False)
    # as close in meaning, but with no amount in it: an amount question is not answered
    gaps, nothing = not_answered(question, [(MEALS, DOC)], [0.4], {}, [0.6], [True], 0.3)
    assert nothing and gaps[0].startswith("an amount")
    # close, but the asker's own words pull away from it: near only through shared words
    assert not_answered(question, [(HOTEL, DOC)], [0.4], {}, [0.6], [False], 0.3)[1]
    # or not close enough in meaning
    assert not_answered(question, [(HOTEL, DOC)], [0.4], {}, [0.2], [True], 0.3)[1]


def test_meaning_never_stands_in_for_a_name() -> None:
    question = "What is the nightly cap for accommodation in Zanzibar?"
    gaps, nothing = not_answered(question, [(HOTEL, DOC)], [0.4], {}, [0.9], [True], 0.3)
    assert nothing and "Zanzibar" in gaps[0]


@pytest.mark.parametrize(
    ("reply", "refuses"),
    [
        ("I could not find this in the sources.", True),
        ("The sources do not mention a parking allowance.", True),
        # Qwen 1.5B, asked which laptop IT hands out (no source says)
        (
            "Based on the information provided in the sources, there is no clear statement "
            "or recommendation regarding which laptop model IT hands out to new engineers.",
            True,
        ),
        ("The sources do not specify which laptop model is handed out.", True),
        ("The nightly limit is $180 in most cities [src:kb/travel#1].", False),
        ("No approval is needed up to 12% [src:docs/pricing#1].", False),
        ("You can spend $75 a day; this is not stated for London [src:chat/m2#0].", False),
    ],
)
def test_a_models_refusal_is_read_in_its_own_words(reply: str, refuses: bool) -> None:
    assert (REFUSAL.search(reply) is not None) is refuses
