"""``integrate``: write the answer from the evidence, ranked by authority, citing every claim.

Both modes share the bookkeeping: deprecated documents replaced by their newer version,
conflicts between sources detected and resolved by authority (then recency), and an honest
list of what is missing. Extractive mode quotes the most relevant sentences; LLM mode streams
a written answer.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

from langchain_core.messages import BaseMessageChunk, HumanMessage
from langgraph.runtime import Runtime

from nodes.answerable import not_answered
from nodes.attribution import wrong_person
from nodes.conflicts import conflict_lines, current_first, find_conflicts
from nodes.context import Context
from nodes.evidence import by_authority, kept, only_changed, relevance
from nodes.extractive import (
    NOTHING_FOUND,
    extractive_answer,
    extractive_body,
)
from nodes.prompting import conversation_of, render_evidence
from nodes.prompts import FORCED_NOTE
from nodes.services import Services, chat_model_for, node_name, now
from providers.chat import (
    AnswerInterruptedError,
    ChatModel,
    ModelClientError,
    ModelError,
    classify,
    served_by,
    usage_tokens,
)
from state.budget import exhausted, spend
from state.events import TokenEvent, node_event
from state.models import Evidence, ImageRef, ModelCall, heading_of
from state.schemas import SearchState


def resolve_versions(evidence: list[Evidence]) -> tuple[list[Evidence], list[str]]:
    """Drop deprecated evidence whose newer version was found; say what was done."""
    by_doc: dict[str, Evidence] = {}
    for ev in by_authority(evidence):
        by_doc.setdefault(ev["doc_id"], ev)
    pool: list[Evidence] = []
    notes: list[str] = []
    for ev in evidence:
        if not ev["deprecated"]:
            pool.append(ev)
            continue
        replacement = by_doc.get(ev["superseded_by"] or "")
        note = (
            f"“{ev['title']}” is deprecated; used its newer version “{replacement['title']}” "
            f"[src:{replacement['source_id']}] instead."
            if replacement is not None
            else f"“{ev['title']}” is marked deprecated and no newer version was found; "
            f"check it before relying on it [src:{ev['source_id']}]."
        )
        if note not in notes:
            notes.append(note)
        if replacement is None:
            pool.append(ev)
    return pool, notes


#: In chat, people paraphrase: one question word missing from every message found is not
#: reported; two or more are.
CHAT_MISSING_WORDS = 2


def unanswered_of(
    state: SearchState, ctx: Context, forced: str | None, pool: list[Evidence]
) -> list[str]:
    """What the answer cannot cover, in plain words."""
    items: list[str] = []
    verdict = state["verdict"]
    chat = bool(pool) and pool[0]["kind"] == "messages"
    if not pool:
        items.append("Nothing in your sources matched the question.")
    elif (
        verdict["coverage"] < ctx.coverage_threshold
        and verdict["missing"]
        and (not chat or len(verdict["missing"]) >= CHAT_MISSING_WORDS)
    ):
        items.append(f"No source found mentions: {', '.join(verdict['missing'])}.")
    failed = {f["source"]: f["error"] for f in state.get("source_failures", [])}
    for name, error in failed.items():
        items.append(f"Source “{name}” was unavailable ({error}); its results are missing.")
    if forced:
        items.append(f"Stopped searching: {forced}.")
    return items


async def stream_answer(
    model: ChatModel, content: str | list[dict[str, Any]], runtime: Runtime[Context]
) -> tuple[str, int, str]:
    """Stream the answer as token events: (text, tokens, model that served).

    Failover happens only before the first token (``load_chat_model``); after it, a failure
    raises ``AnswerInterruptedError`` rather than starting over with another model.
    """
    parts: list[str] = []
    final: BaseMessageChunk | None = None
    request: Any = content
    if isinstance(content, list):
        request = [HumanMessage(content=[dict(part) for part in content])]
    try:
        async for chunk in model.astream(request):
            text = chunk.content if isinstance(chunk.content, str) else ""
            if text:
                parts.append(text)
                token: TokenEvent = {"event": "token", "text": text}
                runtime.stream_writer(token)
            if isinstance(chunk, BaseMessageChunk):
                final = chunk if final is None else final + chunk
    except Exception as exc:  # noqa: BLE001 - classified below
        if parts:
            raise AnswerInterruptedError(
                f"the chat model failed after {len(parts)} answer tokens "
                f"({type(exc).__name__}); resume the run to write the answer again"
            ) from exc
        raise classify(exc) from exc
    tokens = usage_tokens(final) if final is not None else 0
    return "".join(parts).strip(), tokens, served_by(final) if final is not None else "unknown"


def with_images(
    prompt: str, images: list[ImageRef], services: Services, user: str
) -> str | list[dict[str, Any]]:
    """The prompt, with the question's images as data URLs when there are any to send."""
    if not images or services.image_loader is None:
        return prompt
    parts: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
    for ref in images:
        data = services.image_loader(user, ref)
        if data is None:
            continue
        url = f"data:{ref['media_type']};base64,{base64.b64encode(data).decode()}"
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


