"""The research flow's check: every citation is evidence of this run, every quote a quote.

A model-written section may cite only the passages it was given (its slice); a quoted
sentence (less a leading "Name: " or "(out of date)") must appear in the passage it cites,
words compared. Checked against the run's ledger (what was retrieved for this user);
sentences that fail are dropped (and counted), never shown. References are numbered in the
order first cited, then the sources' disagreements are told, every claim a quote.
"""

from __future__ import annotations

import re

from seekgraph.nodes.reader.base import Verified
from seekgraph.nodes.reader.report_text import attribution, normal, parsed_date, short_date
from seekgraph.nodes.reader.request_parts import named_parts, part_title, subject_of
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
            key = (conflict["topic"], conflict["trust"] or "|".join(c["id"] for c in claims))
            decided = bool(conflict["trust"])
            if len(claims) < 2 or key in seen or (decided and conflict["trust"] not in ledger):
                continue
            seen.add(key)
            said = " vs ".join(
                f"“{c['text']}” ({dated(c.get('updated_at'), ledger[c['id']]['kind'])}) "
                f"[{numbers.setdefault(c['id'], len(numbers) + 1)}]"
                for c in claims
            )
            if decided:
                trust = numbers.setdefault(conflict["trust"], len(numbers) + 1)
                lines.append(f"- {said}. Trust [{trust}]: {conflict['reason']}")
            else:
                lines.append(f"- {said}. {conflict['reason']}")
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


def verified(state: ResearchState) -> Verified:
    """The sections' sentences that stand, as the report shows them, and what else it tells.

    A passage quoted whole is shown under its place; a quote with who said it and when
    (``attribution``); a model's sentences as one paragraph.
    """
    ledger = state.get("ledger", {})
    numbers: dict[str, int] = {}
    dropped = 0
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
    disagree = disagreements(state, ledger, numbers)
    parts = {part_title(p) for p in named_parts(state["question"])}
    return Verified(written, numbers, dropped, disagree, parts)
