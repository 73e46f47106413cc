"""What a question asks for — its information needs, typed — and whether a sentence carries one.

A person asks "Who has to sign off on a bigger price cut?" in their own words; the passage
says "larger discounts need the sales director". No word is shared, but the question's
*form* says what an answer must carry (a person or a role) and the sentence's *meaning*
(embedding similarity, ``providers.rerank.meaning_beyond_subject``) says whether it is about the
thing asked. The search loop and the extractive answer decide on both; shared words are one
more signal, not the gate.

Types come from the question's form in English and Chinese (interrogatives and the nouns
that ask for a quantity or a date), never from a workspace's vocabulary:

- ``amount`` — how many / how much / how long / what is the price, fee, limit…; 多少, 几;
- ``time`` — when, by when, what date or day; 什么时候, 何时;
- ``person`` — who, whom, which team or role; 谁;
- ``place`` — where, which host, server, folder or city; 哪里, 在哪;
- ``reason`` — why; 为什么;
- ``steps`` — how do I…; 如何, 怎么;
- ``yesno`` — is / can / does / will…; 吗, 是否;
- ``comparison`` — the difference between, compared with, A vs B; 区别, 比较 ("the largest
  difference between …" is a comparison, not an amount);
- ``thing`` — anything else (what, which): any sentence about it may answer.

A two-part question ("…, and what is …") has one need per part.

The wording each type is read from is data: the ``[patterns]`` tables of
``providers/language/en.toml`` and ``zh.toml`` (``amount_question``, ``time_said``, ``refusal``…;
the Chinese entry is the English one's alternative), with the word lists they name. What is no
language — digits, currency signs, capitalised names, paths, version numbers — stays here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from seekgraph.providers.language import alternation, compiled, pattern, words
from seekgraph.providers.terms import term_set

#: What each type of need is called when the answer says it is missing.
NEED_NAMES = {
    "amount": "an amount",
    "time": "a date or time",
    "person": "a person or role",
    "place": "a place",
    "reason": "a reason",
    "steps": "the steps",
    "yesno": "a yes or no",
    "comparison": "a comparison",
    "thing": "an answer",
}

#: What a question asks for, by its form: the ``*_question`` patterns of the language tables.
_AMOUNT = compiled("amount_question", "en", "zh", flags=re.I)
_TIME = compiled("time_question", "en", "zh", flags=re.I)
_PERSON = compiled("person_question", "en", "zh", flags=re.I)
_PLACE = compiled("place_question", "en", "zh", flags=re.I)
_COMPARISON = compiled("comparison_question", "en", "zh", flags=re.I)
_REASON = compiled("reason_question", "en", "zh", flags=re.I)
_STEPS = compiled("steps_question", "en", "zh", flags=re.I)
_YESNO = compiled("yesno_question", "en", "zh", flags=re.I)

_NUMBER_WORDS = alternation(words("amount_words") | words("frequency_words"))
CARRIES: dict[str, re.Pattern[str]] = {
    "amount": re.compile(
        rf"(?<![A-Za-z/_.-])\d|[$€£¥%]|\b(?:{_NUMBER_WORDS})\b|{pattern('numeral', 'zh')}",
        re.I,
    ),
    # a date, a day, a time of day, or a span counted in time units ("within 30 days")
    "time": compiled("time_said", "en", "zh", flags=re.I),
    # a name (two capitalised words, "Dana Smith"), a chat handle, a speaker, or a role
    "person": re.compile(
        r"\b[A-Z][a-z]+\s+[A-Z][a-z]+\b|@\w|^\s*\w+:\s|"
        rf"\b(?i:{alternation(words('roles'))})s?\b|{alternation(words('roles', 'zh'))}",
    ),
    "place": re.compile(
        rf"(?<=[\w,;:]\s)[A-Z][a-z]+|{pattern('place_said')}|[\w-]+\.[a-z]{{2,}}\b|/[\w.-]+|"
        rf"`[^`]+`|{pattern('place_said', 'zh')}",
    ),
    "reason": re.compile(
        rf"\b(?:{alternation(words('reason_words'))})\b|{alternation(words('reason_words', 'zh'))}",
        re.I,
    ),
}


#: Where a question asks a second thing: "How do I install it, and what is the rule?"
_PARTS = re.compile(rf"\?\s+|{pattern('question_join')}", re.I)


def question_parts(question: str) -> list[str]:
    """The separate things a question asks (one part for most questions)."""
    return [p for p in _PARTS.split(question) if term_set(p)] or [question]


#: A version ("Redis 8.10", "v2", "version 3") is a name, not an amount…
_VERSION = re.compile(r"\b(?:[A-Z][\w-]*|v|version)\s*\d+(?:\.\d+)+\+?|\bv\d+\b", re.I)
#: …unless the question asks for one ("What is the oldest Python that HTTPX runs on?").
_ASKS_VERSION = compiled("version_question", flags=re.I)


#: An amount of money is asked for ("How much does it cost?")…
_ASKS_MONEY = compiled("money_question", "en", "zh", flags=re.I)
#: …unless it asks how long, how soon or how many: "How long do I have to ask for
#: reimbursement?" is answered by "within 30 days", not by money.
_ASKS_COUNT = compiled("count_question", "en", "zh", flags=re.I)
#: …and only money answers it (a currency, or free).
_MONEY = re.compile(
    rf"[$€£¥₹]|\b(?:{alternation(words('money_words'))})\b|"
    rf"{alternation(words('money_words', 'zh'))}",
    re.I,
)

#: How often is asked ("How often…", "How many times…"); only then is "once" or "daily" a
#: count.
_ASKS_FREQUENCY = compiled("frequency_question", "en", "zh", flags=re.I)
_FREQUENCY = re.compile(rf"\b(?:{alternation(words('frequency_words'))})\b", re.I)


@dataclass(frozen=True)
class Need:
    """One thing the question asks: its words (a part of the question) and its type."""

    part: str
    kind: str

    @property
    def name(self) -> str:
        """How the answer names it when it is missing: "an amount (nightly cap …)"."""
        asked = self.part.strip().rstrip("?？").strip()
        return f"{NEED_NAMES[self.kind]} ({asked})" if asked else NEED_NAMES[self.kind]

    def carried_by(self, sentence: str) -> bool:
        """Whether ``sentence`` holds what this need asks for (``carries`` its type).

        A version is a name, not an amount or a time, unless the need asks for a version;
        an amount of money ("How much does a VPN profile cost?") is not carried by "every 90
        days", nor a count ("How many hash slots…?") by "once".
        """
        if not _ASKS_VERSION.search(self.part):
            sentence = _VERSION.sub(" ", sentence)
        if (
            self.kind == "amount"
            and _ASKS_MONEY.search(self.part)
            and not _ASKS_COUNT.search(self.part)
        ):
            return _MONEY.search(sentence) is not None
        if self.kind == "amount" and not _ASKS_FREQUENCY.search(self.part):
            sentence = _FREQUENCY.sub(" ", sentence)  # "register the names once": no count
        return carries(self.kind, sentence)


#: A condition that opens a question ("When a key has no value, what …?"): the type is
#: the main clause's.
_CONDITION = compiled("condition_opening", flags=re.I)


def need_kind(part: str) -> str:
    """The type of answer one part of a question asks for (see the module's list)."""
    main = _CONDITION.sub("", part)
    if main != part and main.strip():
        part = main
    if _REASON.search(part):
        return "reason"
    if _COMPARISON.search(part):
        return "comparison"
    if _TIME.search(part):
        return "time"
    if _PERSON.search(part):
        return "person"
    if _AMOUNT.search(part):
        return "amount"
    if _PLACE.search(part):
        return "place"
    if _STEPS.search(part):
        return "steps"
    if _YESNO.search(part):
        return "yesno"
    return "thing"


def needs_of(question: str) -> list[Need]:
    """The question's needs, one per part."""
    return [Need(part, need_kind(part)) for part in question_parts(question)]


#: A calendar date ("10 November", "November 10th, 2026", "2026-11-05", "11月5日"): its
#: digits say when, not how much.
_DATE = re.compile(
    rf"{pattern('date_said')}|\b\d{{4}}-\d\d-\d\d\b|{pattern('date_said', 'zh')}", re.I
)


def carries(kind: str, sentence: str) -> bool:
    """Whether ``sentence`` holds something of the type ``kind`` asks for.

    Types without a form of their own (steps, yes/no, thing) are carried by any sentence.
    A date is no amount: "How much does a VPN profile cost?" is not answered by "goes live
    on 10 November".
    """
    pattern = CARRIES.get(kind)
    if kind == "amount":
        sentence = _DATE.sub(" ", sentence)
    return pattern is None or pattern.search(sentence) is not None


def describe_needs(question: str) -> str:
    """The needs as a model is shown them: one line each, its type and its words."""
    return "\n".join(f"- {NEED_NAMES[n.kind]}: {n.part.strip()}" for n in needs_of(question))


#: A reply that says the sources do not answer ("I could not find…", "The sources do not
#: mention…", Qwen 1.5B's "…there is no clear statement or recommendation regarding…"), in
#: its first sentence.
REFUSAL = compiled("refusal", flags=re.I)
