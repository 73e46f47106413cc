"""The offline reader of the research flow (extractive mode): plan, gaps, sections, check.

Its plan is the parts the request names and the topics of the corpus
(``nodes.reader.report_plan``). A gap is asked again as its key terms with the report's
subject (a keyword query finds what a sentence-shaped one missed). Each section quotes
sentences of its own sub-question's evidence slice (nothing else), chosen across the whole
report (``nodes.reader.report_text``): the sentences that say most about the subject, one per
passage, none repeating another, until the report's length (``report_words``) is spent; a
section shows its quotes in the order they were said. A part the request asked for whose
search found passages is quoted while the length lasts (``part_floor``). A report over
documents quotes each part's best passages whole. Every quoted sentence is checked to be a
quote of what it cites (``nodes.reader.report_check``).
"""

from __future__ import annotations

from typing import Any

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import relevance
from seekgraph.nodes.plumbing.services import Services
from seekgraph.nodes.plumbing.services import today as today_utc
from seekgraph.nodes.reader.attribution import author_of
from seekgraph.nodes.reader.base import Drafted, Gaps, Planned, Verified
from seekgraph.nodes.reader.conflicts import find_conflicts
from seekgraph.nodes.reader.extractive import CHAT_KINDS
from seekgraph.nodes.reader.passages import excerpt, where
from seekgraph.nodes.reader.report_check import verified
from seekgraph.nodes.reader.report_plan import extractive_plan
from seekgraph.nodes.reader.report_text import (
    Quote,
    choose,
    fit,
    in_order,
    inverse_frequencies,
    quotes_of,
    short_answer,
)
from seekgraph.nodes.reader.request_parts import subject_of
from seekgraph.nodes.reader.tables import boilerplate
from seekgraph.providers.sentences import sentences as sentences_of
from seekgraph.providers.terms import display_words, term_set
from seekgraph.state.plans import checked_plan
from seekgraph.state.research import ResearchState, Section, SubQuestion, SubResult


def outline_cost(question: str, titles: list[str]) -> int:
    """Words the title, the table of contents and the headings take."""
    return len(question.split()) + 3 + sum(2 * len(t.split()) + 2 for t in titles)


def slice_of(result: SubResult, state: ResearchState) -> list[str]:
    """A section's evidence: what its search kept, then its topic's passages.

    The topic's passages count only while the sub-question is the one planned.
    """
    topic = state.get("topics", {}).get(result["id"])
    found = topic["ids"] if topic and topic["question"] == result["question"] else []
    ledger = state.get("ledger", {})
    return [
        i
        for i in dict.fromkeys([*result.get("evidence", []), *found])
        if not (i in ledger and ledger[i]["deprecated"])  # out of date: listed, not quoted
    ]


def in_best_section(
    candidates: list[Quote], titles: dict[str, str], asked: set[str]
) -> list[Quote]:
    """A passage found for several sections is quoted in the one whose heading it names.

    "Every SSO integration now lives in Okta" found by the VPN and the SSO sub-questions
    belongs under "SSO"; a part the request named (``asked``) comes before a topic found by
    clustering; among sections it names alike, or names none of, the first keeps it.
    """
    home: dict[str, tuple[tuple[bool, bool], str]] = {}
    for q in candidates:
        named = bool(q.terms & term_set(titles.get(q.section, "")))
        rank = (named and q.section in asked, named)
        if q.source_id not in home or rank > home[q.source_id][0]:
            home[q.source_id] = (rank, q.section)
    return [q for q in candidates if home[q.source_id][1] == q.section]


#: Quotes a part the request asked for is given when none of its own won a place.
PART_QUOTES = 2


