"""What instances share: thread owners, the one-run-per-thread lock, and the routing table.

``RedisCoordinator`` serves several instances (``local_coordination`` has the one-process
kind for the SQLite set-up). Redis holds routing and locks only; it is not an event bus.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import redis
import redis.asyncio as aioredis

#: How long the last holder of a thread's lock is remembered (its fencing record).
FENCE_RECORD_MS = 7 * 24 * 3600 * 1000

# The lock of a thread is ``lock:<thread>`` (expires unless refreshed); ``fence:<thread>``
# records which token acquired it last. A token may write while it holds the lock, or when
# the lock lapsed and nobody else acquired it since (then it takes the lock back). Every
# script below starts with this check, so the check and what follows are one atomic step.
FENCE_PRELUDE = """
local held = redis.call('get', KEYS[1])
if held ~= ARGV[1] then
  if held or redis.call('get', KEYS[2]) ~= ARGV[1] then
    return redis.error_reply('SEEKGRAPH_LOST_LOCK this run no longer holds the thread lock')
  end
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
"""
#: Marker of the error a fenced script returns when the token lost the lock.
LOST_LOCK_MARK = "SEEKGRAPH_LOST_LOCK"

_ACQUIRE = """
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('set', KEYS[2], ARGV[1], 'PX', ARGV[3])
  return 1
end
return 0
"""
# KEYS: lock, fence, route; ARGV: token, ttl ms, route value ('' = none)
_REFRESH = """
local held = redis.call('get', KEYS[1])
if held == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
elseif (not held) and redis.call('get', KEYS[2]) == ARGV[1] then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  return 0
end
if ARGV[3] ~= '' then
  redis.call('set', KEYS[3], ARGV[3], 'PX', ARGV[2])
end
return 1
"""
# KEYS: lock, fence; ARGV: from token, to token, ttl ms, fence record ms
_HANDOFF = """
local held = redis.call('get', KEYS[1])
if held ~= ARGV[1] then
  if held or redis.call('get', KEYS[2]) ~= ARGV[1] then
    return 0
  end
end
redis.call('set', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[4])
return 1
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""


@dataclass(frozen=True)
class Route:
    """Where a thread's live run is: the instance's base URL and the run id."""

    instance: str
    run_id: str


