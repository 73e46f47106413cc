"""What a report quotes: the sentences that say most about its subject, within its length.

A report has a length, and every quote spends some of it, so the quotes are chosen, not
merely collected: each sentence of a section's evidence is scored by what it says (the
rarity of its words in the run's evidence, as in TF-IDF summarisers; a number or a date
counts), by whether it is about the report's subject (a chat sentence by whom it speaks of,
a document's by naming it) and by how relevant the search found its passage. Greetings,
reactions and questions say little and score little. The best are taken, one per passage
and none that repeats an earlier one, until the length is spent; each section then shows
its own in the order they were said.

An extractive answer's quoted lines (``quoted_lines``) and sentences compared as their words
(``normal``) are read back here too (what fills a ``{q1}``, the report's check).

What a time expression and a deed are written with ("last Friday", "I went") is data:
``providers/language/en.toml`` (``when_said``, ``deed_said`` and the word lists they name).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dateutil import parser as dates

from seekgraph.nodes.plumbing.evidence import relevance
from seekgraph.nodes.reader.attribution import about, author_of, spoken
from seekgraph.providers.language import MONTH_NAMES, WEEKDAY_NAMES, alternation, compiled, words
from seekgraph.providers.sentences import sentences
from seekgraph.providers.terms import STOPWORDS, numbers, term_set
from seekgraph.state.models import Evidence

#: Two quotes sharing this share of their terms say the same thing; the later one is dropped.
REPEAT_OVERLAP = 0.6
#: A sentence with fewer distinct content terms says too little to spend words on.
MIN_TERMS = 4
#: Weight of a sentence about someone else than the report's subject.
OFF_SUBJECT = 0.35
#: Weight of a question (it asks; it rarely states a fact).
QUESTION = 0.4
#: A passage's relevance to its sub-question weighs its sentences by this plus the relevance.
RELEVANCE_FLOOR = 0.5
#: Quotes are taken by what they say per word spent (score / cost ** this).
COST_EXPONENT = 1.0
#: Words a quote's line spends beyond its text (the bullet, the citation mark) and, on
#: average, its speaker or date; the exact count is kept by ``fit``.
LINE_COST = 3
#: Kinds whose date is when it was said (a document's date is only when it was saved).
DATED_KINDS = frozenset({"messages", "notes"})


def parsed_date(value: str | None) -> datetime | None:
    """A date in any common format ("1:56 pm on 8 May, 2023", ISO 8601), or None."""
    if not value:
        return None
    try:
        moment: datetime = dates.parse(str(value), fuzzy=True)
        return moment
    except (ValueError, OverflowError):
        return None


def when_said(ev: Evidence) -> datetime | None:
    """When a message or note was said (its ``updated_at``)."""
    return parsed_date(ev.get("updated_at")) if ev["kind"] in DATED_KINDS else None


def said_order(ev: Evidence) -> str:
    """A key that orders passages as they were said (undated ones last)."""
    moment = when_said(ev)
    return moment.replace(tzinfo=None).isoformat() if moment else "~"


def short_date(moment: datetime) -> str:
    """``8 May 2023``."""
    return f"{moment.day} {moment:%b %Y}"


def attribution(ev: Evidence, subject: list[str], last_date: str) -> tuple[str, str]:
    """Who said a quote and when, read from its passage, and the date now shown.

    The date is shown when it changes; the speaker unless it is the report's subject.
    """
    moment = when_said(ev)
    date = short_date(moment) if moment else ""
    author = author_of(ev)
    said = f"{author}: " if author and author.split()[0].lower() not in subject else ""
    return (f"({date}) " if date and date != last_date else "") + said, date or last_date


@dataclass
class Quote:
    """One sentence a section may quote."""

    section: str
    source_id: str
    text: str
    score: float
    terms: set[str]

    @property
    def cost(self) -> int:
        """Words its line spends in the report."""
        return len(self.text.split()) + LINE_COST


def inverse_frequencies(passages: list[str]) -> dict[str, float]:
    """Each term's rarity over the run's evidence (smoothed IDF)."""
    df: Counter[str] = Counter()
    for text in passages:
        df.update(term_set(text))
    n = len(passages) or 1
    return {t: math.log((1 + n) / (1 + c)) + 1.0 for t, c in df.items()}


#: When something happened or will: the events a report is made of ("yesterday", "last
#: Friday", "two weeks ago", "next month", "in May", "2023").
_WHEN = compiled("when_said", flags=re.I)
#: Weight of a time expression, in rare terms.
WHEN_WEIGHT = 2.0
#: Someone saying what they did or will do ("I went", "we've started", "I'm going to").
_DID = compiled("deed_said", flags=re.I)
#: Weight of a first-person account of a deed, in rare terms.
DID_WEIGHT = 1.0


def information(text: str, idf: dict[str, float], known: set[str]) -> float:
    """What a sentence says: the rarity of its distinct terms.

    The subject's own name does not count; a number or a date counts as one more rare term.
    """
    terms = term_set(text) - known
    if len(terms) < MIN_TERMS:
        return 0.0
    rare = max(idf.values(), default=1.0)
    said = sum(idf.get(t, rare) for t in terms) + rare * min(2, len(numbers(text)))
    said += rare * WHEN_WEIGHT if _WHEN.search(text) else 0.0
    return said + (rare * DID_WEIGHT if _DID.search(text) else 0.0)


def about_subject(sentence: str, ev: Evidence, subject: str, speakers: set[str]) -> bool:
    """The sentence speaks of the subject: by whom a chat sentence is about, else by name."""
    if not subject:
        return True
    people = {s for s in speakers if s.split()[0].lower() in subject.lower().split()}
    if people and author_of(ev):
        return bool(about(sentence, ev, speakers) & people)
    named = term_set(subject)
    return bool(named & term_set(f"{ev['title']} {sentence}"))


def quotes_of(
    section: str,
    evidence: list[Evidence],
    idf: dict[str, float],
    subject: str,
    speakers: set[str],
) -> list[Quote]:
    """Every sentence of a section's evidence, scored; the best of each passage only."""
    known = term_set(subject)
    out = []
    for ev in evidence:
        best: Quote | None = None
        for sentence in sentences(ev["snippet"]):
            text = spoken(sentence, ev)
            if text.startswith("```") or text.startswith("["):
                continue  # code and image captions are not a report's prose
            score = information(text, idf, known)
            if not score:
                continue
            if not about_subject(sentence, ev, subject, speakers):
                score *= OFF_SUBJECT
            if text.rstrip().endswith("?"):
                score *= QUESTION
            score *= RELEVANCE_FLOOR + relevance(ev)
            if best is None or score > best.score:
                best = Quote(section, ev["source_id"], text, score, term_set(text))
        if best is not None:
            out.append(best)
    return out


