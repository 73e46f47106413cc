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
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from seekgraph.providers.language import MONTHS, WEEKDAY_NAMES, alternation, words
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

_QUANTITY_NOUNS = alternation(words("quantity_nouns"))
_AMOUNT = re.compile(
    rf"\bhow\s+(?:many|much|long|often|big|large|far|old|quickly|soon|deep(?:ly)?|high|"
    rf"low|fast|frequently)\b|\b(?:what|which)\s+(?:is|are|was|were)?\s*(?:the\s+|a\s+|an\s+)?"
    rf"(?:\w+\s+){{0,3}}(?:{_QUANTITY_NOUNS})\b|\b(?:{_QUANTITY_NOUNS})\s+(?:is|of|for)\b|"
    r"\binto how many\b|\b(?:cost|costs|charge|pay)\s*[?？]?\s*$|"
    r"\b(?:largest|smallest|highest|lowest|biggest|longest|shortest|oldest)\b|\bwhat\s+(?:port|version)\b|多少|几[个天次年月号点岁]?|多久|多长|多大|多高",
    re.I,
)
_TIME = re.compile(
    r"^\s*(?:and\s+)?when\b|\b(?:by|until|till|since|from) when\b|"
    r"\bwhat\s+(?:date|day|time|year|month|week|hour)\b|"
    r"\bwhich\s+(?:date|day|year|month|week)\b|\bhow soon\b|"
    rf"{alternation(words('time_questions', 'zh'))}",
    re.I,
)
_PERSON = re.compile(
    r"^\s*(?:and\s+|so\s+|then\s+)?(?:who|whom|whose)\b|\b(?:to|with|by|from)\s+whom\b|"
    rf"\b(?:which|what)\s+(?:{alternation(words('person_nouns'))})\b|"
    rf"{alternation(words('person_questions', 'zh'))}",
    re.I,
)
_PLACE = re.compile(
    r"^\s*(?:and\s+|so\s+|then\s+)?where\b|"
    rf"\b(?:which|what)\s+(?:{alternation(words('place_nouns'))})\b|"
    rf"{alternation(words('place_questions', 'zh'))}",
    re.I,
)
_COMPARISON = re.compile(
    r"\bdifferen(?:ce|ces|t)\s+(?:between|from)\b|\bcompared?\s+(?:to|with)\b|\bcompare\b|"
    rf"\b(?:vs\.?|versus)\s|{alternation(words('comparison_questions', 'zh'))}",
    re.I,
)
_REASON = re.compile(
    rf"^\s*(?:and\s+)?why\b|\bfor what reason\b|{alternation(words('reason_questions', 'zh'))}",
    re.I,
)
_STEPS = re.compile(
    r"^\s*(?:and\s+)?how\s+(?:do|can|should|would|to|does\s+one|could)\b|"
    r"\bwhat\s+are\s+the\s+steps\b|\bsteps?\s+(?:to|for)\b|\bwhat\s+should\s+I\s+do\b|"
    rf"{alternation(words('steps_questions', 'zh'))}",
    re.I,
)
_YESNO = re.compile(
    r"^\s*(?:and\s+)?(?:is|are|can|could|does|do|did|will|would|should|must|may|has|have|"
    rf"was|were)\b|吗\s*[?？]?\s*$|{alternation(words('yesno_questions', 'zh'))}",
    re.I,
)

