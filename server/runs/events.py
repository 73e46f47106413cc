"""A run's numbered events where every instance can read them: one Redis Stream per channel.

The executor of a run (a worker, or an instance's in-process worker) publishes each event as
it is emitted, with the stream entry id ``0-<seq>``: the numbering the clients see is the
stream's own, so a reader resumes after any ``Last-Event-ID`` with one ``XRANGE``/``XREAD``,
and an event written twice (a worker that took a run over repeats nothing, but a retried
write might) is refused by Redis instead of duplicated. Any API instance follows a run it
does not execute through a *replica*: a local ``RunHandle`` fed from the streams, so the
snapshot, ``Last-Event-ID`` and heartbeat paths are the ones an in-process run uses.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from seekgraph.server.runs.handle import Event, RunHandle

log = logging.getLogger("seekgraph.runs")

CHANNELS = ("native", "protocol")
#: How long a run's events are kept after its last one (reconnects and joins within it).
EVENTS_TTL_S = 24 * 3600


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _event(entry_id: Any, fields: dict[Any, Any]) -> Event:
    seq = int(_text(entry_id).split("-")[1])
    kind = _text(fields.get(b"type", fields.get("type")))
    data = json.loads(fields.get(b"data", fields.get("data")) or b"null")
    return Event(seq, kind, data)


class RedisEventLog:
    """The events of every run, under ``<prefix>:events:{<thread>}:<run>:<channel>``."""

    def __init__(
        self, client: aioredis.Redis, prefix: str = "seekgraph", ttl_s: int = EVENTS_TTL_S
    ) -> None:
        self.r = client
        self.p = prefix
        self.ttl_s = ttl_s
        """How long a run's events are kept after its last one (at most its thread's life)."""

    def key(self, thread_id: str, run_id: str, channel: str) -> str:
        """The stream of one channel of one run (the thread in braces: one cluster slot)."""
        return f"{self.p}:events:{{{thread_id}}}:{run_id}:{channel}"

    async def append(self, thread_id: str, run_id: str, items: list[tuple[str, Event]]) -> None:
        """Add events in one round trip; an event already there is left as it is."""
        if not items:
            return
        async with self.r.pipeline(transaction=False) as pipe:
            for channel, event in items:
                data = json.dumps(event.data, ensure_ascii=False, separators=(",", ":"))
                pipe.xadd(
                    self.key(thread_id, run_id, channel),
                    {"type": event.type, "data": data},
                    id=f"0-{event.seq}",
                )
            for channel in {c for c, _ in items}:
                pipe.expire(self.key(thread_id, run_id, channel), self.ttl_s)
            results = await pipe.execute(raise_on_error=False)
        for result in results:
            if isinstance(result, ResponseError) and "equal or smaller" in str(result):
                continue  # written before: the stream keeps the first copy
            if isinstance(result, Exception):
                raise result

    async def read(self, thread_id: str, run_id: str, channel: str, after: int = 0) -> list[Event]:
        """Every event of the channel numbered after ``after``."""
        found: Any = await self.r.xrange(self.key(thread_id, run_id, channel), min=f"0-{after + 1}")
        return [_event(i, f) for i, f in found]

    async def wait(
        self, thread_id: str, run_id: str, after: dict[str, int], block_ms: int
    ) -> list[tuple[str, Event]]:
        """Events after ``after`` (per channel), waiting up to ``block_ms`` for one."""
        keys: Any = {self.key(thread_id, run_id, c): f"0-{n}" for c, n in after.items()}
        found: Any = await self.r.xread(keys, block=block_ms)
        by_key = {self.key(thread_id, run_id, c): c for c in after}
        return [
            (by_key[_text(key)], _event(i, f)) for key, entries in found or [] for i, f in entries
        ]

    async def last_seq(self, thread_id: str, run_id: str, channel: str) -> int:
        """The number of the channel's last event (0: none)."""
        found: Any = await self.r.xrevrange(self.key(thread_id, run_id, channel), count=1)
        return int(_text(found[0][0]).split("-")[1]) if found else 0

    async def exists(self, thread_id: str, run_id: str) -> bool:
        """Whether the run published anything."""
        return bool(await self.r.exists(self.key(thread_id, run_id, "native")))


