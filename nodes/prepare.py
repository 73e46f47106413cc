"""``prepare``: validate the question, resolve user, sources and mode, start a fresh budget."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from nodes.admission import admit
from nodes.context import Context
from nodes.evidence import now
from nodes.services import Services, node_name
from state.budget import new_budget
from state.events import node_event
from state.reducers import replace
from state.schemas import SearchState


async def prepare(
    state: SearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Check the input and reset everything that belongs to the previous question."""
    ctx = runtime.context
    has_images = bool(state.get("images")) or any(t.get("images") for t in state.get("turns", []))
    admitted = admit(services, ctx, state.get("question") or "", has_images)
    mode, sources = admitted.mode, admitted.sources
    t = now()
    # What the previous question of the thread left behind is cleared; keys that are already
    # empty are not written again, which keeps the first checkpoint of a thread small.
    resets: dict[str, Any] = {
        "variants": [],
        "tried_queries": replace(),
        "hits": replace(),
        "evidence": replace(),
        "source_failures": replace(),
        "model_calls": replace(),
        "documents_read": replace(),
        "filter_log": [],
        "bridge_terms": [],
        "answer": "",
        "citations": [],
        "conflicts": [],
        "unanswered": [],
        "forced_reason": None,
    }
    update: dict[str, Any] = {k: v for k, v in resets.items() if state.get(k)}
    update |= {
        "question": admitted.question,
        "mode": mode,
        "sources": sources,
        "model": admitted.model,
        "budget": new_budget(
            now=t,
            max_rounds=ctx.max_rounds,
            max_tokens=ctx.max_tokens,
            max_seconds=ctx.max_seconds,
            max_bad_attempts=ctx.max_bad_attempts,
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
    }
    runtime.stream_writer(
        node_event(
            node_name("prepare"),
            f"{mode} mode; searching {', '.join(sources)}",
            mode=mode,
            sources=sources,
        )
    )
    return update