_MONTHS = alternation(MONTHS)
_NUMBER_WORDS = alternation(words("amount_words") | words("frequency_words"))
CARRIES: dict[str, re.Pattern[str]] = {
    "amount": re.compile(
        rf"(?<![A-Za-z/_.-])\d|[$€£¥%]|\b(?:{_NUMBER_WORDS})\b|[一二三四五六七八九十百千万亿两半]",
        re.I,
    ),
    # a date, a day, a time of day, or a span counted in time units ("within 30 days")
    "time": re.compile(
        rf"\b(?:{_MONTHS})\b|\b(?:19|20)\d\d\b|\b\d{{1,2}}[:.]\d\d\b|\b\d{{1,2}}\s*(?:am|pm)\b|"
        rf"\b(?:{alternation(WEEKDAY_NAMES)}|today|tomorrow|"
        r"tonight|yesterday|noon|midnight|weekend|q[1-4])\b|"
        rf"\b(?:\d+|{_NUMBER_WORDS}|a|an|next|last|this|every|each)\s+(?:\w+\s+)?"
        rf"(?:{alternation(words('time_units'))})s?\b|\b\d{{4}}-\d\d-\d\d\b|"
        rf"[0-9一二三四五六七八九十]+\s*(?:{alternation(words('time_units', 'zh'))})",
        re.I,
    ),
    # a name (two capitalised words, "Dana Smith"), a chat handle, a speaker, or a role
    "person": re.compile(
        r"\b[A-Z][a-z]+\s+[A-Z][a-z]+\b|@\w|^\s*\w+:\s|"
        rf"\b(?i:{alternation(words('roles'))})s?\b|{alternation(words('roles', 'zh'))}",
    ),
    "place": re.compile(
        r"(?<=[\w,;:]\s)[A-Z][a-z]+|\b(?:in|at|on|from|to|into|under|near|inside|via)\s+"
        r"(?:the\s+|a\s+|your\s+|our\s+)?\w|[\w-]+\.[a-z]{2,}\b|/[\w.-]+|`[^`]+`|"
        r"[在于到从]",
    ),
    "reason": re.compile(
        rf"\b(?:{alternation(words('reason_words'))})\b|{alternation(words('reason_words', 'zh'))}",
        re.I,
    ),
}


#: Where a question asks a second thing: "How do I install it, and what is the rule?"
_PARTS = re.compile(
    r"\?\s+|[,;]?\s+and\s+(?=(?:what|how|when|where|who|which|why|is|are|does|do|can)\b)",
    re.I,
)


def question_parts(question: str) -> list[str]:
    """The separate things a question asks (one part for most questions)."""
    return [p for p in _PARTS.split(question) if term_set(p)] or [question]


#: A version ("Redis 8.10", "v2", "version 3") is a name, not an amount…
_VERSION = re.compile(r"\b(?:[A-Z][\w-]*|v|version)\s*\d+(?:\.\d+)+\+?|\bv\d+\b", re.I)
#: …unless the question asks for one ("What is the oldest Python that HTTPX runs on?").
_ASKS_VERSION = re.compile(
    r"\b(?:versions?|releases?|oldest|earliest|newest|latest|minimum|lowest|highest)\b", re.I
)


#: An amount of money is asked for ("How much does it cost?")…
_ASKS_MONEY = re.compile(
    rf"\b(?:{alternation(words('money_questions'))}|reimburs\w*)\b|"
    rf"{alternation(words('money_questions', 'zh'))}",
    re.I,
)
#: …unless it asks how long, how soon or how many: "How long do I have to ask for
#: reimbursement?" is answered by "within 30 days", not by money.
_ASKS_COUNT = re.compile(r"\bhow\s+(?:long|soon|often|many|far|old)\b|多久|多长时间|几天", re.I)
#: …and only money answers it (a currency, or free).
_MONEY = re.compile(
    rf"[$€£¥₹]|\b(?:{alternation(words('money_words'))})\b|"
    rf"{alternation(words('money_words', 'zh'))}",
    re.I,
)

#: How often is asked ("How often…", "How many times…"); only then is "once" or "daily" a
#: count.
_ASKS_FREQUENCY = re.compile(r"\bhow\s+(?:often|frequently)\b|\btimes\b|频率|多久一次", re.I)
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
_CONDITION = re.compile(r"^\s*(?:when|if|once|after|before|while|whenever)\b[^,，]*[,，]\s*", re.I)


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
    rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\.?(?:,?\s+\d{{4}})?(?![\w])|"
    rf"\b(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?|"
    rf"\b(?:{_MONTHS})\.?\s+\d{{4}}\b|\b\d{{4}}-\d\d-\d\d\b|\d+\s*月\s*\d+\s*[日号]",
    re.I,
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
REFUSAL = re.compile(
    r"^[^.!?\n]{0,80}\b(?:(?:could|can)(?:\s+not|not|n't)\s+find|(?:found|find)\s+nothing|"
    r"no\s+(?:(?:clear|specific|explicit|relevant|direct)\s+)?(?:information|source|mention|"
    r"answer|statement|details?|indication)|(?:do|does)(?:\s+not|n't)\s+(?:say|mention|"
    r"contain|state|include|cover|answer|specify|provide|indicate)|"
    r"not\s+(?:found|in\s+the\s+sources|mentioned))",
    re.I,
)
