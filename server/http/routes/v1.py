"""The OpenAI-compatible door: ``GET /v1/models`` and ``POST /v1/chat/completions``.

Any chat UI, the ``openai`` SDK or LangChain's ``ChatOpenAI`` can use seekgraph as a model.
The last user message is the question; a thread is kept by sending its id (``thread_id`` in
the body, e.g. ``extra_body``, or the ``X-Seekgraph-Thread-Id`` header) — without one every
request starts a new thread, whose id comes back in the ``X-Seekgraph-Thread-Id`` header and
in the ``seekgraph`` field. A retry of the same question on a thread whose run is still going
(or stopped half-way) follows that run instead of starting another.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, HTTPException
from fastapi.responses import JSONResponse, StreamingResponse

from seekgraph.graph.flows import FLOWS
from seekgraph.graph.inspect import question_state
from seekgraph.server.http.api_models import ChatMessage, ChatRequest, RunRequest
from seekgraph.server.http.chat_completions import Completion, usage_of
from seekgraph.server.http.deps import SSE_HEADERS, Runs, SettingsDep, UserDep
from seekgraph.server.service.sse import with_heartbeats
from seekgraph.server.service.streams import events

router = APIRouter(prefix="/v1", tags=["openai"])

#: Flows served as models.
MODELS = {flow.graph_name: f"the {name} flow: {flow.description}" for name, flow in FLOWS.items()}
FLOW_OF_MODEL = {flow.graph_name: name for name, flow in FLOWS.items()}
THREAD_HEADER = "X-Seekgraph-Thread-Id"


@router.get("/models")
async def list_models(user: UserDep) -> dict[str, Any]:
    """The flows, listed as models."""
    return {
        "object": "list",
        "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "seekgraph", "about": about}
            for name, about in MODELS.items()
        ],
    }


def question_of(messages: list[ChatMessage]) -> tuple[str, list[str]]:
    """The last user message's text and its images (as data URLs)."""
    last = next((m for m in reversed(messages) if m.role == "user"), None)
    if last is None:
        raise HTTPException(422, "messages: send at least one message with role 'user'")
    if isinstance(last.content, str) or last.content is None:
        return last.content or "", []
    texts: list[str] = []
    images: list[str] = []
    for n, part in enumerate(last.content, start=1):
        if part.type == "text":
            texts.append(part.text or "")
        elif part.type == "image_url":
            url = part.image_url.get("url") if isinstance(part.image_url, dict) else part.image_url
            if not isinstance(url, str) or not url.startswith("data:"):
                raise HTTPException(
                    422,
                    f"message part {n}: remote image URLs are not fetched; send the image "
                    "as a data: URL (data:image/png;base64,...)",
                )
            images.append(url)
        else:
            raise HTTPException(422, f"message part {n}: type {part.type!r} is not supported")
    return "\n".join(t for t in texts if t), images


@router.post("/chat/completions", response_model=None)
async def chat_completions(
    runs: Runs,
    settings: SettingsDep,
    user: UserDep,
    body: ChatRequest,
    thread_header: Annotated[str | None, Header(alias=THREAD_HEADER, max_length=200)] = None,
) -> StreamingResponse | JSONResponse:
    """Answer the last user message with a run of the flow the model names."""
    if body.model not in MODELS:
        raise HTTPException(
            404, f"no model {body.model!r}; models: {', '.join(MODELS)} (GET /v1/models)"
        )
    question, images = question_of(body.messages)
    request = RunRequest(
        question=question,
        images=images,
        sources=body.sources,
        mode=body.mode,
        flow=FLOW_OF_MODEL[body.model],
    )
    thread_id = await runs.thread_for(user, body.thread_id or thread_header)
    frames, run_id = await runs.run_frames(user, thread_id, request)
    completion = Completion(
        completion_id=f"chatcmpl-{run_id or uuid.uuid4().hex[:12]}",
        model=body.model,
        thinking=settings.openai_thinking,
    )
    headers = {THREAD_HEADER: thread_id}

    async def usage() -> dict[str, int]:
        return usage_of(await question_state(await runs.graph_of(thread_id), thread_id))

    if not body.stream:
        async for event, data in events(frames):
            completion.on_event(event, data)
        result = completion.message(await usage(), thread_id, run_id)
        return JSONResponse(result, headers=headers)

    async def stream() -> AsyncIterator[bytes]:
        first = completion.chunk({"role": "assistant", "content": ""})
        first["seekgraph"] = {"thread_id": thread_id, "run_id": run_id}
        yield sse_data(first)
        async for event, data in events(frames):
            for chunk in completion.on_event(event, data):
                yield sse_data(chunk)
        yield sse_data(completion.finish(await usage()))
        yield b"data: [DONE]\n\n"

    return StreamingResponse(
        with_heartbeats(stream(), settings.heartbeat_seconds),
        media_type="text/event-stream",
        headers={**SSE_HEADERS, **headers},
    )


def sse_data(chunk: dict[str, Any]) -> bytes:
    """One ``data:`` line as OpenAI streams it."""
    return b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n"


#: OpenAI's error type for each status this door answers with.
