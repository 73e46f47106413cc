"""The SSE wire format: ``id: run:seq``, ``event: <type>``, JSON ``data``; heartbeat comments."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from seekgraph.graph.run import jsonable
from seekgraph.server.runs.handle import Event, RunHandle

HEARTBEAT = b": heartbeat\n\n"


def frame(run_id: str, event: Event) -> bytes:
    """One SSE frame."""
    data = json.dumps(event.data, ensure_ascii=False, separators=(",", ":"))
    return f"id: {run_id}:{event.seq}\nevent: {event.type}\ndata: {data}\n\n".encode()


_EVENT_ID = re.compile(r"([0-9A-Za-z_-]{0,64}):([0-9]{1,18})", re.ASCII)


class BadEventIdError(ValueError):
    """A ``Last-Event-ID`` that is not ``<run>:<seq>``; the message says what to send."""


def parse_last_event_id(value: str | None) -> tuple[str | None, int]:
    """``run:seq`` → (run id, seq); nothing → (None, 0); anything else → ``BadEventIdError``."""
    if not value:
        return None, 0
    match = _EVENT_ID.fullmatch(value)
    if match is None:
        raise BadEventIdError(
            "Last-Event-ID must be the id of an event this stream sent, <run>:<seq> "
            "(e.g. 3f2a9c1b7d4e:12); send none to start from the beginning"
        )
    return match.group(1), int(match.group(2))


async def handle_frames(
    handle: RunHandle,
    snapshot: bool,
    after: int = 0,
    channel: str = "native",
    shown: Callable[[Any], Any] | None = None,
) -> AsyncIterator[bytes]:
    """A run's frames: optionally one snapshot first, then every later event, live.

    On the ``protocol`` channel (the LangGraph protocol) a reconnect replays the events after
    ``after`` that this instance holds; one it does not hold starts with the latest values.
    ``shown`` maps each event's data before it is sent (a finished run replayed to a person
    who may no longer read some of its sources).
    """

    def out(event: Event) -> bytes:
        return frame(handle.run_id, replace(event, data=shown(event.data)) if shown else event)

    if channel == "protocol":
        first = handle.protocol[0].seq - 1 if handle.protocol else handle.protocol_seq
        missing = not handle.record_protocol or not first <= after <= handle.protocol_seq
        if snapshot and missing and handle.values is not None:
            values = jsonable(handle.values)
            yield out(Event(handle.protocol_seq, "values", values))
            after = handle.protocol_seq
        async for event in handle.follow(after, channel):
            yield out(event)
        return
    if snapshot:
        snap = handle.snapshot()
        if handle.done and handle.events and handle.events[-1].type == "end":
            # a finished run: its snapshot, then its end again, so the client knows it is over
            end = handle.events[-1]
            yield out(Event(end.seq - 1, "snapshot", {**snap.data, "seq": end.seq - 1}))
            yield out(end)
            return
        after = snap.seq
        yield out(snap)
    async for event in handle.follow(after):
        yield out(event)


async def with_heartbeats(frames: AsyncIterator[bytes], interval: float) -> AsyncIterator[bytes]:
    """Interleave a comment heartbeat whenever ``interval`` seconds pass without a frame."""
    queue: asyncio.Queue[bytes | None | BaseException] = asyncio.Queue(maxsize=256)

    async def pump() -> None:
        try:
            async for item in frames:
                await queue.put(item)
            await queue.put(None)
        except Exception as exc:  # noqa: BLE001 - handed to the consumer
            await queue.put(exc)

    task = asyncio.create_task(pump())
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), timeout=interval)
            except TimeoutError:
                yield HEARTBEAT
                continue
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


def error_frame(run_id: str, seq: int, message: str) -> bytes:
    """An error frame outside a run's own numbering."""
    return frame(run_id, Event(seq, "error", {"message": message}))


def event_data(frame_bytes: bytes) -> dict[str, Any]:
    """Parse one frame (tests and forwarding)."""
    fields: dict[str, Any] = {}
    for line in frame_bytes.decode().splitlines():
        key, _, value = line.partition(": ")
        fields[key] = value
    return fields