def choose(quotes: list[Quote], words: int, first: list[Quote] | None = None) -> list[Quote]:
    """The best quotes that fit in ``words``: one per passage, none repeating another.

    ``first``: quotes already taken (they spend their words first, and come first).
    """
    chosen: list[Quote] = list(first or [])
    used = {q.source_id for q in chosen}
    spent = sum(q.cost for q in chosen)
    for quote in sorted(quotes, key=lambda q: q.score / q.cost**COST_EXPONENT, reverse=True):
        if quote.source_id in used or spent + quote.cost > words:
            continue
        if any(
            len(quote.terms & c.terms) >= REPEAT_OVERLAP * min(len(quote.terms), len(c.terms))
            for c in chosen
        ):
            continue
        chosen.append(quote)
        used.add(quote.source_id)
        spent += quote.cost
    return chosen


def in_order(quotes: list[Quote], ledger: dict[str, Evidence]) -> list[Quote]:
    """A section's quotes in the order they were said."""
    return sorted(quotes, key=lambda q: said_order(ledger[q.source_id]))


def shown_words(quotes: list[Quote], ledger: dict[str, Evidence], subject: list[str]) -> int:
    """Words a section's lines take as the report shows them (bullet, who and when, mark)."""
    total, last = 0, ""
    for quote in in_order(quotes, ledger):
        said, last = attribution(ledger[quote.source_id], subject, last)
        total += len(said.split()) + len(quote.text.split()) + 2
    return total


