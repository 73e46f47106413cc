"""Continuing a run elsewhere: forward a reconnect to the run's origin, or take it over.

When the origin is gone, the run continues here from its last checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from seekgraph.graph.api import checkpoint_events, fold_event
from seekgraph.graph.context import context_from_dict
from seekgraph.graph.inspect import question_state, steps_of
from seekgraph.graph.run import jsonable
from seekgraph.server.runs.handle import Event, RunHandle
from seekgraph.server.service.sse import (
    BadEventIdError,
    error_frame,
    frame,
    handle_frames,
    parse_last_event_id,
)

if TYPE_CHECKING:
    from seekgraph.server.service.run_service import RunService

INTERNAL_HEADER = "X-Seekgraph-Internal"


async def open_forward(
    app: RunService,
    instance: str,
    thread_id: str,
    route_run: str,
    owner: str,
    lei: str | None,
    channel: str = "native",
) -> httpx.Response | None:
    """Open the origin's internal stream of run ``route_run``; None when it does not answer.

    The forward names the run (from the routing table) and the user this instance
    authorised: the origin serves the stream only when its live run is that run, on that
    thread, of that user.
    """
    assert app.settings.internal_token is not None
    headers = {INTERNAL_HEADER: app.settings.internal_token.get_secret_value()}
    if lei:
        headers["Last-Event-ID"] = lei
    # The origin sends a heartbeat at least every heartbeat interval: three missed in a row
    # means it is paused or gone (a stopped process still accepts TCP connections).
    silence = max(3 * app.settings.heartbeat_seconds, 1.0)
    request = app.http.build_request(
        "GET",
        f"{instance}/internal/threads/{quote(thread_id, safe='')}/stream",
        params={"channel": channel, "run_id": route_run, "owner": owner},
        headers=headers,
        timeout=httpx.Timeout(silence, connect=2.0),
    )
    try:
        response = await app.http.send(request, stream=True)
    except httpx.TransportError:
        return None
    if response.status_code != 200:
        await response.aclose()
        return None
    return response


async def forward_frames(
    app: RunService,
    upstream: httpx.Response,
    thread_id: str,
    owner: str,
    seq: int,
    channel: str = "native",
) -> AsyncIterator[bytes]:
    """Relay the origin's frames; if the origin dies mid-way, take the run over."""
    buffer = b""
    try:
        async for chunk in upstream.aiter_raw():
            buffer += chunk
            *complete, buffer = buffer.split(b"\n\n")
            for raw in complete:
                for line in raw.split(b"\n"):
                    if line.startswith(b"id: "):
                        with contextlib.suppress(BadEventIdError, UnicodeDecodeError):
                            seq = parse_last_event_id(line[4:].decode())[1] or seq
                yield raw + b"\n\n"
        return
    except httpx.TransportError:
        pass  # the origin died: continue below from the last frame we relayed
    finally:
        await upstream.aclose()
    async for item in takeover_frames(app, thread_id, owner, seq, channel):
        yield item


async def takeover_frames(
    app: RunService, thread_id: str, owner: str, seq: int, channel: str = "native"
) -> AsyncIterator[bytes]:
    """No live origin: show the last checkpoint, and continue the run from it if unfinished."""
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    last = await app.coordinator.last_run(thread_id)
    run_id, context = last if last is not None else ("none", {"user": owner})
    flow = await app.flow_of(thread_id)
    graph = app.graphs[flow]
    shown = await app.shown_graph_of(thread_id)  # what the snapshot shows; the run uses graph
    snap = await shown.aget_state(config)  # type: ignore[arg-type]
    steps = [n for _, wrote in await steps_of(shown, thread_id) for n in wrote]
    native_seq = seq if channel == "native" else 0
    handle = RunHandle(run_id=run_id, thread_id=thread_id, owner=owner, seq=native_seq)
    handle.protocol_seq = seq if channel == "protocol" else 0
    handle.record_protocol = channel == "protocol"
    handle.values = snap.values or {}
    latest = await question_state(shown, thread_id)
    for kind, data in checkpoint_events(latest, steps):
        fold_event(handle.fold, kind, data)
    waiting = bool(snap.interrupts) if hasattr(snap, "interrupts") else False
    if not snap.tasks or waiting:  # finished, never started, or waiting for a person
        status = "waiting" if waiting else "done" if snap.values else "empty"
        handle.fold["status"] = status
        if channel == "protocol":
            handle.emit_protocol("values", jsonable(handle.values))
            handle.emit_protocol("end", {"status": status})
            for event in handle.protocol:
                yield frame(run_id, event)
            return
        snapshot = Event(seq + 1, "snapshot", {**handle.fold, "seq": seq + 1})
        yield frame(run_id, snapshot)
        yield frame(run_id, Event(seq + 2, "end", {"status": status}))
        return
    deadline = time.monotonic() + app.settings.lock_ttl_ms / 1000 + 5
    while not await app.runs.try_lock(thread_id, run_id):
        live = app.runs.live(thread_id)
        if live is not None:  # another request on this instance took it over first
            async for item in handle_frames(live, snapshot=True, after=seq, channel=channel):
                yield item
            return
        if time.monotonic() > deadline:
            yield error_frame(run_id, seq, "the run is still held by another instance; retry")
            return
        await asyncio.sleep(0.25)
    app.metrics.takeovers.inc()
    handle.emit(
        "node",
        {
            "node": "resume",
            "detail": {},
            "summary": f"continued on {app.instance} from the last checkpoint",
        },
    )
    if channel == "protocol":
        handle.emit_protocol("values", jsonable(handle.values))
    app.runs.start(
        thread_id, owner, None, context_from_dict(context), handle=handle, graph=graph, flow=flow
    )
    after = handle.protocol_seq - 1 if channel == "protocol" else seq
    async for item in handle_frames(
        handle, snapshot=channel == "native", after=after, channel=channel
    ):
        yield item
