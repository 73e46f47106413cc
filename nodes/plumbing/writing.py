"""Writing an answer, for any flow's nodes: versions, what is missing, the streamed text.

``integrate`` (the search flow's answer) and a report's sections use the same pieces:
deprecated evidence replaced by its newer version, the honest list of what is missing, the
answer streamed as ``token`` events (failover only before the first token), and the thread's
images sent to a vision model within a byte budget.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from typing import Any

from langchain_core.messages import BaseMessageChunk, HumanMessage
from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import by_authority
from seekgraph.nodes.plumbing.services import Services
from seekgraph.providers import pace
from seekgraph.providers.chat import (
    AnswerInterruptedError,
    ChatModel,
    ModelError,
    ModelUnavailableError,
    ThinkFilter,
    classify,
    served_by,
    serving_of,
    usage_tokens,
)
from seekgraph.state.events import TokenEvent
from seekgraph.state.models import Evidence, ImageRef
from seekgraph.state.schemas import SearchState

#: In chat, people paraphrase: one question word missing from every message found is not
#: reported; two or more are.
CHAT_MISSING_WORDS = 2


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


#: How a reply says that the search ran out of rounds or time (``unanswered_of``).
STOPPED = "Stopped searching"


def stopped_line(forced: str, max_rounds: int) -> str:
    """What a reply says of a search that stopped: in a person's words, not the budget's."""
    if forced == f"all {max_rounds} search rounds used":
        searches = "1 search" if max_rounds == 1 else f"{max_rounds} searches in different words"
        return f"{STOPPED} after {searches}."
    return f"{STOPPED}: {forced}."


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
        verdict["coverage"] < ctx.offline.coverage_threshold
        and verdict["missing"]
        and (not chat or len(verdict["missing"]) >= CHAT_MISSING_WORDS)
    ):
        items.append(f"No source found mentions: {', '.join(verdict['missing'])}.")
    failed = {f["source"]: f["error"] for f in state.get("source_failures", [])}
    for name, error in failed.items():
        items.append(f"Source “{name}” was unavailable ({error}); its results are missing.")
    if forced:
        items.append(stopped_line(forced, state["budget"]["max_rounds"]))
    return items


async def stream_answer(
    model: ChatModel, content: str | list[dict[str, Any]], runtime: Runtime[Context]
) -> tuple[str, int, str]:
    """Stream the answer as token events: (text, tokens, model that served)."""
    text, tokens, served, _ = await stream_reply(model, content, runtime)
    return text, tokens, served


async def stream_reply(
    model: ChatModel, content: str | list[dict[str, Any]], runtime: Runtime[Context]
) -> tuple[str, int, str, str]:
    """Stream the answer as token events: (text, tokens, model that served, finish reason).

    The finish reason is the server's ("stop", "length"), or "" when it gave none.

    Failover happens only before the first token (``load_chat_model``); after it, a failure
    raises ``AnswerInterruptedError`` rather than starting over with another model.
    """
    parts: list[str] = []
    final: BaseMessageChunk | None = None
    request: Any = content
    if isinstance(content, list):
        request = [HumanMessage(content=[dict(part) for part in content])]
    thinking = ThinkFilter()  # a reasoning model's <think> block is not the answer

    def emit(text: str) -> None:
        if text:
            parts.append(text)
            token: TokenEvent = {"event": "token", "text": text}
            runtime.stream_writer(token)

    serving = serving_of(model)
    started = time.monotonic()
    stream = model.astream(request).__aiter__()
    began = False  # a first chunk came (reasoning counts: the model is answering)
    try:
        while True:
            wait = serving.get("idle_s" if began else "first_token_s")
            try:
                chunk = await asyncio.wait_for(anext(stream), wait)
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise _silence(began, wait) from None
            began = True
            emit(thinking.feed(chunk.content if isinstance(chunk.content, str) else ""))
            if isinstance(chunk, BaseMessageChunk):
                final = chunk if final is None else final + chunk
        emit(thinking.flush())
    except Exception as exc:  # noqa: BLE001 - classified below
        if parts:
            raise AnswerInterruptedError(
                f"the chat model failed after {len(parts)} answer tokens "
                f"({type(exc).__name__}); resume the run to write the answer again"
            ) from exc
        raise classify(exc) from exc
    finally:
        with contextlib.suppress(Exception):
            await stream.aclose()  # type: ignore[attr-defined]
    if final is not None and cut_short(final):
        why = (
            "the chat model's server ended the reply before it finished (no finish reason; "
            "llama.cpp's Python server does this to a reply when another request comes: "
            "start it with --interrupt_requests False)"
        )
        if parts:
            raise AnswerInterruptedError(f"{why}; resume the run to write the answer again")
        raise ModelUnavailableError(why)
    tokens = usage_tokens(final) if final is not None else 0
    served = served_by(final) if final is not None else "unknown"
    pace.record(serving.get("name") or served, time.monotonic() - started)
    finish = str((final.response_metadata or {}).get("finish_reason") or "") if final else ""
    return "".join(parts).strip(), tokens, served, finish


def cut_short(reply: BaseMessageChunk) -> bool:
    """An OpenAI-compatible stream that ended without saying why it ended.

    Such a server gives the reason ("stop", "length") in its last chunk; a stream that stops
    without one was cut off (llama.cpp's Python server ends a streamed reply this way, with a
    normal end of stream, when a second request arrives). Other clients' replies (a test's
    fake model) are not judged.
    """
    meta = reply.response_metadata or {}
    return meta.get("model_provider") == "openai" and not meta.get("finish_reason")


def _silence(began: bool, seconds: float | None) -> ModelError:
    """The error for a model that went quiet, naming the setting that allows it longer."""
    if not began:
        return ModelUnavailableError(
            f"the chat model sent no first token within {seconds:g} s (a slow local model "
            "reads the prompt first: raise SEEKGRAPH_LLM_FIRST_TOKEN_TIMEOUT)"
        )
    return ModelUnavailableError(
        f"the chat model went silent for {seconds:g} s mid-answer (SEEKGRAPH_LLM_TIMEOUT)"
    )


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