class EventPublisher:
    """Publishes a handle's events in order, batching what accumulates during a write."""

    def __init__(self, events: RedisEventLog, thread_id: str, run_id: str) -> None:
        self.events = events
        self.thread_id = thread_id
        self.run_id = run_id
        self._pending: list[tuple[str, Event]] = []
        self._wake = asyncio.Event()
        self._closing = False
        self._task = asyncio.create_task(self._pump())

    def __call__(self, channel: str, event: Event) -> None:
        """Queue one event (called by ``RunHandle`` as it emits)."""
        self._pending.append((channel, event))
        self._wake.set()

    async def _pump(self) -> None:
        delay = 0.05
        while True:
            if not self._pending:
                if self._closing:
                    return
                await self._wake.wait()
                self._wake.clear()
                continue
            batch = self._pending[:500]
            try:
                await self.events.append(self.thread_id, self.run_id, batch)
            except RedisError as exc:  # keep the batch; the store may come back
                log.warning("run %s: events not published yet (%s); retrying", self.run_id, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            delay = 0.05
            del self._pending[: len(batch)]

    async def close(self, timeout: float = 10.0) -> None:
        """Publish what is queued (waits up to ``timeout`` seconds), then stop."""
        self._closing = True
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout)
        except TimeoutError:
            log.error("run %s: %d events could not be published", self.run_id, len(self._pending))
            self._task.cancel()


async def seed(events: RedisEventLog, handle: RunHandle) -> bool:
    """Load what a run published so far into ``handle``; True when it has ended."""
    ended = False
    for channel in CHANNELS:
        for event in await events.read(handle.thread_id, handle.run_id, channel):
            handle.append(channel, event)
            ended = ended or (channel == "native" and event.type == "end")
    return ended


#: How long a followed run may publish nothing before its record is looked at.
QUIET_CHECK_S = 5.0

#: What ``stopped`` says of a run that cannot end on its own: its end status and the error
#: its followers are told (None: none, it ended well), or None while it may still end.
Stopped = Callable[[], Awaitable[tuple[str, str | None] | None]]


async def replica_frames(
    events: RedisEventLog,
    handle: RunHandle,
    frames: AsyncIterator[bytes],
    stopped: Stopped | None = None,
    quiet_s: float = QUIET_CHECK_S,
) -> AsyncIterator[bytes]:
    """``frames`` of a replica ``handle`` (already seeded) while its events are tailed.

    The tail stops when the run's ``end`` arrives or the reader goes away. When the run has
    published nothing for ``quiet_s`` seconds, ``stopped`` is asked whether it can still end
    on its own (its record gone with its thread, or ended long ago without an ``end``
    event); if not, each channel that has no end yet gets the error (if any) and an end,
    instead of heartbeats for ever.
    """

    async def give_up(status: str, message: str | None) -> None:
        # a last look: the end may have been published since the check (the protocol
        # channel first: the executor writes it first)
        for channel in ("protocol", "native"):
            last = handle.seq if channel == "native" else handle.protocol_seq
            for late in await events.read(handle.thread_id, handle.run_id, channel, last):
                handle.append(channel, late)
        for channel, held in (("native", handle.events), ("protocol", handle.protocol)):
            if held and held[-1].type == "end":
                continue
            seq = handle.seq if channel == "native" else handle.protocol_seq
            if message is not None:
                error = {"message": message} if channel == "native" else {
                    "error": status, "message": message}  # fmt: skip
                seq += 1
                handle.append(channel, Event(seq, "error", error))
            handle.append(channel, Event(seq + 1, "end", {"status": status}))
        handle.finish()

    async def tail() -> None:
        after = {
            "native": handle.seq,
            "protocol": handle.protocol_seq,
        }
        heard = time.monotonic()
        while not handle.done:
            try:
                if stopped is not None and time.monotonic() - heard > quiet_s:
                    heard = time.monotonic()
                    verdict = await stopped()
                    if verdict is not None:
                        await give_up(*verdict)
                        return
                found = await events.wait(handle.thread_id, handle.run_id, after, 1000)
            except RedisError as exc:
                log.warning("run %s: cannot read its events (%s); retrying", handle.run_id, exc)
                await asyncio.sleep(0.5)
                continue
            if found:
                heard = time.monotonic()
            for channel, event in found:
                if event.seq <= after[channel]:
                    continue
                after[channel] = event.seq
                handle.append(channel, event)
                if channel == "native" and event.type == "end":
                    # the protocol's events are written before the native end (same batch)
                    for late in await events.read(
                        handle.thread_id, handle.run_id, "protocol", after["protocol"]
                    ):
                        handle.append("protocol", late)
                    handle.finish()

    task = None if handle.done else asyncio.create_task(tail())
    try:
        async for item in frames:
            yield item
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
