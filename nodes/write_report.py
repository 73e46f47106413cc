"""``write_report``: outline, one section per answered sub-question, then a coherence pass.

Extractive mode: each section is the quoted, cited sentences its sub-question's search
found (nothing but its own evidence slice); the coherence pass keeps the plan's order and
removes a passage or sentence a section before already gave. Then what could not be found.
"""

from __future__ import annotations

import re
from typing import Any

from langgraph.runtime import Runtime

from nodes.context import Context
from nodes.services import node_name
from state.events import node_event
from state.research import ResearchState, Section

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


async def write_report(state: ResearchState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Sections from each sub-question's own quotes, de-duplicated across the report."""
    results = state.get("results", {})
    seen_ids: set[str] = set()
    seen_text: set[str] = set()
    sections: list[Section] = []
    for sub in state["plan"]:
        result = results.get(sub["id"])
        if result is None or result["status"] != "done":
            continue
        kept = []
        for line in quoted_lines(result["answer"]):
            key = normal(line["text"])
            if line["source_id"] in seen_ids or key in seen_text:
                continue  # a fact a section before already gave
            seen_ids.add(line["source_id"])
            seen_text.add(key)
            kept.append(line)
        if kept:
            sections.append({"id": sub["id"], "title": result["question"], "sentences": kept})
    missing = [
        f"{r['question']}: {r['reason'] or 'nothing found'}"
        for r in (results.get(s["id"]) for s in state["plan"])
        if r is not None and (r["status"] != "done" or r["id"] not in {x["id"] for x in sections})
    ]
    runtime.stream_writer(
        node_event(
            node_name("write_report"),
            f"{len(sections)} sections, {sum(len(s['sentences']) for s in sections)} quotes",
            sections=[s["title"] for s in sections],
        )
    )
    return {"sections": sections, "unanswered": missing}
