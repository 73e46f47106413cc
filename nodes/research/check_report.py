"""``check_report``: every citation is evidence of this run, every quoted sentence a quote.

The reader checks (``ReportReader.check``): a model-written section may cite only the
passages it was given (its slice), a quoted sentence must be a quote of what it cites;
checked against the run's ledger (what was retrieved for this user). Sentences that fail
the check are dropped (and counted), never shown. Then the report is laid out: its sections
in the plan's order (a part the request named is one even when it quotes nothing, and says
why: ``nothing_quoted``), where the sources disagree, what could not be found, and the
references, numbered for reading: ``[n]`` maps to the stable ``[src:id]`` in ``references``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services
from seekgraph.nodes.reader import report_reader_for
from seekgraph.nodes.research.budgets import budget_left
from seekgraph.nodes.research.events import tell
from seekgraph.nodes.research.plan_checks import gaps_of
from seekgraph.state.research import ResearchState

#: The section of a part the request named when nothing was found for it.
NOTHING_FOR_PART = "Nothing on this was found in the sources you can access"
#: The section of a part the request named when all its search found is out of date.
ONLY_OUT_OF_DATE = "Only out-of-date passages were found on this"
#: The section of a part the request named when what it found is quoted under other parts.
QUOTED_ELSEWHERE = "What was found on this is quoted in other sections"
#: The section of a part the request named when what it found is not quoted at all.
NONE_QUOTED = "passages were found on this; none of them is quoted in this report"


def nothing_quoted(state: ResearchState, sub_id: str, cited: frozenset[str]) -> str:
    """What the section of a part the request named says when it quotes nothing, and why.

    Read off the run: whether the part was searched, what its search and its gap
    sub-questions' kept (``evidence``), whether that is out of date, and whether other
    sections cite it (``cited``). "Nothing was found" only when they kept nothing, with the
    search's own reason when it gave one.
    """
    results = state.get("results", {})
    result = results.get(sub_id)
    if result is None:
        return f"{NOTHING_FOR_PART} (it was not searched)."
    ledger = state.get("ledger", {})
    gaps = [
        results[g]
        for s in state["plan"]
        if s.get("gap_for") == sub_id and (g := s["id"]) in results
    ]
    found = [i for r in [result, *gaps] for i in r.get("evidence", []) if i in ledger]
    if not found:
        done = result["status"] == "done"
        reason = result["reason"] or ("nothing relevant was retrieved" if done else "")
        return f"{NOTHING_FOR_PART} ({reason or result['status']})."
    current = list(dict.fromkeys(i for i in found if not ledger[i]["deprecated"]))
    if not current:
        return f"{ONLY_OUT_OF_DATE}."
    if all(i in cited for i in current):
        return f"{QUOTED_ELSEWHERE}."
    return f"{len(current)} {NONE_QUOTED}."


def in_plan_order(
    state: ResearchState,
    written: dict[str, tuple[str, list[str]]],
    named: set[str],
    cited: frozenset[str] = frozenset(),
) -> list[tuple[str, list[str]]]:
    """The written sections, and one saying so for each asked part nothing answered.

    An empty part's section follows the section of the part planned before it. A part the
    request named is a section of the report even when its search found nothing
    ("timeouts, retries and connection pooling": three sections, one of them perhaps empty,
    and saying so); its gap sub-question's section answers it. Topics found in the sources
    are not asked for and appear only when written. (A model's edit may have reordered the
    written sections: that order stands.) ``named``: the titles of the parts the request
    names (``Verified.parts``); ``cited``: the passages the written sections quote. An empty
    part's section says why it is empty (``nothing_quoted``).
    """
    plan = state["plan"]
    answered_by_gap = {s["gap_for"] for s in plan if s.get("gap_for") and s["id"] in written}
    order = list(written)
    for n, sub in enumerate(plan):
        if sub["id"] in written or sub.get("title") not in named:
            continue
        if sub["id"] in answered_by_gap:
            continue
        title = sub.get("title") or sub["question"]
        written = {**written, sub["id"]: (title, [nothing_quoted(state, sub["id"], cited)])}
        before = [s["id"] for s in plan[:n] if s["id"] in order]
        order.insert(order.index(before[-1]) + 1 if before else 0, sub["id"])
    return [written[i] for i in order]


async def check_report(
    state: ResearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Verify the sections against the ledger, number the references, write the report."""
    ledger = state.get("ledger", {})
    checked = report_reader_for(services, state, runtime.context).check(state)
    numbers, dropped = checked.numbers, checked.dropped
    lines = [f"# {state['question']}", ""]
    body: list[str] = []
    contents: list[str] = []
    for title, paragraphs in in_plan_order(
        state, checked.written, checked.parts, frozenset(numbers)
    ):
        contents.append(title)
        body += [f"## {title}", "", *paragraphs, ""]
    lines += ["## Contents", ""] + [f"{i}. {t}" for i, t in enumerate(contents, 1)] + [""]
    lines += body
    if checked.disagreements:
        lines += ["## Sources disagree or are out of date", "", *checked.disagreements, ""]
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