def part_floor(
    homed: list[Quote], found: list[Quote], asked: list[str], chosen: list[Quote], words: int
) -> list[Quote]:
    """Quotes the report keeps first: one of each asked part, then more of the unquoted ones.

    Sections compete for the report's length by what their quotes say per word, and a part
    the request asks for is worded more broadly than a topic the sources hold, so its quotes
    score lower and may all lose: the report would then show the part as unfound although
    its search found passages. So each asked part keeps its best quote that won a place
    (``chosen``), and a part none of whose quotes won one is given its best (``PART_QUOTES``,
    none repeating another part's, or its best alone), while ``words`` last. All the parts'
    first quotes come before any part's second: the last to go when the length runs out.
    ``homed``: the candidates, each in its best section (``in_best_section``); a part every
    passage of which another section took gets back its best one of ``found``, the
    candidates before that.
    """
    firsts: list[Quote] = []
    more: list[Quote] = []
    for part in asked:
        taken = [*firsts, *more]
        if won := [q for q in chosen if q.section == part]:
            firsts.append(max(won, key=lambda q: q.score / q.cost))
            continue
        used = {q.source_id for q in taken}
        own = [q for q in homed if q.section == part] or [
            q for q in found if q.section == part and q.source_id not in used
        ]
        best = choose(own, words, taken)[len(taken) :][:PART_QUOTES]
        if not best:  # every quote of it repeats another part's: its best is quoted still
            room = words - sum(q.cost for q in taken)
            best = sorted(
                (q for q in own if q.cost <= room and q.source_id not in used),
                key=lambda q: q.score / q.cost,
                reverse=True,
            )[:1]
        firsts += best[:1]
        more += best[1:]
    return [*firsts, *more]


def quoted_sections(
    state: ResearchState, answered: list[SubResult], titles: dict[str, str], words: int
) -> tuple[list[Section], int, int]:
    """Sections of quotes chosen across ``answered`` to fit ``words``; quotes, candidates."""
    ledger = state.get("ledger", {})
    subject = subject_of(state["question"])
    speakers = {a for ev in ledger.values() if (a := author_of(ev))}
    idf = inverse_frequencies([ev["snippet"] for ev in ledger.values()])
    candidates = [
        quote
        for r in answered
        for quote in quotes_of(
            r["id"],
            [
                ledger[i]
                for i in slice_of(r, state)
                if i in ledger and not boilerplate(ledger[i], state["question"])
            ],
            idf,
            subject,
            speakers,
        )
    ]
    # what a newer source replaces is told in the "out of date" part, not quoted as current:
    # as its search found it, or as the section's own passages show it
    today = today_utc()
    conflicts = [c for r in state.get("results", {}).values() for c in r.get("conflicts", [])]
    for r in answered:
        passages = [ledger[i] for i in slice_of(r, state) if i in ledger]
        said = [(t, ev) for ev in passages for t in sentences_of(ev["snippet"])]
        conflicts += find_conflicts(said, today)
    stale = [
        (claim["id"], claim["text"])
        for conflict in conflicts
        for claim in conflict["claims"]
        if conflict["trust"] and claim["id"] != conflict["trust"]
    ]
    candidates = [
        q for q in candidates if not any(q.source_id == i and t in q.text for i, t in stale)
    ]
    asked = {s["id"] for s in state["plan"] if not s.get("topic")}
    homed = in_best_section(candidates, {r["id"]: titles[r["id"]] for r in answered}, asked)
    words -= outline_cost(state["question"], [titles[r["id"]] for r in answered])
    chosen = fit(choose(homed, max(0, words)), ledger, subject.lower().split(), words)
    parts = [r["id"] for r in answered if r["id"] in asked]
    floor = part_floor(homed, candidates, parts, chosen, max(0, words))
    if {q.section for q in floor} - {q.section for q in chosen}:  # a part won no place
        taken = {q.source_id for q in floor}
        chosen = choose([q for q in homed if q.source_id not in taken], max(0, words), floor)
        chosen = fit(chosen, ledger, subject.lower().split(), words, floor)
    sections: list[Section] = []
    for r in answered:
        own = in_order([q for q in chosen if q.section == r["id"]], ledger)
        if own:
            sentences = [{"text": q.text, "source_id": q.source_id} for q in own]
            sections.append({"id": r["id"], "title": titles[r["id"]], "sentences": sentences})
    return sections, len(chosen), len(homed)


