"""``prepare``: validate the question, resolve user, sources and mode, start a fresh budget."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from nodes.context import Context
from nodes.evidence import now, user_of
from nodes.services import get_services
from state.budget import new_budget
from state.events import node_event
from state.reducers import replace
from state.schemas import SearchState

MAX_QUESTION_CHARS = 4000


async def prepare(state: SearchState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Check the input and reset everything that belongs to the previous question."""
    ctx = runtime.context
    services = get_services("prepare")
    question = (state.get("question") or "").strip()
    if not question:
        raise ValueError("prepare: the question is empty; ask something")
    if len(question) > MAX_QUESTION_CHARS:
        raise ValueError(
            f"prepare: the question has {len(question)} characters; the limit is "
            f"{MAX_QUESTION_CHARS}"
        )
    if not ctx.user:
        raise ValueError(
            "prepare: no user is set for this run; pass it in the run's context, e.g. "
            '{"user": "bob"} (LangGraph Studio: the assistant\'s Context tab; the SDK: '
            "context={...}). Permissions follow that user."
        )
    user_of(services, ctx)  # unknown users stop here
    sources = [s.name for s in services.registry.select(ctx.sources)]  # unknown ones stop here
    model = ctx.model or services.model_name
    if ctx.mode == "extractive":
        mode = "extractive"
    elif ctx.mode == "llm":
        if ctx.model and ctx.model not in services.chat_models and ctx.model != services.model_name:
            raise ValueError(f"prepare: model {ctx.model!r} is not configured")
        if services.chat_model is None and not services.chat_models:
            raise ValueError("prepare: LLM mode asked for, but no chat model is configured")
        mode = "llm"
    else:
        mode = "llm" if services.chat_model is not None else "extractive"
    notes = []
    has_images = bool(state.get("images")) or any(t.get("images") for t in state.get("turns", []))
    if has_images and ctx.model and ctx.model != services.vision_model_name:
        raise ValueError(
            f"prepare: this thread holds images and model {ctx.model!r} cannot read them; "
            + (
                f"ask with the vision model {services.vision_model_name!r} or without a model"
                if services.vision_model_name
                else "configure a vision model (SEEKGRAPH_VISION_LLM_MODEL)"
            )
        )
    if has_images and mode == "llm" and services.vision_model is not None:
        model = services.vision_model_name
    elif has_images and mode == "llm":
        notes.append("Images were attached but no vision model is configured to read them.")
    elif has_images:
        notes.append("Images were attached but extractive mode cannot read them.")
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
        "question": question,
        "mode": mode,
        "sources": sources,
        "model": model if mode == "llm" else None,
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
        "notes": notes,
    }
    runtime.stream_writer(
        node_event(
            "prepare", f"{mode} mode; searching {', '.join(sources)}", mode=mode, sources=sources
        )
    )
    return update
