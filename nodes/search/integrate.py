"""``integrate``: write the answer from the evidence, ranked by authority, citing every claim.

The flow's bookkeeping is here: a web result's snippet is never evidence (its page is, once
read), deprecated documents are replaced by their newer version, a spent budget is said, and
what the answer cannot cover is listed. The reader writes the answer (``Reader.answer``):
quoted sentences or the closest passages offline, a streamed and guarded reply in LLM mode.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import by_authority, kept, only_changed
from seekgraph.nodes.plumbing.prompts import TOKENS_SPENT
from seekgraph.nodes.plumbing.services import Services, node_name, now
from seekgraph.nodes.plumbing.writing import resolve_versions, unanswered_of
from seekgraph.nodes.reader import reader_for
from seekgraph.state.budget import exhausted, spend
from seekgraph.state.events import node_event
from seekgraph.state.models import is_pointer
from seekgraph.state.schemas import SearchState


async def integrate(
    state: SearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Write the answer; when the budget is spent, answer anyway and say what is missing."""
    ctx = runtime.context
    budget = state["budget"]
    forced = exhausted(budget) if state["verdict"]["action"] != "answer" else None
    evidence = kept(state.get("evidence", []))
    # a web result's snippet points to a page: the page's passages answer, never the snippet
    pointers = [ev for ev in evidence if is_pointer(ev)]
    read = {ev["doc_id"] for ev in evidence if ev["kind"] == "web" and not is_pointer(ev)}
    unreadable = [ev for ev in pointers if ev["doc_id"] not in read]
    pool, notes = resolve_versions(by_authority([ev for ev in evidence if not is_pointer(ev)]))
    if state.get("mode") == "llm" and budget["tokens_used"] >= budget["max_tokens"]:
        notes = [*notes, TOKENS_SPENT.format(used=budget["tokens_used"], most=budget["max_tokens"])]
    unanswered = unanswered_of(state, ctx, forced, pool)
    unanswered += [
        f"The page “{ev['title']}” ({ev['url'] or ev['doc_id']}) could not be read; a search "
        "engine's snippet of it is not evidence."
        for ev in {e["doc_id"]: e for e in unreadable}.values()
    ]
    reader = reader_for(services, state, ctx)
    written = await reader.answer(state, runtime, pool, notes, forced, unanswered)
    status, conflicts = written.reply.status, written.conflicts
    runtime.stream_writer(
        node_event(
            node_name("integrate"),
            f"{written.mode} answer ({status}) from {len(pool)} passages"
            + (f", {len(conflicts)} conflict(s)" if conflicts else "")
            + (f"; forced: {forced}" if forced else ""),
            conflicts=len(conflicts),
            notes=notes,
        )
    )
    update: dict[str, Any] = {
        "answer": written.reply.body,
        "status": status,
        "mode": written.mode,
        "conflicts": conflicts,
        "unanswered": written.unanswered,
        "notes": notes,
        "forced_reason": forced,
    }
    if written.tokens:
        update["budget"] = spend(budget, now=now(), tokens=written.tokens)
    update = only_changed(state, update)
    if written.calls:
        update["model_calls"] = written.calls
    return update