def fit(
    chosen: list[Quote],
    ledger: dict[str, Evidence],
    subject: list[str],
    words: int,
    keep: list[Quote] | None = None,
) -> list[Quote]:
    """The chosen quotes less the weakest until the lines as shown fit in ``words``.

    The quotes of ``keep`` go last, the last of them first.
    """
    kept = [q for q in keep or [] if q in chosen]
    kept += sorted(
        (q for q in chosen if q not in kept), key=lambda q: q.score / q.cost, reverse=True
    )

    def total() -> int:
        sections = {q.section for q in kept}
        return sum(
            shown_words([q for q in kept if q.section == s], ledger, subject) for s in sections
        )

    while kept and total() > words:
        kept.pop()
    return kept


_LINE = re.compile(r"^\s*(?:[-*]|\d+\.)\s+(.*)$")


_CITE = re.compile(r"\s*\[src:([^\]\s]+)\]")


def quoted_lines(answer: str) -> list[dict[str, Any]]:
    """``{"text", "source_id"}`` of each quoted line of an extractive answer."""
    out = []
    for line in answer.splitlines():
        match = _LINE.match(line)
        cited = _CITE.findall(line)
        if match is None or not cited:
            continue
        text = _CITE.sub("", match.group(1)).strip()
        if text:
            out.append({"text": text, "source_id": cited[0]})
    return out


def normal(text: str) -> str:
    """Lower-case words only, for comparing sentences."""
    return " ".join(re.findall(r"\w+", text.lower()))


#: Month and weekday names, never a bridge name (python-dateutil's).
_CALENDAR = MONTH_NAMES | WEEKDAY_NAMES
#: Names a placeholder is filled with ("A or B"): the first is not always the bridge.
BRIDGE_NAMES = 2
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)$")
_NAME = re.compile(
    rf"\b[A-Z][\w'-]*(?:\s+(?:{alternation(words('name_particles'))})?\s*[A-Z][\w'-]*)*"
)


def short_answer(answer: str, question: str, lead: str = "", words: int = 12) -> str:
    """What fills a ``{q1}`` placeholder: the names the answer adds to its question.

    An extractive answer is a list of quotes, the best first; a model's answer is prose with
    citations; an answer that quotes nothing ("I found nothing…") is no name, so the passage
    its search found most relevant (``lead``) is read instead. From that text: the names the
    question did not say at all (two words or more before a lone capitalised word, never a
    month or a sentence's first word), the best two as "A or B" — the next hop searches for
    either; else the first name that adds a word; else its first words.
    """
    quotes = quoted_lines(answer)
    text = quotes[0]["text"] if quotes else (answer if "[src:" in answer else lead or answer)
    asked = {w.lower() for w in re.findall(r"\w+", question)} - STOPWORDS
    body = text.split(": ", 1)[-1]
    names = [
        m.group(0).strip()
        for m in _NAME.finditer(body)
        if m.group(0).strip().lower() not in _CALENDAR
        # a lone capitalised word opening a sentence ("Although") says nothing of a name
        and not (" " not in m.group(0).strip() and _SENTENCE_START.search(body[: m.start()]))
    ]
    said = [{w.lower() for w in re.findall(r"\w+", n)} - STOPWORDS for n in names]
    new = [n for n, own in zip(names, said, strict=True) if own and not own & asked]
    ranked = list(dict.fromkeys([n for n in new if len(n.split()) > 1] + new))
    if ranked:
        return " or ".join(ranked[:BRIDGE_NAMES])
    for name, own in zip(names, said, strict=True):
        if own - asked:
            return name
    return " ".join(text.split()[:words])
