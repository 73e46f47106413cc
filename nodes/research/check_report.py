"""``check_report``: every citation is evidence of this run, every quoted sentence a quote.

A model-written section may cite only the passages it was given (its slice).

Checked against the run's ledger (what was retrieved for this user); then references are
numbered for reading.

Sentences that fail the check are dropped (and counted), never shown. ``[n]`` maps to the
stable ``[src:id]`` in ``references``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.research.budgets import budget_left
from seekgraph.nodes.research.events import tell
from seekgraph.nodes.research.plan_checks import gaps_of, named_parts, part_title
from seekgraph.nodes.research.report_text import (
    attribution,
    normal,
    parsed_date,
    short_date,
    subject_of,
)
from seekgraph.state.models import KIND_LABELS, Evidence
from seekgraph.state.research import ResearchState

_MARK = re.compile(r"^\((?:out of date|upcoming)\)\s*")
_SPEAKER = re.compile(r"^[^:\n]{1,40}:\s+")


def is_quote(text: str, passage: str) -> bool:
    """``text`` (less a leading "Name: ") appears in ``passage``, words compared."""
    text = _MARK.sub("", text)
    body = normal(_SPEAKER.sub("", text)) or normal(text)
    return bool(body) and (body in normal(passage) or normal(text) in normal(passage))


def dated(value: str | None, kind: str) -> str:
    """``knowledge base, 15 Jan 2026``: what a claim is and when it was written."""
    moment = parsed_date(value)
    label = KIND_LABELS.get(kind, kind)
    return f"{label}, {short_date(moment)}" if moment else label


def disagreements(
    state: ResearchState, ledger: dict[str, Evidence], numbers: dict[str, int]
) -> list[str]:
    """Where the run's sources disagree, and cited passages a newer document replaces.

    The disagreements are the sub-questions' conflicts; every claim is a quote of evidence
    in the ledger.
    """
    lines: list[str] = []
    seen: set[tuple[str, str]] = set()
    results = state.get("results", {})
    for sub in state["plan"]:
        result = results.get(sub["id"])
        for conflict in result.get("conflicts", []) if result else []:
            claims = [
                c
                for c in conflict["claims"]
                if c["id"] in ledger
                and is_quote(c["text"], f"{ledger[c['id']]['title']}. {ledger[c['id']]['snippet']}")
            ]
            key = (conflict["topic"], conflict["trust"])
            if len(claims) < 2 or key in seen or conflict["trust"] not in ledger:
                continue
            seen.add(key)
            said = " vs ".join(
                f"“{c['text']}” ({dated(c.get('updated_at'), ledger[c['id']]['kind'])}) "
                f"[{numbers.setdefault(c['id'], len(numbers) + 1)}]"
                for c in claims
            )
            trust = numbers.setdefault(conflict["trust"], len(numbers) + 1)
            lines.append(f"- {said}. Trust [{trust}]: {conflict['reason']}")
    by_doc = {ev["doc_id"]: sid for sid, ev in ledger.items() if not ev.get("deprecated")}
    stale = [i for i in state.get("superseded", []) if i in ledger]
    listed: set[str] = set()
    for source_id in [*numbers, *stale]:
        ev = ledger[source_id]
        if not ev.get("deprecated") or ev["doc_id"] in listed:
            continue
        listed.add(ev["doc_id"])
        n = numbers.setdefault(source_id, len(numbers) + 1)
        newer = by_doc.get(ev.get("superseded_by") or "")
        instead = ""
        if newer:
            m = numbers.setdefault(newer, len(numbers) + 1)
            instead = f"; replaced by {ledger[newer]['title']} [{m}]"
        lines.append(f"- [{n}] {ev['title']} is out of date{instead}.")
    return lines


#: The section of a part the request named when nothing was found for it.
NOTHING_FOR_PART = "Nothing on this was found in the sources you can access"


def in_plan_order(
    state: ResearchState, written: dict[str, tuple[str, list[str]]]
) -> list[tuple[str, list[str]]]:
    """The written sections, and one saying so for each asked part nothing answered.

    An empty part's section follows the section of the part planned before it. A part the
    request named is a section of the report even when its search found nothing
    ("timeouts, retries and connection pooling": three sections, one of them perhaps empty,
    and saying so); its gap sub-question's section answers it. Topics found in the sources
    are not asked for and appear only when written. (A model's edit may have reordered the
    written sections: that order stands.)
    """
    results = state.get("results", {})
    plan = state["plan"]
    named = {part_title(p) for p in named_parts(state["question"])}
    answered_by_gap = {s["gap_for"] for s in plan if s.get("gap_for") and s["id"] in written}
    order = list(written)
    for n, sub in enumerate(plan):
        if sub["id"] in written or sub.get("title") not in named:
            continue
        if sub["id"] in answered_by_gap:
            continue
        result = results.get(sub["id"])
        reason = (result["reason"] if result else "") or "nothing relevant was retrieved"
        title = sub.get("title") or sub["question"]
        written = {**written, sub["id"]: (title, [f"{NOTHING_FOR_PART} ({reason})."])}
        before = [s["id"] for s in plan[:n] if s["id"] in order]
        order.insert(order.index(before[-1]) + 1 if before else 0, sub["id"])
    return [written[i] for i in order]


async def check_report(state: ResearchState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Verify the sections against the ledger, number the references, write the report."""
    ledger = state.get("ledger", {})
    numbers: dict[str, int] = {}
    dropped = 0
    lines = [f"# {state['question']}", ""]
    body: list[str] = []
    contents: list[str] = []
    subject = subject_of(state["question"]).lower().split()
    written: dict[str, tuple[str, list[str]]] = {}
    for section in state.get("sections", []):
        shown = []
        last_date = ""
        by_model = section.get("written") == "llm"
        allowed = set(section.get("allowed", []))
        for sentence in section["sentences"]:
            ev = ledger.get(sentence["source_id"])
            if ev is None or (
                sentence["source_id"] not in allowed  # a model cites only its own slice
                if by_model
                else not is_quote(sentence["text"], f"{ev['title']}. {ev['snippet']}")
            ):
                dropped += 1
                continue
            n = numbers.setdefault(sentence["source_id"], len(numbers) + 1)
            if by_model:
                shown.append(f"{sentence['text'].rstrip()} [{n}]")
            elif "where" in sentence:  # a passage quoted whole, under its place
                shown.append(f"{sentence['where']} [{n}]:\n\n{sentence['text']}\n")
            else:
                said, last_date = attribution(ev, subject, last_date)
                shown.append(f"- {said}{sentence['text']} [{n}]")
        if shown:
            paragraphs = [" ".join(shown)] if by_model else shown
            written[section["id"]] = (section["title"], paragraphs)
    for title, paragraphs in in_plan_order(state, written):
        contents.append(title)
        body += [f"## {title}", "", *paragraphs, ""]
    lines += ["## Contents", ""] + [f"{i}. {t}" for i, t in enumerate(contents, 1)] + [""]
    lines += body
    disagree = disagreements(state, ledger, numbers)
    if disagree:
        lines += ["## Sources disagree or are out of date", "", *disagree, ""]
    if state.get("unanswered"):
        lines += ["## What could not be found", ""]
        lines += [f"- {u}" for u in state["unanswered"]] + [""]
    references = []
    for source_id, n in numbers.items():
        ev = ledger[source_id]
        references.append(
            {
                "n": n,
                "id": source_id,
                "title": ev["title"],
                "source": ev["source"],
                "doc_id": ev["doc_id"],
                "kind": ev["kind"],
                "authority": ev["authority"],
                "snippet": ev["snippet"],
                "url": ev.get("url"),
                "updated_at": ev.get("updated_at"),
                "fetched_at": ev.get("fetched_at"),
            }
        )
        where = ""
        if ev["kind"] == "web" and ev.get("url"):  # a page: its address and when it was read
            host = urlsplit(str(ev["url"])).hostname or ""
            where = f" — {host}, read {(ev.get('fetched_at') or '')[:10]}, <{ev['url']}>"
        lines.append(f"[{n}]: {ev['title']}{where} [src:{source_id}]")
    tell(
        runtime,
        state,
        "check_report",
        f"{len(references)} references verified; {dropped} sentences dropped",
        dropped=dropped,
    )
    pending = (
        not state.get("gap_round") and bool(gaps_of(state)) and budget_left(state, runtime.context)
    )
    return {
        "answer": "\n".join(lines).strip() + "\n",
        "references": references,
        "gaps_pending": pending,
    }
