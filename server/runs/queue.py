"""The run queue: runs waiting for a worker, on a Redis Stream read by one consumer group.

Each entry is a ``Job``. ``XREADGROUP`` gives an entry to exactly one worker; it stays in
the group's pending list until that worker acknowledges it at the run's end. A worker keeps
its entries' idle time low while it runs them (``touch``); an entry idle longer than
``claim_idle_ms`` belongs to a worker that died, and another takes it (``XAUTOCLAIM``) and
continues the run from its last checkpoint. A worker that stops on purpose hands its entries
back (``release``) so another takes them at once.

Without Redis (one instance on SQLite) the queue is an in-process ``asyncio.Queue``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

GROUP = "workers"


@dataclass
class Job:
    """What a worker needs to run a run: which, on what thread, with which input."""

    run_id: str
    thread_id: str
    owner: str
    flow: str
    kind: str = "start"
    """``start`` (``input`` is the graph input), ``resume`` (``input`` is the value given to
    a waiting run) or ``continue`` (from the thread's checkpoint)."""
    input: Any = None
    context: dict[str, Any] = field(default_factory=dict)
    limit_key: str = ""
    record_protocol: bool = False
    lock_token: str = ""
    """The token the thread's lock was taken with when the run was accepted (empty: the run
    waits for the thread to be free, the ``enqueue`` strategy)."""

    def dumps(self) -> str:
        """As the stream entry's payload."""
        return json.dumps(asdict(self))

    @classmethod
    def loads(cls, raw: bytes | str) -> Job:
        """From a stream entry's payload."""
        return cls(**json.loads(raw))


class Payload(Protocol):
    """What a stream entry carries: a run's ``Job``, or an ingest task."""

    def dumps(self) -> str:
        """As the stream entry's payload."""
        ...


P = TypeVar("P", bound=Payload)


@dataclass
class Claimed(Generic[P]):
    """A job a worker holds, with its entry id (to acknowledge, touch or release)."""

    entry: str
    job: P


class RunQueue(Protocol):
    """Runs waiting for a worker."""

    async def setup(self) -> None:
        """Create what the queue needs (idempotent)."""
        ...

    async def put(self, job: Job) -> str:
        """Add a job; returns its entry id."""
        ...

    async def claim(self, consumer: str, count: int, block_ms: int) -> list[Claimed[Job]]:
        """New jobs for ``consumer`` (waits up to ``block_ms`` for one)."""
        ...

    async def reclaim(self, consumer: str, idle_ms: int, count: int) -> list[Claimed[Job]]:
        """Jobs of workers silent for ``idle_ms``, now ``consumer``'s."""
        ...

    async def touch(self, consumer: str, entries: list[str]) -> None:
        """Show that ``consumer`` still works on ``entries``."""
        ...

    async def ack(self, entry: str) -> None:
        """The job is finished: drop it."""
        ...

    async def release(self, consumer: str, entries: list[str]) -> None:
        """Hand ``entries`` back so that another worker takes them at once."""
        ...

    async def depth(self) -> dict[str, int]:
        """Jobs waiting (``pending``: not yet claimed) and in work (``claimed``)."""
        ...


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisStreamQueue(Generic[P]):
    """A queue on a Redis Stream with the consumer group ``workers``."""

    #: An idle time that any ``reclaim`` passes: what ``release`` gives an entry.
    RELEASED_IDLE_MS = 10**12

    def __init__(self, client: aioredis.Redis, key: str, loads: Callable[[bytes | str], P]) -> None:
        self.r = client
        self.key = key
        self.loads = loads

    async def setup(self) -> None:
        """Create the stream and its group unless they exist."""
        try:
            await self.r.xgroup_create(self.key, GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def put(self, job: P) -> str:
        """``XADD``."""
        return _text(await self.r.xadd(self.key, {"job": job.dumps()}))

    def _claimed(self, entries: Any) -> list[Claimed[P]]:
        out = []
        for entry_id, fields in entries or []:
            if not fields:  # deleted while pending
                continue
            raw = fields.get(b"job", fields.get("job"))
            out.append(Claimed(_text(entry_id), self.loads(raw)))
        return out

    async def claim(self, consumer: str, count: int, block_ms: int) -> list[Claimed[P]]:
        """``XREADGROUP … >``."""
        try:
            found: Any = await self.r.xreadgroup(
                GROUP, consumer, {self.key: ">"}, count=count, block=block_ms
            )
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            await self.setup()  # Redis restarted empty: make the group again
            return []
        return [c for _, entries in found or [] for c in self._claimed(entries)]

    async def reclaim(self, consumer: str, idle_ms: int, count: int) -> list[Claimed[P]]:
        """``XAUTOCLAIM`` from the start of the pending list."""
        try:
            result: Any = await self.r.xautoclaim(
                self.key, GROUP, consumer, min_idle_time=idle_ms, start_id="0-0", count=count
            )
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            await self.setup()
            return []
        gone = result[2] if len(result) > 2 else []
        if gone:  # entries deleted from the stream while pending: nothing to run
            await self.r.xack(self.key, GROUP, *gone)
        return self._claimed(result[1])

    async def touch(self, consumer: str, entries: list[str]) -> None:
        """``XCLAIM`` to itself with idle 0 (resets the idle time)."""
        if entries:
            ids: Any = entries
            await self.r.xclaim(self.key, GROUP, consumer, 0, ids, idle=0, justid=True)

    async def ack(self, entry: str) -> None:
        """``XACK`` and ``XDEL`` in one transaction."""
        async with self.r.pipeline(transaction=True) as pipe:
            pipe.xack(self.key, GROUP, entry)
            pipe.xdel(self.key, entry)
            await pipe.execute()

    async def release(self, consumer: str, entries: list[str]) -> None:
        """Mark ``entries`` idle for ever: the next ``reclaim`` of any worker takes them."""
        if entries:
            ids: Any = entries
            idle = self.RELEASED_IDLE_MS
            await self.r.xclaim(self.key, GROUP, consumer, 0, ids, idle=idle, justid=True)

    async def depth(self) -> dict[str, int]:
        """From ``XINFO GROUPS``: entries not yet delivered (lag) and delivered, not acked."""
        try:
            groups = await self.r.xinfo_groups(self.key)
        except ResponseError:  # no run was ever queued here: no stream yet
            return {"pending": 0, "claimed": 0}
        for group in groups:
            if _text(group.get("name")) == GROUP:
                lag = group.get("lag")
                return {"pending": int(lag or 0), "claimed": int(group.get("pending") or 0)}
        return {"pending": 0, "claimed": 0}


class RedisRunQueue(RedisStreamQueue[Job]):
    """The run queue: ``Job`` entries on ``key``."""

    def __init__(self, client: aioredis.Redis, key: str = "seekgraph:runq") -> None:
        super().__init__(client, key, Job.loads)


class LocalRunQueue:
    """The queue for one process: an ``asyncio.Queue`` (nothing survives a restart)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Claimed[Job]] = asyncio.Queue()
        self._held: dict[str, Claimed[Job]] = {}
        self._next = 0

    async def setup(self) -> None:
        """Nothing to create."""

    async def put(self, job: Job) -> str:
        """Append."""
        self._next += 1
        entry = f"{self._next}-0"
        await self._queue.put(Claimed(entry, job))
        return entry

    async def claim(self, consumer: str, count: int, block_ms: int) -> list[Claimed[Job]]:
        """Up to ``count`` jobs, waiting up to ``block_ms`` for the first."""
        try:
            first = await asyncio.wait_for(self._queue.get(), block_ms / 1000)
        except TimeoutError:
            return []
        out = [first]
        while len(out) < count and not self._queue.empty():
            out.append(self._queue.get_nowait())
        for claimed in out:
            self._held[claimed.entry] = claimed
        return out

    async def reclaim(self, consumer: str, idle_ms: int, count: int) -> list[Claimed[Job]]:
        """One process: nobody else's jobs to take."""
        return []

    async def touch(self, consumer: str, entries: list[str]) -> None:
        """Nothing to show."""

    async def ack(self, entry: str) -> None:
        """Forget the job."""
        self._held.pop(entry, None)

    async def release(self, consumer: str, entries: list[str]) -> None:
        """Put the jobs back at the head of the queue."""
        for entry in entries:
            claimed = self._held.pop(entry, None)
            if claimed is not None:
                await self._queue.put(claimed)

    async def depth(self) -> dict[str, int]:
        """Waiting and held jobs."""
        return {"pending": self._queue.qsize(), "claimed": len(self._held)}
