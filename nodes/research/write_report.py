"""``write_report``: one section per answered sub-question, then what could not be found.

The reader writes the sections (``ReportReader.write``). LLM mode: every section is written
at once by the model from its own slice (it may cite only those passages), then one
coherence pass edits the whole report (order, repeated facts, terms); a section the model
could not write is quoted. Extractive mode: each section quotes sentences of its own
sub-question's evidence slice (nothing else), chosen across the whole report to fit its
length (``report_words``); over documents, each part's best passages are quoted whole.
Sections keep the plan's order; what could not be found follows, and the out-of-date
passages the answered sub-questions found.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services
from seekgraph.nodes.reader import report_reader_for
from seekgraph.nodes.research.events import tell
from seekgraph.state.research import ResearchState, SubResult


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
    reader = report_reader_for(services, state, runtime.context)
    drafted = await reader.write(state, answered, titles, words)
    sections, summary = drafted.sections, drafted.summary
    update: dict[str, Any] = {}
    if drafted.by_model:
        budget = state.get("budget", {})
        update = {
            "model_calls": drafted.calls,
            "budget": {**budget, "tokens_used": budget.get("tokens_used", 0) + drafted.tokens},
        }
    shown = {s["id"] for s in sections}
    # a sub-question its gap sub-question answered is no longer missing
    recovered = {s["gap_for"] for s in state["plan"] if s.get("gap_for") and s["id"] in shown}
    # a topic the sources showed beside the parts the request named was not asked for
    recovered |= {s["id"] for s in state["plan"] if s.get("topic")}
    missing = [
        f"{r['question']}: "
        + (r["reason"] or ("passages found, none quoted" if r["evidence"] else "nothing found"))
        for r in (results.get(s["id"]) for s in state["plan"])
        if r is not None
        and r["id"] not in recovered
        and (r["status"] != "done" or r["id"] not in shown)
    ]
    tell(runtime, state, "write_report", summary, sections=[s["title"] for s in sections])
    superseded = superseded_of(state, answered)
    return {"sections": sections, "unanswered": missing, "superseded": superseded, **update}
