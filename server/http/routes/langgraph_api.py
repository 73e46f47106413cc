"""The LangGraph protocol door: what ``langgraph_sdk``'s client uses, under ``/langgraph``.

``get_client(url="https://host/langgraph", api_key=KEY)`` works against a production
seekgraph: threads (create, get, search), runs streamed (``values``, ``updates``, ``custom``)
and joined with ``Last-Event-ID``, state, history, ``update_state`` and ``Command(resume=…)``
— behind the same API keys (``x-api-key`` or ``Authorization: Bearer``), on the same run
manager (several instances, resumable). The assistant is the graph ``search``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import StreamingResponse
from langgraph.types import StateSnapshot
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from seekgraph.graph.api import User
from seekgraph.graph.context import FLAT_NAMES, REQUEST_KNOBS
from seekgraph.graph.flows import FLOWS
from seekgraph.graph.inspect import flow_steps
from seekgraph.graph.run import jsonable
from seekgraph.server.http.deps import Runs, Sse, current_user
from seekgraph.server.service.errors import BadInputError, ConflictError, NotFoundError
from seekgraph.server.service.requests import RunRequest
from seekgraph.server.service.run_service import RunService, Started, thread_id_of
from seekgraph.server.service.sse import event_data

router = APIRouter(prefix="/langgraph", tags=["langgraph"])

#: Graphs served as assistants (the names of ``langgraph.json``).
ASSISTANTS = {name: flow.graph_name for name, flow in FLOWS.items()}
#: Events every stream carries whatever modes were asked for.
ALWAYS = {"metadata", "end", "error"}


async def protocol_user(request: Request, runs: Runs) -> User:
    """The caller, from ``x-api-key`` (the SDK's header) or ``Authorization: Bearer``."""
    key = request.headers.get("x-api-key", "").strip()
    if key:
        return await runs.user_for_key(key, "langgraph")
    return await current_user(request, runs)


ProtocolUser = Annotated[User, Depends(protocol_user)]


def now() -> str:
    """The time, ISO 8601 in UTC."""
    return dt.datetime.now(dt.UTC).isoformat()


def checkpoint_of(config: Any) -> dict[str, Any] | None:
    """The protocol's checkpoint reference of a config."""
    configurable = (config or {}).get("configurable") or {}
    if "checkpoint_id" not in configurable:
        return None
    return {
        "thread_id": configurable.get("thread_id"),
        "checkpoint_ns": configurable.get("checkpoint_ns", ""),
        "checkpoint_id": configurable["checkpoint_id"],
    }


def snapshot_json(snap: StateSnapshot) -> dict[str, Any]:
    """A checkpoint as the protocol shows it."""
    interrupts = [{"id": i.id, "value": jsonable(i.value)} for i in snap.interrupts]
    return {
        "values": jsonable(snap.values or {}),
        "next": list(snap.next),
        "tasks": [
            {
                "id": t.id,
                "name": t.name,
                "error": t.error,
                "interrupts": [{"id": i.id, "value": jsonable(i.value)} for i in t.interrupts],
            }
            for t in snap.tasks
        ],
        "checkpoint": checkpoint_of(snap.config),
        "parent_checkpoint": checkpoint_of(snap.parent_config),
        "metadata": jsonable(snap.metadata or {}),
        "created_at": snap.created_at,
        "interrupts": interrupts,
    }


async def thread_json(runs: RunService, thread_id: str, owner: str) -> dict[str, Any]:
    """A thread as the protocol shows it."""
    snap = await runs.state_of(thread_id)
    status = "busy" if runs.busy(thread_id) else "idle"
    if snap.interrupts:
        status = "interrupted"
    return {
        "thread_id": thread_id,
        "created_at": snap.created_at or now(),
        "updated_at": snap.created_at or now(),
        "metadata": {"owner": owner, "title": await runs.title(thread_id)},
        "status": status,
        "values": jsonable(snap.values or {}),
        "interrupts": {
            t.id: [{"id": i.id, "value": jsonable(i.value)} for i in t.interrupts]
            for t in snap.tasks
            if t.interrupts
        },
    }


class ThreadCreate(BaseModel):
    """``threads.create``."""

    model_config = ConfigDict(extra="ignore")

    thread_id: str | None = Field(default=None, max_length=200)
    metadata: dict[str, Any] = Field(default_factory=dict)
    if_exists: str | None = None


@router.post("/threads")
async def create_thread(runs: Runs, user: ProtocolUser, body: ThreadCreate) -> dict[str, Any]:
    """A new thread owned by the caller, its id chosen here.

    A client may name only a thread it owns (``if_exists="do_nothing"`` returns it, otherwise
    409). Any other id is refused alike whether or not someone else holds it: no squatting
    an id another user will be given, and no learning which ids exist.
    """
    if body.thread_id is None:
        thread_id = await runs.create_thread(user)
        return await thread_json(runs, thread_id, user.name)
    thread_id = thread_id_of(body.thread_id)
    if not await runs.owns(user, thread_id):
        raise BadInputError(
            "thread ids are chosen by the server: create the thread without thread_id"
        )
    if body.if_exists != "do_nothing":
        raise ConflictError(f"thread {thread_id} already exists")
    return await thread_json(runs, thread_id, user.name)


@router.get("/threads/{thread_id}")
async def get_thread(runs: Runs, user: ProtocolUser, thread_id: str) -> dict[str, Any]:
    """One of the caller's threads."""
    thread_id = await runs.own_thread(user, thread_id)
    return await thread_json(runs, thread_id, user.name)


@router.delete("/threads/{thread_id}", status_code=204)
async def delete_thread(runs: Runs, user: ProtocolUser, thread_id: str) -> Response:
    """``threads.delete``: the thread and everything it made, at once."""
    thread_id = await runs.own_thread(user, thread_id)
    await runs.delete_thread(thread_id)
    return Response(status_code=204)


class ThreadSearch(BaseModel):
    """``threads.search``."""

    model_config = ConfigDict(extra="ignore")

    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


@router.post("/threads/search")
async def search_threads(
    runs: Runs, user: ProtocolUser, body: ThreadSearch
) -> list[dict[str, Any]]:
    """The caller's threads, newest first."""
    ids = (await runs.threads_of(user))[body.offset : body.offset + body.limit]
    return [await thread_json(runs, t, user.name) for t in ids]


@router.get("/threads/{thread_id}/state")
async def get_state(runs: Runs, user: ProtocolUser, thread_id: str) -> dict[str, Any]:
    """The thread's latest checkpoint."""
    thread_id = await runs.own_thread(user, thread_id)
    return snapshot_json(await runs.state_of(thread_id))


class StateUpdate(BaseModel):
    """``threads.update_state``."""

    model_config = ConfigDict(extra="ignore")

    values: dict[str, Any] | None = None
    as_node: str | None = None


@router.post("/threads/{thread_id}/state")
async def update_state(
    runs: Runs, user: ProtocolUser, thread_id: str, body: StateUpdate
) -> dict[str, Any]:
    """Write values into the thread's state as a node would (no run may be live).

    A person may edit the answer only: everything else in the state (evidence, turns and
    their images, budgets) is what the server wrote and what its checks rely on.
    """
    thread_id = await runs.own_thread(user, thread_id)
    config = await runs.update_state(thread_id, body.values, body.as_node)
    return {"checkpoint": checkpoint_of(config)}


class HistoryQuery(BaseModel):
    """``threads.get_history``."""

    model_config = ConfigDict(extra="ignore")

    limit: int = Field(default=10, ge=1, le=1000)


@router.post("/threads/{thread_id}/history")
async def get_history(
    runs: Runs, user: ProtocolUser, thread_id: str, body: HistoryQuery
) -> list[dict[str, Any]]:
    """The thread's checkpoints, newest first."""
    thread_id = await runs.own_thread(user, thread_id)
    steps = await flow_steps(await runs.shown_graph_of(thread_id), thread_id)
    return [snapshot_json(snap) for snap, _ in reversed(steps)][: body.limit]


class RunCreate(BaseModel):
    """``runs.stream``: an input (a question) or a command (resume), how to stream it."""

    model_config = ConfigDict(extra="ignore")

    assistant_id: str
    input: dict[str, Any] | None = None
    command: dict[str, Any] | None = None
    stream_mode: str | list[str] = "values"
    context: dict[str, Any] = Field(default_factory=dict)
    webhook: str | None = None
    """Called with the run's record, answer and citations when it ends (signed, retried)."""


def modes_of(stream_mode: str | list[str] | None) -> set[str]:
    """The stream modes asked for (422 for one not served)."""
    modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode or ["values"])
    unknown = set(modes) - {"values", "updates", "custom"}
    if unknown:
        raise HTTPException(
            422, f"stream_mode {sorted(unknown)} is not served; use values, updates, custom"
        )
    return set(modes)


