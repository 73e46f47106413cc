"""How long a thread is kept, and deleting one with everything it made.

A thread lives ``SEEKGRAPH_RETENTION_MINUTES`` after it was last read or continued. Every
key it made — checkpoints, their writes, latest pointers and write registries (written by
the checkpointer with that expiry), passages, its record, run records, cancel flags, events,
fencing record — carries the same expiry, and ``touch`` renews all of them at once, so a
thread goes away whole, never in pieces. A run renews its thread while it runs, so a thread
never expires under a run. ``delete`` removes every key of a thread in one transaction.

Without Redis (one instance on SQLite) nothing expires by itself; ``delete`` still removes
a thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import redis.asyncio as aioredis
from redis.exceptions import RedisError
from redisvl.query import FilterQuery
from redisvl.query.filter import Tag

from seekgraph.server.runs.compact import passages_key

log = logging.getLogger("seekgraph.retention")

#: Most events a run's streams are kept after its thread was last used (they replay a
#: stream to a client that reconnects; what the run decided stays in its checkpoints).
EVENTS_MAX_S = 24 * 3600
#: Families whose keys carry their thread in braces (``seekgraph:<family>:{<thread>}…``).
BRACED = frozenset({"passages", "runs", "run", "cancel", "events"})
#: Rows fetched per search of the checkpointer's indexes.
PAGE = 1000


class Retention(Protocol):
    """Keeps threads for their retention and deletes them on request."""

    ttl_s: int | None
    """Seconds a thread is kept after its last use (None: for ever)."""

    async def touch(self, thread_id: str, at_least_s: int = 0) -> None:
        """Renew every key of the thread (it was read or continued).

        ``at_least_s``: keep it that long even when the retention is shorter (a run waits in
        the queue for it).
        """
        ...

    async def delete(self, thread_id: str) -> int:
        """Remove every key of the thread; how many there were."""
        ...


async def renew_while_running(retention: Retention | None, thread_id: str) -> None:
    """Renew the thread now and every third of its retention, and once more when cancelled.

    A run keeps this going while it runs, so its thread never expires under it, even with
    a retention shorter than the run; cancelled and awaited at the run's end, it renews the
    whole thread (the run's new keys with the old) from that moment.
    """
    if retention is None or retention.ttl_s is None:
        return
    every = max(0.5, retention.ttl_s / 3)
    try:
        while True:
            try:
                await retention.touch(thread_id)
            except RedisError as exc:  # the store may blip: the next round renews it
                log.warning("thread %s was not renewed (%s)", thread_id, exc)
            await asyncio.sleep(every)
    finally:
        try:
            await asyncio.shield(retention.touch(thread_id))
        except RedisError as exc:
            log.warning("thread %s was not renewed at its run's end (%s)", thread_id, exc)


def seconds_of(minutes: float) -> int | None:
    """The retention setting in seconds (0 minutes: None, kept for ever)."""
    return max(1, int(minutes * 60)) if minutes > 0 else None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass
class ThreadKeys:
    """Every key of one thread, by what renewing it means."""

    renewed: list[str] = field(default_factory=list)
    """Kept as long as the thread (renewed by ``touch``)."""
    events: list[str] = field(default_factory=list)
    """Kept as long as the thread, at most ``EVENTS_MAX_S``."""
    transient: list[str] = field(default_factory=list)
    """The run lock and route: their own short expiry; removed with the thread."""

    @property
    def all(self) -> list[str]:
        """Every key."""
        return [*self.renewed, *self.events, *self.transient]


class RedisRetention:
    """Retention on Redis: per-key expiry, renewed whole."""

    def __init__(
        self,
        client: aioredis.Redis,
        saver: Any,
        ttl_s: int | None,
        queue_key: str = "seekgraph:runq",
        prefix: str = "seekgraph",
    ) -> None:
        self.r = client
        self.saver = saver
        self.ttl_s = ttl_s
        self.queue_key = queue_key
        self.p = prefix

    def _thread(self, thread_id: str) -> str:
        return f"{self.p}:thread:{thread_id}"

    async def _saver_keys(self, thread_id: str) -> list[str]:
        """The checkpointer's keys of the thread, found through its search indexes."""
        from langgraph.checkpoint.redis.util import (
            from_storage_safe_str,
            to_storage_safe_id,
        )

        saver = self.saver
        safe = to_storage_safe_id(thread_id)
        keys: list[str] = []
        namespaces: set[str] = set()
        offset = 0
        while True:
            query = FilterQuery(
                filter_expression=Tag("thread_id") == safe,
                return_fields=["checkpoint_ns", "checkpoint_id"],
                num_results=PAGE,
            ).paging(offset, PAGE)
            found = await saver.checkpoints_index.search(query)
            for doc in found.docs:
                ns, cid = getattr(doc, "checkpoint_ns", ""), getattr(doc, "checkpoint_id", "")
                namespaces.add(ns)
                keys.append(saver._make_redis_checkpoint_key(safe, ns, cid))
                if saver._key_registry is not None:
                    keys.append(
                        saver._key_registry.make_write_keys_zset_key(
                            thread_id, from_storage_safe_str(ns), cid
                        )
                    )
            if len(found.docs) < PAGE:
                break
            offset += PAGE
        for ns in namespaces:
            keys.append(
                saver._make_redis_checkpoint_latest_key(thread_id, from_storage_safe_str(ns))
            )
        offset = 0
        while True:
            query = FilterQuery(
                filter_expression=Tag("thread_id") == safe,
                return_fields=["checkpoint_ns", "checkpoint_id", "task_id", "idx"],
                num_results=PAGE,
            ).paging(offset, PAGE)
            found = await saver.checkpoint_writes_index.search(query)
            for doc in found.docs:
                keys.append(
                    saver._make_redis_checkpoint_writes_key(
                        safe,
                        getattr(doc, "checkpoint_ns", ""),
                        getattr(doc, "checkpoint_id", ""),
                        getattr(doc, "task_id", ""),
                        getattr(doc, "idx", 0),
                    )
                )
            if len(found.docs) < PAGE:
                break
            offset += PAGE
        return keys

    async def keys_of(self, thread_id: str) -> ThreadKeys:
        """Every key the thread made, of every family."""
        out = ThreadKeys()
        out.renewed += await self._saver_keys(thread_id)
        runs_key = f"{self.p}:runs:{{{thread_id}}}"
        run_ids = [_text(r) for r in await self.r.zrange(runs_key, 0, -1)]
        out.renewed += [
            self._thread(thread_id),
            passages_key(thread_id, self.p),
            runs_key,
            f"{self.p}:fence:{thread_id}",
        ]
        for run_id in run_ids:
            out.renewed += [
                f"{self.p}:run:{{{thread_id}}}:{run_id}",
                f"{self.p}:cancel:{{{thread_id}}}:{run_id}",
            ]
            out.events += [
                f"{self.p}:events:{{{thread_id}}}:{run_id}:{channel}"
                for channel in ("native", "protocol")
            ]
        out.transient += [f"{self.p}:lock:{thread_id}", f"{self.p}:route:{thread_id}"]
        return out

    async def touch(self, thread_id: str, at_least_s: int = 0) -> None:
        """Give every key of the thread the whole retention again (at least ``at_least_s``)."""
        if self.ttl_s is None:
            return
        ttl_s = max(self.ttl_s, at_least_s)
        keys = await self.keys_of(thread_id)
        owner = await self.r.hget(self._thread(thread_id), "owner")
        async with self.r.pipeline(transaction=False) as pipe:
            if owner is not None:  # never re-create a record that is gone
                pipe.hset(self._thread(thread_id), "touched_at", str(time.time()))
            for key in keys.renewed:
                pipe.expire(key, ttl_s)
            for key in keys.events:
                pipe.expire(key, min(ttl_s, EVENTS_MAX_S))
            if owner is not None:  # the owner's list lives as long as their newest thread
                mine = f"{self.p}:user-threads:{_text(owner)}"
                pipe.expire(mine, ttl_s, nx=True)
                pipe.expire(mine, ttl_s, gt=True)
            await pipe.execute()

    async def delete(self, thread_id: str) -> int:
        """Every key of the thread in one transaction, its queued runs, its owner's entry."""
        keys = await self.keys_of(thread_id)
        owner = await self.r.hget(self._thread(thread_id), "owner")
        existing = 0
        async with self.r.pipeline(
            transaction=not getattr(self.saver, "cluster_mode", False)
        ) as pipe:
            for key in keys.all:
                pipe.delete(key)
            if owner is not None:
                pipe.zrem(f"{self.p}:user-threads:{_text(owner)}", thread_id)
            results = await pipe.execute()
        existing = sum(int(r) for r in results[: len(keys.all)])
        await self._drop_queued(thread_id)
        return existing

    async def _drop_queued(self, thread_id: str) -> None:
        """Remove the thread's entries from the run queue (nobody will run them)."""
        from redis.exceptions import ResponseError

        from seekgraph.server.runs.queue import GROUP

        try:
            entries: Any = await self.r.xrange(self.queue_key)
        except ResponseError:
            return
        gone = []
        for entry_id, fields in entries:
            raw = fields.get(b"job", fields.get("job"))
            if raw is not None and json.loads(raw).get("thread_id") == thread_id:
                gone.append(entry_id)
        if gone:
            async with self.r.pipeline(transaction=True) as pipe:
                pipe.xack(self.queue_key, GROUP, *gone)
                pipe.xdel(self.queue_key, *gone)
                await pipe.execute(raise_on_error=False)


def thread_of(key: str) -> str | None:
    """The thread a key belongs to, for the families a thread makes (else None)."""
    parts = key.split(":")
    if parts[0] == "seekgraph" and len(parts) > 2 and parts[1] in BRACED and "}" in key:
        return key[key.index("{") + 1 : key.index("}")]
    if parts[0] in ("checkpoint", "checkpoint_write", "checkpoint_latest", "write_keys_zset"):
        return parts[1] if len(parts) > 1 else None
    if len(parts) == 3 and parts[0] == "seekgraph" and parts[1] in ("thread", "fence"):
        return parts[2]
    return None


@dataclass
class PruneReport:
    """What ``prune`` found, and did unless it was a dry run."""

    threads: int = 0
    """Threads seen (a record, or keys of their own)."""
    expired: list[str] = field(default_factory=list)
    """Idle longer than the retention, or whose record is gone (orphans): deleted."""
    renewed: list[str] = field(default_factory=list)
    """Kept, but some of their keys had no expiry (written before retention was on)."""
    running: int = 0
    """Left alone: a run holds them."""
    keys: int = 0
    """Keys of the expired threads."""
    bytes: int = 0
    """Their memory (``MEMORY USAGE``)."""


async def threads_past_half(client: aioredis.Redis, ttl_s: int | None) -> tuple[int, int]:
    """(threads with less than half their retention left, threads without expiry)."""
    past = unmanaged = 0
    cursor: int = 0
    while True:
        cursor, found = await client.scan(cursor, match="seekgraph:thread:*", count=1000)
        if found:
            async with client.pipeline(transaction=False) as pipe:
                for key in found:
                    pipe.ttl(key)
                ttls = await pipe.execute()
            for left in ttls:
                if left == -1:
                    unmanaged += 1
                elif ttl_s is not None and 0 <= left < ttl_s / 2:
                    past += 1
        if cursor == 0:
            return past, unmanaged


async def prune(retention: RedisRetention, dry_run: bool = True) -> PruneReport:
    """Apply the retention now to every thread in Redis.

    A thread idle longer than the retention (by its last use, else its creation), or whose
    record is gone while keys of it remain, is deleted whole; a kept thread whose keys lack
    an expiry (written before retention was on) is renewed. Threads a run holds are left
    alone. ``dry_run`` reports without changing anything.
    """
    r = retention.r
    owned: dict[str, list[str]] = {}
    cursor: int = 0
    while True:
        cursor, found = await r.scan(cursor, count=1000)
        for raw in found:
            key = _text(raw)
            thread = thread_of(key)
            if thread is not None:
                owned.setdefault(thread, []).append(key)
        if cursor == 0:
            break
    report = PruneReport(threads=len(owned))
    now = time.time()
    for thread, seen in owned.items():
        if await r.exists(f"{retention.p}:lock:{thread}"):
            report.running += 1
            continue
        info: Any = await r.hmget(f"{retention.p}:thread:{thread}", ["touched_at", "created_at"])
        used = next((float(_text(v)) for v in info if v is not None), None)
        idle = None if used is None else now - used
        if used is None or (retention.ttl_s is not None and idle is not None
                            and idle > retention.ttl_s):  # fmt: skip
            keys = sorted(set(seen) | set((await retention.keys_of(thread)).all))
            async with r.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.memory_usage(key, samples=0)
                sizes = await pipe.execute()
            report.expired.append(thread)
            report.keys += sum(1 for size in sizes if size)
            report.bytes += sum(int(size or 0) for size in sizes)
            if not dry_run:
                await retention.delete(thread)
                if seen:
                    await r.delete(*seen)
            continue
        if retention.ttl_s is not None:
            async with r.pipeline(transaction=False) as pipe:
                for key in seen:
                    pipe.ttl(key)
                ttls = await pipe.execute()
            if any(t == -1 for t in ttls):
                report.renewed.append(thread)
                if not dry_run:
                    await retention.touch(thread)
    return report


class LocalRetention:
    """One instance on SQLite: threads are kept; ``delete`` removes one."""

    ttl_s: int | None = None

    def __init__(self, saver: Any, coordinator: Any) -> None:
        self.saver = saver
        self.coordinator = coordinator

    async def touch(self, thread_id: str, at_least_s: int = 0) -> None:
        """Nothing expires here."""

    async def delete(self, thread_id: str) -> int:
        """The thread's checkpoints and its record."""
        await self.saver.adelete_thread(thread_id)
        forget = getattr(self.coordinator, "forget_thread", None)
        if forget is not None:
            await forget(thread_id)
        return 1
