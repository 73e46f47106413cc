"""Where a run's events come from: starting a run, and attaching to one wherever it lives.

Every door (the native SSE API, the OpenAI-compatible chat, MCP, the LangGraph protocol)
starts runs with ``start_run`` and reads them with ``attach_frames``, so admission rules,
resume, forwarding and takeover are written once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import HTTPException
from fastapi.responses import StreamingResponse
from langgraph.types import Command

from graph.api import AdmissionError, PlanError, User, admit, checked_plan
from graph.context import REQUEST_KNOBS, Context, context_from_dict
from server.api_models import RunRequest
from server.app_state import AppState
from server.caller import CALLER
from server.deps import STORE_DOWN, own_thread
from server.images import ImageError, accept_images, stored_bytes
from server.limits import seconds_to_midnight
from server.resume import forward_frames, open_forward, takeover_frames
from server.runs import RunHandle
from server.sse import (
    BadEventIdError,
    event_data,
    handle_frames,
    parse_last_event_id,
    with_heartbeats,
)
from server.thread_ids import new_thread_id

log = logging.getLogger("seekgraph.runs")

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class RunConflictError(Exception):
    """Another run is live on the thread; ``run_id`` names it (when known)."""

    def __init__(self, thread_id: str, run_id: str | None) -> None:
        super().__init__(
            "a run is already live on this thread; attach to it with "
            f"GET /threads/{thread_id}/stream"
        )
        self.run_id = run_id


def sse(
    app: AppState, frames: AsyncIterator[bytes], run_id: str | None = None
) -> StreamingResponse:
    """An SSE response with heartbeats."""
    headers = dict(SSE_HEADERS)
    if run_id:
        headers["X-Run-Id"] = run_id

    async def counted() -> AsyncIterator[bytes]:
        app.metrics.sse_open.inc()
        try:
            async for raw in with_heartbeats(frames, app.settings.heartbeat_seconds):
                yield raw
        finally:
            app.metrics.sse_open.dec()

    return StreamingResponse(
        counted(),
        media_type="text/event-stream",
        headers=headers,
    )


async def start_run(
    app: AppState, user: User, thread_id: str, body: RunRequest, record_protocol: bool = False
) -> RunHandle:
    """Admit a run on a thread the caller owns and start it in the background.

    Raises ``HTTPException`` (422 bad input, 503 store down) before anything is locked or
    stored, and ``RunConflictError`` while another run is live on the thread.
    """
    settings = app.settings
    try:
        if not await app.store_ready():
            raise HTTPException(503, "the checkpoint store is not ready yet; try again shortly")
    except STORE_DOWN:
        raise HTTPException(503, "the checkpoint store is unreachable; try again shortly") from None
    flow = await app.flow_of(thread_id)
    previous = (
        await app.graphs[flow].aget_state({"configurable": {"thread_id": thread_id}})
    ).values
    if body.flow not in app.graphs:
        raise HTTPException(422, f"unknown flow {body.flow!r}; flows: {', '.join(app.graphs)}")
    if previous and body.flow != flow:
        raise HTTPException(
            422, f"this thread runs the {flow!r} flow; start a new thread for {body.flow!r}"
        )
    flow = body.flow
    if body.plan is not None and flow != "research":
        raise HTTPException(422, f"a plan is for the research flow, not {flow!r}")
    try:
        plan = checked_plan(body.plan) if body.plan is not None else None
    except PlanError as exc:
        raise HTTPException(422, f"the plan cannot run: {exc}") from None
    earlier_images = [ref for t in (previous or {}).get("turns", []) for ref in t.get("images", [])]
    context = context_from_dict({**body.model_dump(include=set(REQUEST_KNOBS)), "user": user.name})
    try:
        admitted = admit(app.services, context, body.question, bool(body.images or earlier_images))
    except AdmissionError as exc:
        raise HTTPException(422, str(exc)) from None
    try:
        images = (
            accept_images(
                body.images,
                app.images_dir,
                user.name,
                settings.max_images,
                settings.max_image_bytes,
                thread_bytes=stored_bytes(app.images_dir, user.name, earlier_images),
                max_thread_bytes=settings.max_thread_image_bytes,
            )
            if body.images
            else []
        )
    except ImageError as exc:
        raise HTTPException(422, str(exc)) from None
    context = await within_daily_tokens(app, user, context)
    run_id = app.runs.new_run_id()
    caller = CALLER.get()
    limit_key = caller.key_id if caller is not None and caller.user == user.name else user.name
    token = app.runs.token(run_id)
    try:
        if not await app.runs.try_lock(thread_id, run_id):
            holder = await app.coordinator.holder(thread_id)
            live = (holder or "").split("@")[0] or None
            raise RunConflictError(thread_id, live)
        if not await app.limits.claim_run(
            limit_key, thread_id, token, settings.max_live_runs_per_key
        ):
            await app.coordinator.release(thread_id, token)
            app.metrics.limited.labels("live_runs").inc()
            raise HTTPException(
                429,
                f"{settings.max_live_runs_per_key} runs of this key are live already; wait "
                "for one to end",
                headers={"Retry-After": "5"},
            )
    except STORE_DOWN:
        raise HTTPException(503, "the checkpoint store is unreachable; try again shortly") from None
    graph_input: dict[str, Any] = {"question": admitted.question}
    if images:
        graph_input["images"] = images
    if plan is not None:
        graph_input["plan"] = plan
    if flow == "research":
        graph_input["trace_id"] = run_id  # one id from the request to every model call
    try:
        await app.coordinator.set_title(thread_id, admitted.question[:120])
        handle = app.runs.start(
            thread_id,
            user.name,
            graph_input,
            context,
            run_id,
            record_protocol=record_protocol,
            limit_key=limit_key,
            graph=app.graphs[flow],
            flow=flow,
        )
    except BaseException:
        # nothing started: the thread must not stay locked by a run that never ran
        log.exception("could not start run %s on thread %s", run_id, thread_id)
        with contextlib.suppress(Exception):
            await app.coordinator.release(thread_id, token)
            await app.limits.release_run(limit_key, thread_id, token)
        raise HTTPException(503, "the run could not be started; nothing was changed") from None
    return handle


async def within_daily_tokens(app: AppState, user: User, context: Context) -> Context:
    """The run's context with its token budget cut to what is left of the user's day.

    429 (with ``Retry-After`` until the next UTC day) when the day's tokens are spent.
    """
    budget = app.settings.daily_tokens_per_user
    if budget is None:
        return context
    try:
        used, _ = await app.limits.usage_today(user.name)
    except STORE_DOWN:
        raise HTTPException(503, "the limits store is unreachable; try again shortly") from None
    if used >= budget:
        app.metrics.limited.labels("daily_tokens").inc()
        raise HTTPException(
            429,
            f"your daily model budget of {budget} tokens is spent ({used} used today, UTC); "
            "it renews at midnight UTC",
            headers={"Retry-After": str(seconds_to_midnight())},
        )
    return dataclasses.replace(context, max_tokens=min(context.max_tokens, budget - used))


async def attach_frames(
    app: AppState, owner: str, thread_id: str, lei: str | None, channel: str = "native"
) -> tuple[AsyncIterator[bytes], str | None]:
    """The frames of the thread's current or last run, wherever it lives, and its run id.

    1. the run lives on this instance → one snapshot event, then live events (a run that
       ended interrupted or lost here is looked for again below);
    2. it lives on another instance (routing table in Redis) → forward to the origin;
    3. its origin is gone → wait for the dead holder's lock to expire, take it, rebuild the
       snapshot from the last checkpoint and continue the run from that checkpoint here.
    """
    try:
        _, seq = parse_last_event_id(lei)
    except BadEventIdError as exc:
        raise HTTPException(422, str(exc)) from None
    handle = app.runs.live(thread_id)
    if handle is not None and handle.done and handle.status in ("interrupted", "lost"):
        # it stopped here (a dropped model stream, a Redis blip) or was taken over: follow
        # it where it lives now, or continue it from its last checkpoint on this instance
        app.runs.forget(handle)
        seq = max(seq, handle.seq if channel == "native" else handle.protocol_seq)
        handle = None
    if handle is not None:
        shown = None
        if handle.done:  # replayed after the fact: as its person may see it now
            held = [handle.fold, handle.values, [e.data for e in handle.events]]
            shown = await hidden_from(app, owner, held)
        frames = handle_frames(handle, snapshot=True, after=seq, channel=channel, shown=shown)
        return frames, handle.run_id
    try:
        route = await app.coordinator.route(thread_id)
    except STORE_DOWN:
        raise HTTPException(503, "the routing store is unreachable; try again shortly") from None
    if route is not None and route.instance != app.instance and app.settings.internal_token:
        upstream = await open_forward(
            app, route.instance, thread_id, route.run_id, owner, lei, channel
        )
        if upstream is not None:
            return forward_frames(app, upstream, thread_id, owner, seq, channel), route.run_id
    return takeover_frames(app, thread_id, owner, seq, channel), None


async def hidden_from(app: AppState, owner: str, held: Any) -> Callable[[Any], Any] | None:
    """What takes out of an event what ``owner`` may no longer read (None: nothing to take)."""
    from graph.run import jsonable
    from graph.visibility import revoked, without

    try:
        user = app.services.registry.user(owner)
    except KeyError:
        return lambda data: {}
    gone = await revoked(app.services.registry, user, jsonable(held))
    return (lambda data: without(data, gone)) if gone else None


async def thread_for(app: AppState, user: User, given: str | None) -> str:
    """The thread to run on: the caller's own when named (404 otherwise), or a new one."""
    if given:
        return await own_thread(app, user, given)
    try:
        thread_id = new_thread_id()
        await app.coordinator.create_thread(thread_id, user.name)
        return thread_id
    except STORE_DOWN:
        raise HTTPException(503, "the thread store is unreachable; try again shortly") from None


