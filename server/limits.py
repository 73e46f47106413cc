"""Limits per API key's user: requests a minute, runs live at once, runs waiting.

Checked before any work: a request over its user's rate, a run past the user's live runs,
or a run past the runs that may wait (per key, and per thread) gets 429 with
``Retry-After``. ``RedisLimits`` counts across every instance; ``LocalLimits`` is the
one-process kind (the SQLite set-up). A live run's slot expires on its own when its instance
dies without releasing it; a waiting run's when its waiting time (the queued lock's) ends.

The request rate is the ``limits`` library's moving window (``RequestRate``), in Redis or in
memory. Live and waiting runs are counted here by hand: a slot is held by a thread's lock
token and lapses with the lock, which no rate limiter knows about.

Every way to start work counts: a run that holds its thread (streamed here, or queued with
the thread reserved for it) is live from the moment it is accepted; a run that waits for a
busy thread (``enqueue``, ``interrupt``, ``rollback``) is waiting until its worker takes the
thread, and live from then on — a worker starts it only when its key has a live slot free.
"""

from __future__ import annotations

import time
from typing import Protocol

import redis.asyncio as aioredis
from limits import RateLimitItemPerMinute
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter


class Limits(Protocol):
    """Counting of requests and live runs per API key."""

    async def hit(self, key: str, per_minute: int) -> float | None:
        """Count one request; the seconds to wait when ``key`` is over ``per_minute``."""
        ...

    async def claim_run(self, key: str, thread_id: str, token: str, most: int) -> bool:
        """Count the run holding ``thread_id``'s lock as ``token``; False at ``most`` live.

        Called with the thread's lock held: a run counts while its lock is held by it, so
        the runs of an instance that died stop counting when their locks lapse.
        """
        ...

    async def release_run(self, key: str, thread_id: str, token: str) -> None:
        """Stop counting the run (one that was never counted is ignored)."""
        ...

    async def transfer_run(self, key: str, thread_id: str, old: str, new: str) -> None:
        """The run counted under ``old`` is counted under ``new`` (its lock passed on)."""
        ...

    async def claim_waiting(
        self, key: str, thread_id: str, run_id: str, most_per_key: int, most_per_thread: int,
        ttl_ms: int,
    ) -> str | None:  # fmt: skip
        """Count a run that waits for ``thread_id``; None, or the bound it would pass.

        The bound is ``key`` or ``thread``. Counting a run again refreshes its ``ttl_ms``.
        """
        ...

    async def release_waiting(self, key: str, thread_id: str, run_id: str) -> None:
        """The run waits no more (it took its thread, or ended)."""
        ...

    async def add_usage(self, user: str, tokens: int, cost: float) -> None:
        """Add a run's model tokens and estimated cost to the user's day (UTC)."""
        ...

    async def usage_today(self, user: str) -> tuple[int, float]:
        """The user's model tokens and estimated cost today (UTC)."""
        ...


def today() -> str:
    """Today's date in UTC (the day a daily budget counts)."""
    return time.strftime("%Y-%m-%d", time.gmtime())


def seconds_to_midnight() -> int:
    """Seconds until the next UTC day (a spent daily budget's ``Retry-After``)."""
    return 86_400 - int(time.time()) % 86_400


class RequestRate:
    """A key's requests in any 60 seconds, counted by ``limits``' moving window.

    A moving window, not a fixed one: a key gets ``per_minute`` requests in *any* minute (a
    fixed window lets twice as many through across a minute's edge), and ``Retry-After`` is
    when its oldest request in the window leaves it. A refused request is not counted. The
    cost is a list of up to ``per_minute`` timestamps per busy key, expiring after a minute.
    """

    def __init__(self, storage: Storage) -> None:
        self.limiter = MovingWindowRateLimiter(storage)

    async def hit(self, key: str, per_minute: int) -> float | None:
        """Count one request; None, or the seconds until ``key`` may make one again."""
        item = RateLimitItemPerMinute(per_minute)
        if await self.limiter.hit(item, key):
            return None
        stats = await self.limiter.get_window_stats(item, key)
        return max(0.0, stats.reset_time - time.time())