def filtered(frames: AsyncIterator[bytes], modes: set[str]) -> AsyncIterator[bytes]:
    """Only the frames of the modes asked for (and the ones every stream carries)."""

    async def gen() -> AsyncIterator[bytes]:
        async for raw in frames:
            if event_data(raw).get("event") in modes | ALWAYS:
                yield raw

    return gen()


def run_headers(thread_id: str, run_id: str) -> dict[str, str]:
    """Where the SDK finds the run again (it reconnects there on its own)."""
    return {
        "Location": f"/langgraph/threads/{thread_id}/runs/{run_id}/stream",
        "Content-Location": f"/langgraph/threads/{thread_id}/runs/{run_id}",
    }


async def start_protocol_run(
    runs: RunService,
    user: User,
    thread_id: str,
    body: RunCreate,
    background: bool = False,
    strategy: str = "reject",
) -> Started:
    """Start (``input``) or resume (``command.resume``) a run of the body's assistant."""
    flow = next((n for n, g in ASSISTANTS.items() if body.assistant_id in (n, g)), None)
    if flow is None:
        raise NotFoundError(
            f"no assistant {body.assistant_id!r}; assistants: {', '.join(ASSISTANTS)}"
        )
    if body.command is not None:
        if "resume" not in body.command:
            raise BadInputError("command: only resume is served")
        value = body.command["resume"]
        return await runs.resume_run(user, thread_id, value, True, background=background)
    fields = {**(body.input or {}), **body.context}
    allowed = {"question", "images", *REQUEST_KNOBS, *FLAT_NAMES}  # RunRequest regroups
    try:
        request = RunRequest(
            flow=flow,
            stream=not background,
            multitask_strategy=strategy,
            webhook=body.webhook,
            **{k: v for k, v in fields.items() if k in allowed},
        )
    except ValidationError as exc:
        raise RequestValidationError(exc.errors()) from None
    return await runs.start_run(user, thread_id, request, record_protocol=True)


