"""Where a run's events come from: the run just started, or the one attached to, anywhere.

Every door (the native SSE API, the OpenAI-compatible chat, MCP, the LangGraph protocol)
reads runs with ``started_frames`` and ``attach_frames`` (through ``RunService``), so
resume, forwarding, takeover and the runs that workers execute are written once.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from seekgraph.graph.api import User
from seekgraph.server.runs.events import replica_frames, seed
from seekgraph.server.runs.handle import Event, RunHandle
from seekgraph.server.runs.manager import GONE_MESSAGE
from seekgraph.server.runs.records import ENDED_WELL, ended_as
from seekgraph.server.service.errors import (
    BadInputError,
    ConflictError,
    NotFoundError,
    RunConflictError,
    UnavailableError,
)
from seekgraph.server.service.requests import RunRequest
from seekgraph.server.service.resume import forward_frames, open_forward, takeover_frames
from seekgraph.server.service.sse import (
    BadEventIdError,
    event_data,
    frame,
    handle_frames,
    parse_last_event_id,
)
from seekgraph.server.service.stores import STORE_DOWN

if TYPE_CHECKING:
    from seekgraph.server.service.run_service import RunService, Started

log = logging.getLogger("seekgraph.runs")

#: A followed run that ended without its last events reaching the event log (or they expired
#: before its record did), told once its record has said so for this long (seconds).
ENDED_GRACE_S = 10.0
#: ... and what its followers are told when it did not end well.
ENDED_UNHEARD = (
    "the run ended ({status}) but its last events could not be read; "
    "GET /threads/{{id}}/state holds what it saved"
)


async def attach_frames(
    app: RunService, owner: str, thread_id: str, lei: str | None, channel: str = "native"
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
        raise BadInputError(str(exc)) from None
    handle = app.runs.live(thread_id)
    stopped = ("interrupted", "lost", "handed_back")
    if handle is not None and handle.done and handle.status in stopped:
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
        latest = await app.records.list(thread_id, 1)
        if latest and latest[0].queued and app.events is not None:  # a worker's run
            frames = queued_frames(app, thread_id, latest[0].run_id, owner, seq, channel, True)
            return frames, latest[0].run_id
        route = await app.coordinator.route(thread_id)
    except STORE_DOWN:
        raise UnavailableError("the routing store is unreachable; try again shortly") from None
    if route is not None and route.instance != app.instance and app.settings.internal_token:
        upstream = await open_forward(
            app, route.instance, thread_id, route.run_id, owner, lei, channel
        )
        if upstream is not None:
            return forward_frames(app, upstream, thread_id, owner, seq, channel), route.run_id
    return takeover_frames(app, thread_id, owner, seq, channel), None


async def hidden_from(app: RunService, owner: str, held: Any) -> Callable[[Any], Any] | None:
    """What takes out of an event what ``owner`` may no longer read (None: nothing to take)."""
    from seekgraph.graph.run import jsonable
    from seekgraph.graph.visibility import revoked, without

    try:
        user = await app.services.registry.user_now(owner)
    except KeyError:
        return lambda data: {}
    gone = await revoked(app.services.registry, user, jsonable(held))
    return (lambda data: without(data, gone)) if gone else None


async def run_frames(
    app: RunService, user: User, thread_id: str, request: RunRequest
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
        started = await app.start_run(user, thread_id, request)
    except RunConflictError as exc:
        if same:  # the client retried while the run goes on: follow it
            return await attach_frames(app, user.name, thread_id, None)
        raise ConflictError(f"{exc}; or wait for it to finish") from None
    return started_frames(app, started, user.name), started.run_id


def started_frames(
    app: RunService, started: Started, owner: str, channel: str = "native"
) -> AsyncIterator[bytes]:
    """The frames of a run just started, here or by a worker."""
    if started.handle is not None:
        return handle_frames(started.handle, snapshot=False, channel=channel)
    return queued_frames(app, started.thread_id, started.run_id, owner, channel=channel)


async def queued_frames(
    app: RunService,
    thread_id: str,
    run_id: str,
    owner: str,
    after: int = 0,
    channel: str = "native",
    snapshot: bool = False,
) -> AsyncIterator[bytes]:
    """The frames of a run a worker executes (or will), as it publishes them.

    On Redis: a replica of the run fed from its event streams, so a worker on any machine is
    followed as a run of this instance is. On one instance without Redis: the in-process
    worker's own handle, once it has taken the run.
    """
    if app.events is not None:
        replica = RunHandle(run_id=run_id, thread_id=thread_id, owner=owner)
        replica.record_protocol = True
        shown = None
        if await seed(app.events, replica):
            replica.finish()
            held = [replica.fold, replica.values, [e.data for e in replica.events]]
            shown = await hidden_from(app, owner, held)
        frames = handle_frames(replica, snapshot, after=after, channel=channel, shown=shown)

        async def stopped() -> tuple[str, str | None] | None:
            record = await app.records.get(thread_id, run_id)
            if record is None:
                return "error", GONE_MESSAGE
            if not record.done or time.time() - record.updated_at < ENDED_GRACE_S:
                return None  # (its executor writes the record just before its end event)
            status = ended_as(record.status)
            if status in ENDED_WELL:
                return status, None
            return status, record.error or ENDED_UNHEARD.format(status=status)

        async for item in replica_frames(app.events, replica, frames, stopped):
            yield item
        return
    while True:
        handle = app.runs.live(thread_id)
        if handle is not None and handle.run_id == run_id:
            async for item in handle_frames(handle, snapshot, after=after, channel=channel):
                yield item
            return
        record = await app.records.get(thread_id, run_id)
        if record is None or record.done:
            status = record.status if record is not None else "unknown"
            yield frame(run_id, Event(after + 1, "end", {"status": status}))
            return
        await asyncio.sleep(0.05)


def origin_frames(
    app: RunService, thread_id: str, run_id: str, owner: str, lei: str | None, channel: str
) -> tuple[AsyncIterator[bytes], str]:
    """The live run's snapshot and events, for the instance a client reconnected to.

    Served only when this instance's live run on the thread is ``run_id`` of ``owner``: the
    run and the user the forwarding instance authorised (``NotFoundError`` otherwise).
    """
    handle = app.runs.live(thread_id)
    if (
        handle is None
        or handle.done
        or handle.thread_id != thread_id
        or not hmac.compare_digest(handle.run_id.encode(), run_id.encode())
        or not hmac.compare_digest(handle.owner.encode(), owner.encode())
    ):
        raise NotFoundError("no such live run here")
    try:
        _, after = parse_last_event_id(lei)
    except BadEventIdError as exc:
        raise BadInputError(str(exc)) from None
    return handle_frames(handle, snapshot=True, after=after, channel=channel), handle.run_id


def events(frames: AsyncIterator[bytes]) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """(event type, data) of each SSE frame."""

    async def gen() -> AsyncIterator[tuple[str, dict[str, Any]]]:
        async for raw in frames:
            fields = event_data(raw)
            if "event" in fields:
                yield fields["event"], json.loads(fields.get("data") or "{}")

    return gen()