# KEYS: the key's live-run set; ARGV: member (token LF thread), most, now, lock key prefix.
# A member whose thread lock no longer holds its token is a run that ended without saying
# so (its instance died): it is dropped before counting.
_CLAIM = """
local live = 0
for _, m in ipairs(redis.call('zrange', KEYS[1], 0, -1)) do
  local sep = string.find(m, string.char(10), 1, true)
  local token, thread = string.sub(m, 1, sep - 1), string.sub(m, sep + 1)
  if m ~= ARGV[1] and redis.call('get', ARGV[4] .. thread) == token then
    live = live + 1
  else
    redis.call('zrem', KEYS[1], m)
  end
end
if live >= tonumber(ARGV[2]) then return 0 end
redis.call('zadd', KEYS[1], ARGV[3], ARGV[1])
return 1
"""


# KEYS: the key's and the thread's waiting sets; ARGV: run id, most per key, most per
# thread, now ms, expiry ms, ttl ms. Members whose expiry passed are dropped first.
_WAIT = """
redis.call('zremrangebyscore', KEYS[1], '-inf', ARGV[4])
redis.call('zremrangebyscore', KEYS[2], '-inf', ARGV[4])
if not redis.call('zscore', KEYS[1], ARGV[1]) then
  if redis.call('zcard', KEYS[1]) >= tonumber(ARGV[2]) then return 'key' end
  if redis.call('zcard', KEYS[2]) >= tonumber(ARGV[3]) then return 'thread' end
end
redis.call('zadd', KEYS[1], ARGV[5], ARGV[1])
redis.call('zadd', KEYS[2], ARGV[5], ARGV[1])
redis.call('pexpire', KEYS[1], ARGV[6])
redis.call('pexpire', KEYS[2], ARGV[6])
return ''
"""


class RedisLimits:
    """Limits shared by every instance, in Redis keys under ``prefix``.

    A live run is one whose thread lock (``lock_prefix`` + thread id, the coordinator's
    ``RedisCoordinator.lock_prefix``) still holds its token.
    """

    def __init__(self, client: aioredis.Redis, lock_prefix: str, prefix: str = "seekgraph") -> None:
        self.r = client
        self.p = prefix
        self.lock_prefix = lock_prefix
        # the request rate on the same connections (its keys: ``<prefix>:rate:LIMITER/…``)
        self.rate = RequestRate(
            RedisStorage(
                "async+redis://",
                implementation="redispy",
                key_prefix=f"{prefix}:rate",
                # documented (``use_basic``), typed by the library as its URL options only
                connection_pool=client.connection_pool,  # type: ignore[arg-type]
            )
        )

    async def hit(self, key: str, per_minute: int) -> float | None:
        """The key's moving window in Redis, shared by every instance."""
        return await self.rate.hit(key, per_minute)

    async def claim_run(self, key: str, thread_id: str, token: str, most: int) -> bool:
        """One atomic script: drop runs whose lock is gone, then count this one if room."""
        member = f"{token}\n{thread_id}"
        args = (member, most, int(time.time() * 1000), self.lock_prefix)
        return bool(await self.r.eval(_CLAIM, 1, f"{self.p}:live-runs:{key}", *args))

    async def release_run(self, key: str, thread_id: str, token: str) -> None:
        """Remove the run from the key's live set."""
        await self.r.zrem(f"{self.p}:live-runs:{key}", f"{token}\n{thread_id}")

    async def transfer_run(self, key: str, thread_id: str, old: str, new: str) -> None:
        """One transaction: the old member out, the new one in."""
        name = f"{self.p}:live-runs:{key}"
        async with self.r.pipeline(transaction=True) as pipe:
            pipe.zrem(name, f"{old}\n{thread_id}")
            pipe.zadd(name, {f"{new}\n{thread_id}": int(time.time() * 1000)})
            await pipe.execute()

    async def claim_waiting(
        self, key: str, thread_id: str, run_id: str, most_per_key: int, most_per_thread: int,
        ttl_ms: int,
    ) -> str | None:  # fmt: skip
        """One atomic script over the key's and the thread's waiting sets."""
        now = int(time.time() * 1000)
        keys = (f"{self.p}:waiting-runs:{key}", f"{self.p}:thread-waiting:{thread_id}")
        args = (run_id, most_per_key, most_per_thread, now, now + ttl_ms, ttl_ms)
        refused = await self.r.eval(_WAIT, 2, *keys, *args)
        text = refused.decode() if isinstance(refused, bytes) else str(refused or "")
        return text or None

    async def release_waiting(self, key: str, thread_id: str, run_id: str) -> None:
        """Out of both sets."""
        pipe = self.r.pipeline()
        pipe.zrem(f"{self.p}:waiting-runs:{key}", run_id)
        pipe.zrem(f"{self.p}:thread-waiting:{thread_id}", run_id)
        await pipe.execute()

    async def add_usage(self, user: str, tokens: int, cost: float) -> None:
        """``HINCRBY`` the day's hash (kept 40 days)."""
        name = f"{self.p}:usage:{today()}"
        pipe = self.r.pipeline()
        pipe.hincrby(name, f"{user}:tokens", tokens)
        pipe.hincrbyfloat(name, f"{user}:cost", cost)
        pipe.expire(name, 40 * 86_400)
        await pipe.execute()

    async def usage_today(self, user: str) -> tuple[int, float]:
        """The day's counts of ``user``."""
        tokens, cost = await self.r.hmget(
            f"{self.p}:usage:{today()}", [f"{user}:tokens", f"{user}:cost"]
        )
        return int(tokens or 0), float(cost or 0.0)