@router.post("/threads/{thread_id}/runs/stream", response_model=None)
async def stream_run(
    runs: Runs, sse: Sse, user: ProtocolUser, thread_id: str, body: RunCreate
) -> StreamingResponse:
    """Start a run (``input``) or resume one that waits (``command.resume``) and stream it."""
    thread_id = await runs.own_thread(user, thread_id)
    modes = modes_of(body.stream_mode)
    started = await start_protocol_run(runs, user, thread_id, body)  # busy: 409
    frames = runs.started_frames(started, user.name, channel="protocol")
    response = sse(filtered(frames, modes), started.run_id)
    response.headers.update(run_headers(thread_id, started.run_id))
    return response


@router.get("/threads/{thread_id}/runs/{run_id}/stream")
async def join_run(
    runs: Runs,
    sse: Sse,
    user: ProtocolUser,
    thread_id: str,
    run_id: str,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    stream_mode: Annotated[list[str] | None, Query()] = None,
) -> StreamingResponse:
    """Join the thread's run (here, on its origin, or continued after its origin died)."""
    thread_id = await runs.own_thread(user, thread_id)
    frames, live_run = await runs.attach_frames(user.name, thread_id, last_event_id, "protocol")
    response = sse(filtered(frames, modes_of(stream_mode)), live_run or run_id)
    response.headers.update(run_headers(thread_id, live_run or run_id))
    return response


@router.post("/assistants/search")
async def search_assistants(user: ProtocolUser) -> list[dict[str, Any]]:
    """The graphs served."""
    return [assistant(name) for name in ASSISTANTS]


@router.get("/assistants/{assistant_id}")
async def get_assistant(user: ProtocolUser, assistant_id: str) -> dict[str, Any]:
    """One graph served."""
    if assistant_id not in ASSISTANTS:
        raise NotFoundError(f"no assistant {assistant_id!r}")
    return assistant(assistant_id)


def assistant(name: str) -> dict[str, Any]:
    """A graph as the protocol's assistant."""
    return {
        "assistant_id": name,
        "graph_id": name,
        "name": ASSISTANTS[name],
        "config": {},
        "context": {},
        "metadata": {},
        "version": 1,
        "created_at": "2026-01-01T00:00:00+00:00",
        "updated_at": "2026-01-01T00:00:00+00:00",
    }
