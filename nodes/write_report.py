"""``write_report``: outline, one section per answered sub-question, then a coherence pass.

Extractive mode: each section quotes sentences of its own sub-question's evidence slice
(nothing else). The quotes are chosen across the whole report (``nodes.report_text``): the
sentences that say most about the subject, one per passage, none repeating another, until
the report's length (``report_words``) is spent; a section shows its quotes in the order
they were said. Sections keep the plan's order; what could not be found follows.
"""

from __future__ import annotations

import re
from typing import Any

from langgraph.runtime import Runtime

from nodes.attribution import author_of
from nodes.context import Context
from nodes.report_text import choose, fit, in_order, inverse_frequencies, quotes_of, subject_of
from nodes.services import node_name
from state.events import node_event
from state.research import ResearchState, Section, SubResult

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


def outline_cost(question: str, titles: list[str]) -> int:
    """Words the title, the table of contents and the headings take."""
    return len(question.split()) + 3 + sum(2 * len(t.split()) + 2 for t in titles)


def slice_of(result: SubResult, state: ResearchState) -> list[str]:
    """A section's evidence: what its search kept, then its topic's passages.

    The topic's passages count only while the sub-question is the one planned.
    """
    topic = state.get("topics", {}).get(result["id"])
    found = topic["ids"] if topic and topic["question"] == result["question"] else []
    return list(dict.fromkeys([*result.get("evidence", []), *found]))


async def write_report(state: ResearchState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Sections quoted from each sub-question's own evidence, chosen to fit the length."""
    results = state.get("results", {})
    ledger = state.get("ledger", {})
    answered = [
        results[s["id"]]
        for s in state["plan"]
        if s["id"] in results and results[s["id"]]["status"] == "done"
    ]
    titles = {r["id"]: r["question"] for r in answered}
    titles |= {s["id"]: s["title"] for s in state["plan"] if s.get("title")}
    subject = subject_of(state["question"])
    speakers = {a for ev in ledger.values() if (a := author_of(ev))}
    idf = inverse_frequencies([ev["snippet"] for ev in ledger.values()])
    candidates = [
        quote
        for r in answered
        for quote in quotes_of(
            r["id"], [ledger[i] for i in slice_of(r, state) if i in ledger], idf, subject, speakers
        )
    ]
    words = runtime.context.report_words - outline_cost(
        state["question"], [titles[r["id"]] for r in answered]
    )
    chosen = fit(choose(candidates, max(0, words)), ledger, subject.lower().split(), words)
    sections: list[Section] = []
    for r in answered:
        own = in_order([q for q in chosen if q.section == r["id"]], ledger)
        if not own:
            continue
        sections.append(
            {
                "id": r["id"],
                "title": titles[r["id"]],
                "sentences": [{"text": q.text, "source_id": q.source_id} for q in own],
            }
        )
    shown = {s["id"] for s in sections}
    missing = [
        f"{r['question']}: {r['reason'] or 'nothing found'}"
        for r in (results.get(s["id"]) for s in state["plan"])
        if r is not None and (r["status"] != "done" or r["id"] not in shown)
    ]
    runtime.stream_writer(
        node_event(
            node_name("write_report"),
            f"{len(sections)} sections, {len(chosen)} quotes of {len(candidates)} candidates",
            sections=[s["title"] for s in sections],
            trace_id=state.get("trace_id", ""),
        )
    )
    return {"sections": sections, "unanswered": missing}