#: Passages quoted whole in an offline section of a report over documents.
PASSAGES_PER_SECTION = 2
#: Characters per word, to turn a section's share of ``report_words`` into a passage's room.
CHARS_PER_WORD = 6


def passage_sections(
    state: ResearchState, answered: list[SubResult], titles: dict[str, str], words: int
) -> list[Section]:
    """Sections of a report over documents: each part's best passages, quoted whole.

    A guide's reader wants the passage — the sentence with the code block or list it
    introduces — not a sentence cut from it; each passage keeps its place ("Title ›
    Section") and its citation. A passage is quoted in the first section that found it.
    """
    ledger = state.get("ledger", {})
    room = words * CHARS_PER_WORD // max(1, len(answered) * PASSAGES_PER_SECTION)
    used: set[str] = set()
    sections: list[Section] = []
    for r in answered:
        passages = sorted(
            (
                ledger[i]
                for i in slice_of(r, state)
                if i in ledger and i not in used and not boilerplate(ledger[i], state["question"])
            ),
            key=relevance,
            reverse=True,
        )[:PASSAGES_PER_SECTION]
        shown = []
        for ev in passages:
            text = excerpt(ev, "", room).strip()
            if text:
                used.add(ev["source_id"])
                shown.append({"text": text, "source_id": ev["source_id"], "where": where(ev)})
        if shown:
            sections.append({"id": r["id"], "title": titles[r["id"]], "sentences": shown})
    return sections


def over_documents(state: ResearchState) -> bool:
    """The report's evidence is documents' (a chat is told by its remarks, quoted one by one)."""
    kinds = [ev["kind"] for ev in state.get("ledger", {}).values()]
    return bool(kinds) and not any(k in CHAT_KINDS for k in kinds)


def relaxed(sub: SubQuestion, results: dict[str, Any], subject: str) -> str:
    """The sub-question as its key terms, with the report's subject."""
    asked = results[sub["id"]]["question"] if sub["id"] in results else sub["question"]
    words = [w for w in display_words(f"{subject} {asked}") if len(w) > 2]
    return " ".join(dict.fromkeys(words)) or asked


class OfflineReportReader:
    """The research flow's reader in extractive mode: no model; quotes, chosen to fit."""

    def __init__(self, services: Services, ctx: Context) -> None:
        self.services = services
        self.ctx = ctx

    async def plan(self, request: str) -> Planned:
        """One sub-question per part the request names, then one per topic of the corpus."""
        plan, how, pool, topics = await extractive_plan(request, self.ctx, self.services)
        return Planned(checked_plan(plan), how, pool, topics)

    async def gaps(self, state: ResearchState, gaps: list[SubQuestion]) -> Gaps:
        """Each gap as its key terms with the report's subject (``relaxed``)."""
        subject = subject_of(state["question"])
        results = state.get("results", {})
        return Gaps([relaxed(g, results, subject) for g in gaps], [g["id"] for g in gaps])

    def quoted(
        self,
        state: ResearchState,
        answered: list[SubResult],
        titles: dict[str, str],
        words: int,
    ) -> tuple[list[Section], int, int]:
        """Sections of quotes chosen across ``answered`` to fit ``words`` (``quoted_sections``)."""
        return quoted_sections(state, answered, titles, words)

    async def write(
        self,
        state: ResearchState,
        answered: list[SubResult],
        titles: dict[str, str],
        words: int,
    ) -> Drafted:
        """Passages quoted whole over documents; else sentences chosen to fit ``words``."""
        if over_documents(state):
            sections = passage_sections(state, answered, titles, words)
            return Drafted(sections, f"{len(sections)} sections of passages quoted whole")
        sections, chosen, candidates = quoted_sections(state, answered, titles, words)
        return Drafted(
            sections, f"{len(sections)} sections, {chosen} quotes of {candidates} candidates"
        )

    def check(self, state: ResearchState) -> Verified:
        """Each sentence a quote of what it cites, or a model's within its slice."""
        return verified(state)

    def bridge(self, answer: str, question: str, lead: str = "") -> str:
        """The names the answer adds to its question (``short_answer``)."""
        return short_answer(answer, question, lead)