async def run_frames(
    app: AppState, user: User, thread_id: str, request: RunRequest
) -> tuple[AsyncIterator[bytes], str | None]:
    """A new run's frames, or those of the run already answering this question.

    A retry of the question a run is still answering (or stopped answering half-way)
    follows that run from the start instead of starting another.
    """
    graph = await app.graph_of(thread_id)
    snap = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    same = (snap.values or {}).get("question") == request.question.strip()
    if same and snap.tasks:  # interrupted, or its instance died: continue it
        return await attach_frames(app, user.name, thread_id, None)
    try:
        handle = await start_run(app, user, thread_id, request)
    except RunConflictError as exc:
        if same:  # the client retried while the run goes on: follow it
            return await attach_frames(app, user.name, thread_id, None)
        raise HTTPException(409, f"{exc}; or wait for it to finish") from None
    return handle_frames(handle, snapshot=False), handle.run_id


def events(frames: AsyncIterator[bytes]) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """(event type, data) of each SSE frame."""

    async def gen() -> AsyncIterator[tuple[str, dict[str, Any]]]:
        async for raw in frames:
            fields = event_data(raw)
            if "event" in fields:
                yield fields["event"], json.loads(fields.get("data") or "{}")

    return gen()


async def resume_run(
    app: AppState, user: User, thread_id: str, value: Any, record_protocol: bool = False
) -> RunHandle:
    """Resume a run that waits for a person (an ``interrupt()``) with ``value``.

    Raises ``HTTPException`` 422 when nothing waits, ``RunConflictError`` while a run is live.
    """
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    flow = await app.flow_of(thread_id)
    snap = await app.graphs[flow].aget_state(config)  # type: ignore[arg-type]
    if not snap.interrupts:
        raise HTTPException(422, "nothing on this thread waits for a resume value; start a run")
    run_id = app.runs.new_run_id()
    if not await app.runs.try_lock(thread_id, run_id):
        holder = await app.coordinator.holder(thread_id)
        raise RunConflictError(thread_id, (holder or "").split("@")[0] or None)
    last = await app.coordinator.last_run(thread_id)
    context = context_from_dict({**(last[1] if last else {}), "user": user.name})
    try:
        return app.runs.start(
            thread_id,
            user.name,
            Command(resume=value),
            context,
            run_id,
            record_protocol=record_protocol,
            graph=app.graphs[flow],
            flow=flow,
        )
    except BaseException:
        with contextlib.suppress(Exception):
            await app.coordinator.release(thread_id, app.runs.token(run_id))
        raise
