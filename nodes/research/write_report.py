"""``write_report``: outline, one section per answered sub-question, then a coherence pass.

LLM mode: every section is written at once by the model from its own slice (it may cite only
those passages), then one coherence pass edits the whole report (order, repeated facts,
terms); a section the model could not write is quoted. Extractive mode: each section quotes
sentences of its own sub-question's evidence slice (nothing else), chosen across the whole
report (``nodes.research.report_text``): the sentences that say most about the subject, one per
passage, none repeating another, until the report's length (``report_words``) is spent; a
section shows its quotes in the order they were said. Sections keep the plan's order; what
could not be found follows.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import relevance
from seekgraph.nodes.plumbing.services import Services, chat_model_for
from seekgraph.nodes.plumbing.services import today as today_utc
from seekgraph.nodes.reader.attribution import author_of
from seekgraph.nodes.reader.conflicts import find_conflicts
from seekgraph.nodes.reader.extractive import CHAT_KINDS
from seekgraph.nodes.reader.passages import excerpt, where
from seekgraph.nodes.reader.tables import boilerplate
from seekgraph.nodes.research.events import tell
from seekgraph.nodes.research.llm import llm_coherence, llm_sections, slice_for_writer
from seekgraph.nodes.research.report_text import (
    Quote,
    choose,
    fit,
    in_order,
    inverse_frequencies,
    quotes_of,
    subject_of,
)
from seekgraph.providers.chat import ChatModel
from seekgraph.providers.sentences import sentences as sentences_of
from seekgraph.providers.terms import term_set
from seekgraph.state.models import ModelCall
from seekgraph.state.research import ResearchState, Section, SubResult


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


def superseded_of(state: ResearchState, answered: list[SubResult]) -> list[str]:
    """Out-of-date passages the answered sub-questions found (the "out of date" part's)."""
    ledger = state.get("ledger", {})
    topics = state.get("topics", {})
    ids = [
        i
        for r in answered
        for i in [*r.get("evidence", []), *topics.get(r["id"], {}).get("ids", [])]
        if i in ledger and ledger[i]["deprecated"]
    ]
    return list(dict.fromkeys(ids))


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
        if claim["id"] != conflict["trust"]
    ]
    candidates = [
        q for q in candidates if not any(q.source_id == i and t in q.text for i, t in stale)
    ]
    asked = {s["id"] for s in state["plan"] if not s.get("topic")}
    candidates = in_best_section(candidates, {r["id"]: titles[r["id"]] for r in answered}, asked)
    words -= outline_cost(state["question"], [titles[r["id"]] for r in answered])
    chosen = fit(choose(candidates, max(0, words)), ledger, subject.lower().split(), words)
    sections: list[Section] = []
    for r in answered:
        own = in_order([q for q in chosen if q.section == r["id"]], ledger)
        if own:
            sentences = [{"text": q.text, "source_id": q.source_id} for q in own]
            sections.append({"id": r["id"], "title": titles[r["id"]], "sentences": sentences})
    return sections, len(chosen), len(candidates)


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


async def written_sections(
    state: ResearchState,
    answered: list[SubResult],
    titles: dict[str, str],
    model: ChatModel,
    words: int,
) -> tuple[list[Section], list[ModelCall], int]:
    """Sections a model writes from their own slices, then edits as one report.

    A section the model could not write is quoted instead (its share of the length).
    """
    ledger = state.get("ledger", {})
    plan = {s["id"]: s for s in state["plan"]}
    subs: list[dict[str, Any]] = [
        {
            "id": r["id"],
            "title": titles[r["id"]],
            "question": r["question"],
            "intent": plan[r["id"]].get("intent", ""),
            "evidence": [ledger[i] for i in slice_of(r, state) if i in ledger],
        }
        for r in answered
    ]
    written = await llm_sections(state["question"], subs, model)
    calls = [call for _, call, _ in written]
    tokens = sum(t for _, _, t in written)
    sections: list[Section] = []
    unwritten = []
    for sub, (sentences, _, _) in zip(subs, written, strict=True):
        if sentences is None:
            unwritten.append(next(r for r in answered if r["id"] == sub["id"]))
        elif sentences:
            allowed = [ev["source_id"] for ev in slice_for_writer(sub["evidence"])]
            sections.append(
                {
                    "id": sub["id"],
                    "title": sub["title"],
                    "sentences": sentences,
                    "written": "llm",
                    "allowed": allowed,
                }
            )
    if len(sections) > 1:
        edited, decision = await llm_coherence(
            state["question"], [dict(s) for s in sections], model
        )
        calls.append(decision.call)
        tokens += decision.tokens
        if edited is not None:
            sections = edited  # type: ignore[assignment]
    if unwritten:
        share = words * len(unwritten) // max(1, len(answered))
        quoted, _, _ = quoted_sections(state, unwritten, titles, share)
        order = [r["id"] for r in answered]
        sections = sorted([*sections, *quoted], key=lambda s: order.index(s["id"]))
    return sections, calls, tokens


async def write_report(
    state: ResearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Sections from each sub-question's own evidence, chosen to fit the length.

    Written by the model in LLM mode, quoted otherwise.
    """
    results = state.get("results", {})
    answered = [
        results[s["id"]]
        for s in state["plan"]
        if s["id"] in results and results[s["id"]]["status"] == "done"
    ]
    titles = {r["id"]: r["question"] for r in answered}
    titles |= {s["id"]: s["title"] for s in state["plan"] if s.get("title")}
    words = runtime.context.research.report_words
    model = chat_model_for(services, state)  # type: ignore[arg-type]
    if model is not None:  # its calls carry the run's trace id
        model = model.with_config(metadata={"trace_id": state.get("trace_id", "")})
    update: dict[str, Any] = {}
    if model is not None:
        sections, calls, tokens = await written_sections(state, answered, titles, model, words)
        budget = state.get("budget", {})
        update = {
            "model_calls": calls,
            "budget": {**budget, "tokens_used": budget.get("tokens_used", 0) + tokens},
        }
        summary = f"{len(sections)} sections written ({len(calls)} model calls)"
    elif over_documents(state):
        sections = passage_sections(state, answered, titles, words)
        summary = f"{len(sections)} sections of passages quoted whole"
    else:
        sections, chosen, candidates = quoted_sections(state, answered, titles, words)
        summary = f"{len(sections)} sections, {chosen} quotes of {candidates} candidates"
    shown = {s["id"] for s in sections}
    # a sub-question its gap sub-question answered is no longer missing
    recovered = {s["gap_for"] for s in state["plan"] if s.get("gap_for") and s["id"] in shown}
    # a topic the sources showed beside the parts the request named was not asked for
    recovered |= {s["id"] for s in state["plan"] if s.get("topic")}
    missing = [
        f"{r['question']}: {r['reason'] or 'nothing found'}"
        for r in (results.get(s["id"]) for s in state["plan"])
        if r is not None
        and r["id"] not in recovered
        and (r["status"] != "done" or r["id"] not in shown)
    ]
    tell(runtime, state, "write_report", summary, sections=[s["title"] for s in sections])
    superseded = superseded_of(state, answered)
    return {"sections": sections, "unanswered": missing, "superseded": superseded, **update}