class Coordinator(Protocol):
    """Shared bookkeeping between instances."""

    async def ping(self) -> None:
        """Raise when the shared store is unreachable."""
        ...

    async def create_thread(self, thread_id: str, owner: str) -> bool:
        """Record a new thread; False when it already exists."""
        ...

    async def owner(self, thread_id: str) -> str | None:
        """The user who owns the thread, or None."""
        ...

    async def threads_of(self, owner: str) -> list[str]:
        """Thread ids owned by ``owner``, newest first."""
        ...

    async def set_title(self, thread_id: str, title: str) -> None:
        """Name the thread after its first question (kept once set)."""
        ...

    async def created_at(self, thread_id: str) -> float | None:
        """When the thread was created (epoch seconds)."""
        ...

    async def title(self, thread_id: str) -> str | None:
        """The thread's title."""
        ...

    async def set_last_run(self, thread_id: str, run_id: str, context: dict[str, Any]) -> None:
        """Remember the thread's latest run and its per-run settings (to continue it)."""
        ...

    async def last_run(self, thread_id: str) -> tuple[str, dict[str, Any]] | None:
        """The thread's latest run id and its per-run settings."""
        ...

    async def acquire(self, thread_id: str, token: str, ttl_ms: int) -> bool:
        """Take the thread's run lock (``SET NX PX``)."""
        ...

    async def refresh(
        self, thread_id: str, token: str, ttl_ms: int, route: Route | None = None
    ) -> bool:
        """Extend the lock (and publish ``route``) while ``token`` may hold it.

        A lock that lapsed with nobody acquiring it since is taken back: its holder was
        only slow, not replaced. False once anyone else acquired the lock.
        """
        ...

    def sync_refresher(
        self, thread_id: str, token: str, ttl_ms: int, route: Route | None
    ) -> Callable[[], bool]:
        """``refresh`` as a blocking call, for a keeper thread the event loop cannot starve."""
        ...

    async def handoff(self, thread_id: str, from_token: str, to_token: str, ttl_ms: int) -> bool:
        """Pass the lock from ``from_token`` to ``to_token`` (a queued run's lock to its worker).

        Works while ``from_token`` holds the lock, or when it lapsed with nobody acquiring it
        since; False otherwise.
        """
        ...

    async def release(self, thread_id: str, token: str) -> None:
        """Drop the lock if ``token`` holds it."""
        ...

    async def holder(self, thread_id: str) -> str | None:
        """The token holding the lock, or None."""
        ...

    async def set_route(self, thread_id: str, route: Route, ttl_ms: int) -> None:
        """Publish where the live run is, expiring unless refreshed."""
        ...

    async def route(self, thread_id: str) -> Route | None:
        """Where the live run is, if its instance is still refreshing the entry."""
        ...

    async def clear_route(self, thread_id: str, run_id: str) -> None:
        """Remove the route of a finished run."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisCoordinator:
    """Coordination through Redis keys under ``prefix``.

    ``sync_client`` (same server) serves the keeper threads that refresh run locks.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        prefix: str = "seekgraph",
        sync_client: redis.Redis | None = None,
        thread_ttl_s: int | None = None,
    ) -> None:
        self.r = client
        self.p = prefix
        self.sync = sync_client
        self.thread_ttl_s = thread_ttl_s
        """A new thread's retention (``server.runs.retention``); None: kept for ever."""

    def fence_keys(self, thread_id: str) -> tuple[str, str]:
        """The lock key and the fencing-record key of a thread (for fenced scripts)."""
        return self.lock_prefix + thread_id, self._k("fence", thread_id)

    @property
    def lock_prefix(self) -> str:
        """What a thread's lock key is its id after (the live-run count reads the locks)."""
        return self._k("lock", "")

    def _k(self, *parts: str) -> str:
        return ":".join([self.p, *parts])

    async def ping(self) -> None:
        """Raise when Redis does not answer."""
        await self.r.ping()

    async def create_thread(self, thread_id: str, owner: str) -> bool:
        """Record a thread with its owner (atomically, first writer wins)."""
        created = await self.r.hsetnx(self._k("thread", thread_id), "owner", owner)
        if created:
            now = time.time()
            mine = self._k("user-threads", owner)
            async with self.r.pipeline(transaction=False) as pipe:
                pipe.hset(self._k("thread", thread_id), "created_at", str(now))
                pipe.zadd(mine, {thread_id: now})
                if self.thread_ttl_s is not None:
                    pipe.expire(self._k("thread", thread_id), self.thread_ttl_s)
                    pipe.expire(mine, self.thread_ttl_s, nx=True)
                    pipe.expire(mine, self.thread_ttl_s, gt=True)
                await pipe.execute()
        return bool(created)

    async def owner(self, thread_id: str) -> str | None:
        """The thread's owner."""
        value = await self.r.hget(self._k("thread", thread_id), "owner")
        return _text(value) if value is not None else None

    async def threads_of(self, owner: str) -> list[str]:
        """Threads of ``owner``, newest first (those past their retention are forgotten)."""
        mine = self._k("user-threads", owner)
        ids = [_text(i) for i in await self.r.zrevrange(mine, 0, 199)]
        if not ids:
            return []
        async with self.r.pipeline(transaction=False) as pipe:
            for thread_id in ids:
                pipe.exists(self._k("thread", thread_id))
            alive = await pipe.execute()
        gone = [t for t, there in zip(ids, alive, strict=True) if not there]
        if gone:
            await self.r.zrem(mine, *gone)
        return [t for t, there in zip(ids, alive, strict=True) if there]

    async def set_title(self, thread_id: str, title: str) -> None:
        """Set the title if none yet."""
        await self.r.hsetnx(self._k("thread", thread_id), "title", title)

    async def title(self, thread_id: str) -> str | None:
        """The title."""
        value = await self.r.hget(self._k("thread", thread_id), "title")
        return _text(value) if value is not None else None

    async def created_at(self, thread_id: str) -> float | None:
        """When the thread was created."""
        value = await self.r.hget(self._k("thread", thread_id), "created_at")
        return float(_text(value)) if value is not None else None

    async def set_last_run(self, thread_id: str, run_id: str, context: dict[str, Any]) -> None:
        """Remember the latest run."""
        await self.r.hset(
            self._k("thread", thread_id),
            mapping={"last_run": run_id, "last_context": json.dumps(context)},
        )

    async def last_run(self, thread_id: str) -> tuple[str, dict[str, Any]] | None:
        """The latest run."""
        run_id, context = await self.r.hmget(
            self._k("thread", thread_id), ["last_run", "last_context"]
        )
        if run_id is None:
            return None
        return _text(run_id), json.loads(context or b"{}")

    async def acquire(self, thread_id: str, token: str, ttl_ms: int) -> bool:
        """``SET lock token NX PX ttl``, recording ``token`` as the thread's last holder."""
        keys = self.fence_keys(thread_id)
        return bool(await self.r.eval(_ACQUIRE, 2, *keys, token, ttl_ms, FENCE_RECORD_MS))

    def _refresh_args(
        self, thread_id: str, token: str, ttl_ms: int, route: Route | None
    ) -> list[Any]:
        value = f"{route.run_id} {route.instance}" if route is not None else ""
        return [*self.fence_keys(thread_id), self._k("route", thread_id), token, ttl_ms, value]

    async def refresh(
        self, thread_id: str, token: str, ttl_ms: int, route: Route | None = None
    ) -> bool:
        """Extend (or take back) the lock and publish the route, unless someone else has it."""
        args = self._refresh_args(thread_id, token, ttl_ms, route)
        return bool(await self.r.eval(_REFRESH, 3, *args))

    def sync_refresher(
        self, thread_id: str, token: str, ttl_ms: int, route: Route | None
    ) -> Callable[[], bool]:
        """``refresh`` on the blocking client (for a keeper thread)."""
        if self.sync is None:
            raise RuntimeError("RedisCoordinator needs sync_client for keeper threads")
        client, args = self.sync, self._refresh_args(thread_id, token, ttl_ms, route)
        return lambda: bool(client.eval(_REFRESH, 3, *args))

    async def handoff(self, thread_id: str, from_token: str, to_token: str, ttl_ms: int) -> bool:
        """One script: the check and the pass are one step."""
        keys = self.fence_keys(thread_id)
        args = (from_token, to_token, ttl_ms, FENCE_RECORD_MS)
        return bool(await self.r.eval(_HANDOFF, 2, *keys, *args))

    async def release(self, thread_id: str, token: str) -> None:
        """Delete the lock only if we hold it."""
        await self.r.eval(_RELEASE, 1, self._k("lock", thread_id), token)

    async def holder(self, thread_id: str) -> str | None:
        """The current lock token."""
        value = await self.r.get(self._k("lock", thread_id))
        return _text(value) if value is not None else None

    async def set_route(self, thread_id: str, route: Route, ttl_ms: int) -> None:
        """Publish the origin of the live run."""
        await self.r.set(self._k("route", thread_id), f"{route.run_id} {route.instance}", px=ttl_ms)

    async def route(self, thread_id: str) -> Route | None:
        """The origin of the live run."""
        value = await self.r.get(self._k("route", thread_id))
        if value is None:
            return None
        run_id, instance = _text(value).split(" ", 1)
        return Route(instance=instance, run_id=run_id)

    async def clear_route(self, thread_id: str, run_id: str) -> None:
        """Remove the route if it still names ``run_id``."""
        current = await self.route(thread_id)
        if current is not None and current.run_id == run_id:
            await self.r.delete(self._k("route", thread_id))

    async def close(self) -> None:
        """Close the connection pools (the async one is shared: ``aclose`` alone keeps it open)."""
        await self.r.aclose(close_connection_pool=True)
        if self.sync is not None:
            self.sync.close()