#: Bytes of images replayed to the vision model, newest first (this question's, then earlier).
IMAGE_BYTES_BUDGET = 12_000_000


def images_in_budget(state: SearchState) -> list[ImageRef]:
    """Images to send: the question's own, then earlier turns' newest first, within budget."""
    chosen: list[ImageRef] = []
    spent = 0
    earlier = [ref for turn in reversed(state.get("turns", [])) for ref in turn.get("images", [])]
    for ref in [*state.get("images", []), *earlier]:
        if ref["sha256"] in {c["sha256"] for c in chosen}:
            continue
        if spent + ref["bytes"] > IMAGE_BYTES_BUDGET:
            break
        chosen.append(ref)
        spent += ref["bytes"]
    return chosen


async def integrate(
    state: SearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Write the answer; when the budget is spent, answer anyway and say what is missing."""
    ctx = runtime.context
    budget = state["budget"]
    forced = exhausted(budget) if state["verdict"]["action"] != "answer" else None
    evidence = kept(state.get("evidence", []))
    pool, notes = resolve_versions(by_authority(evidence))
    model = chat_model_for(services, state)
    lines, relevant, scored = await extractive_answer(state, ctx, pool, services)
    quoted = [(s, ev) for s, ev, _ in scored]
    # With bridge rounds on, questions are multi-hop: the answer's words are not the
    # question's, so quotes are not judged by them.
    gaps, nothing_answers = (
        ([], False)
        if ctx.bridge_rounds > 0
        else not_answered(
            state["question"],
            quoted,
            [score for _, _, score in scored],
            {ev["source_id"]: heading_of(ev) for _, ev in quoted},
        )
    )
    today = dt.datetime.fromtimestamp(now(), dt.UTC).date()
    conflicts = find_conflicts(relevant, today)
    lines = current_first(lines, conflicts)
    tokens = 0
    calls: list[ModelCall] = []
    mode = "extractive"
    if not pool:
        body = NOTHING_FOUND
    elif model is not None:
        prompt = ctx.integrate_prompt.format(
            today=today.isoformat(),
            question=state["question"],
            conversation=conversation_of(state) or "none",
            sources=render_evidence(pool[:12]),
            notes="\n".join(notes + conflict_lines(conflicts)) or "none",
            forced=FORCED_NOTE.format(reason=forced) if forced else "",
        )
        content = with_images(prompt, images_in_budget(state), services, ctx.user)
        try:
            body, tokens, served = await stream_answer(model, content, runtime)
            mode = "llm"
            calls.append(
                {
                    "node": node_name("integrate"),
                    "model": served,
                    "outcome": "ok",
                    "detail": "",
                    "tokens": tokens,
                }
            )
        except ModelClientError as exc:
            raise ModelClientError(f"integrate: {exc}") from exc
        except AnswerInterruptedError:
            raise
        except ModelError as exc:
            calls.append(
                {
                    "node": node_name("integrate"),
                    "model": "none",
                    "outcome": "degraded",
                    "detail": f"{exc}; wrote an extractive answer",
                    "tokens": 0,
                }
            )
            body = extractive_body(lines, quoted, gaps if nothing_answers else [])
    else:
        body = extractive_body(lines, quoted, gaps if nothing_answers else [])
    if mode == "extractive" and notes and not nothing_answers:  # conflicts travel apart, shown once
        body += "\n\n" + "\n".join(notes)
    unanswered = unanswered_of(state, ctx, forced, pool)
    if mode == "extractive" and gaps:  # says it more precisely than word coverage does
        unanswered = [u for u in unanswered if not u.startswith("No source found mentions")]
        unanswered.insert(0, f"No source found says: {', '.join(gaps)}.")
    if mode == "extractive" and (
        someone_else := await wrong_person(state["question"], pool, services.reranker)
    ):
        unanswered.insert(0, someone_else)
    if unanswered and mode == "extractive":
        body += "\n\nMissing: " + " ".join(unanswered)
    runtime.stream_writer(
        node_event(
            node_name("integrate"),
            f"{mode} answer from {len(pool)} passages"
            + (f", {len(conflicts)} conflict(s)" if conflicts else "")
            + (f"; forced: {forced}" if forced else ""),
            conflicts=len(conflicts),
            notes=notes,
        )
    )
    update: dict[str, Any] = {
        "answer": body,
        "mode": mode,
        "conflicts": conflicts,
        "unanswered": unanswered,
        "notes": notes,
        "forced_reason": forced,
    }
    if tokens:
        update["budget"] = spend(budget, now=now(), tokens=tokens)
    update = only_changed(state, update)
    if calls:
        update["model_calls"] = calls
    return update


__all__ = ["integrate", "relevance"]
