"""``prepare``: admit the run (question, user, sources, mode, model) and start its budget."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.admission import admit
from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services, node_name, now, user_of
from seekgraph.nodes.plumbing.visibility import revoked, without
from seekgraph.providers.pace import fitted_seconds, seconds_per_call
from seekgraph.state.budget import new_budget
from seekgraph.state.events import node_event
from seekgraph.state.schemas import SearchState


async def prepare(
    state: SearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Admit the run and start the question's budget (its state starts empty each time)."""
    ctx = runtime.context
    has_images = bool(state.get("images")) or any(t.get("images") for t in state.get("turns", []))
    await services.registry.refresh_sources()  # sources added since, read off the loop
    admitted = admit(services, ctx, state.get("question") or "", has_images)
    mode, sources = admitted.mode, admitted.sources
    t = now()
    model = admitted.model if mode == "llm" else None
    seconds = fitted_seconds(
        ctx.budget.max_seconds, model, ctx.max_rounds, ctx.budget.fit_seconds_to_model
    )
    paced = (
        f"; {model} takes {seconds_per_call(model) or 0:.1f} s a call here, so this run has "
        f"{seconds:.0f} s (max_seconds {ctx.budget.max_seconds:g})"
        if seconds > ctx.budget.max_seconds
        else ""
    )
    update: dict[str, Any] = {
        "question": admitted.question,
        "mode": mode,
        "sources": sources,
        "model": admitted.model,
        "budget": new_budget(
            now=t,
            max_rounds=ctx.max_rounds,
            max_tokens=ctx.budget.max_tokens,
            max_seconds=seconds,
            max_bad_attempts=ctx.budget.max_bad_attempts,
        ),
        "verdict": {
            "action": "search",
            "reason": "nothing searched yet",
            "coverage": 0.0,
            "missing": [],
            "read_doc_ids": [],
            "gap_questions": [],
        },
        "notes": admitted.notes,
        "outbound": [n for n in sources if getattr(services.registry.get(n), "outbound", False)],
        "web_queries": [],
        "web_spent": {"pages": 0, "bytes": 0, "seconds": 0.0},
    }
    turns = state.get("turns") or []
    if turns:  # a follow-up never builds on an answer its person may no longer read
        gone = await revoked(services.registry, await user_of(services, ctx), turns)
        if gone:
            update["turns"] = without(turns, gone)
    runtime.stream_writer(
        node_event(
            node_name("prepare"),
            f"{mode} mode; searching {', '.join(sources)}{paced}",
            mode=mode,
            sources=sources,
            max_seconds=round(seconds, 1),
        )
    )
    return update