class LocalLimits:
    """The same limits within one process (its runs die with it: no lock check needed)."""

    def __init__(self) -> None:
        self.rate = RequestRate(MemoryStorage())
        self._live: dict[str, set[str]] = {}
        self._usage: dict[tuple[str, str], tuple[int, float]] = {}
        self._waiting: dict[str, dict[str, float]] = {}

    async def hit(self, key: str, per_minute: int) -> float | None:
        """The key's moving window in this process's memory."""
        return await self.rate.hit(key, per_minute)

    async def claim_run(self, key: str, thread_id: str, token: str, most: int) -> bool:
        """Count the run unless ``most`` are counted."""
        live = self._live.setdefault(key, set())
        if len(live) >= most:
            return False
        live.add(token)
        return True

    async def release_run(self, key: str, thread_id: str, token: str) -> None:
        """Stop counting it."""
        self._live.get(key, set()).discard(token)

    async def transfer_run(self, key: str, thread_id: str, old: str, new: str) -> None:
        """Swap the tokens."""
        live = self._live.setdefault(key, set())
        live.discard(old)
        live.add(new)

    async def claim_waiting(
        self, key: str, thread_id: str, run_id: str, most_per_key: int, most_per_thread: int,
        ttl_ms: int,
    ) -> str | None:  # fmt: skip
        """Count in both sets unless one is full."""
        now = time.monotonic()
        sets = (self._waiting.setdefault(f"key:{key}", {}),
                self._waiting.setdefault(f"thread:{thread_id}", {}))  # fmt: skip
        for waiting in sets:
            for gone in [r for r, until in waiting.items() if until <= now]:
                del waiting[gone]
        if run_id not in sets[0]:
            for name, waiting, most in (("key", sets[0], most_per_key),
                                        ("thread", sets[1], most_per_thread)):  # fmt: skip
                if len(waiting) >= most:
                    return name
        for waiting in sets:
            waiting[run_id] = now + ttl_ms / 1000
        return None

    async def release_waiting(self, key: str, thread_id: str, run_id: str) -> None:
        """Out of both sets."""
        self._waiting.get(f"key:{key}", {}).pop(run_id, None)
        self._waiting.get(f"thread:{thread_id}", {}).pop(run_id, None)

    async def add_usage(self, user: str, tokens: int, cost: float) -> None:
        """Add to today's counts."""
        day_tokens, day_cost = self._usage.get((today(), user), (0, 0.0))
        self._usage[(today(), user)] = (day_tokens + tokens, day_cost + cost)

    async def usage_today(self, user: str) -> tuple[int, float]:
        """Today's counts."""
        return self._usage.get((today(), user), (0, 0.0))
