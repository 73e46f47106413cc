"""Limits per API key's user: requests a minute, and runs live at once.

Checked before any work: a request over its user's rate, or a run past the user's live
runs, gets 429 with ``Retry-After``. ``RedisLimits`` counts across every instance;
``LocalLimits`` is the one-process kind (the SQLite set-up). A live run's slot expires on its
own when its instance dies without releasing it.
"""

from __future__ import annotations

import time
from typing import Protocol

import redis.asyncio as aioredis

WINDOW_SECONDS = 60


class Limits(Protocol):
    """Counting of requests and live runs per user."""

    async def hit(self, user: str, per_minute: int) -> float | None:
        """Count one request; the seconds to wait when ``user`` is over ``per_minute``."""
        ...

    async def claim_run(self, user: str, run_id: str, most: int, ttl_ms: int) -> bool:
        """Take a live-run slot for ``run_id``; False when ``user`` has ``most`` live."""
        ...

    async def release_run(self, user: str, run_id: str) -> None:
        """Give the run's slot back (a run that holds none is ignored)."""
        ...


def _window(now: float) -> tuple[int, float]:
    """The current minute's number and the seconds left in it."""
    return int(now // WINDOW_SECONDS), WINDOW_SECONDS - now % WINDOW_SECONDS


# KEYS: the user's live-run set; ARGV: run id, now ms, expiry ms, most
_CLAIM = """
redis.call('zremrangebyscore', KEYS[1], '-inf', ARGV[2])
if redis.call('zscore', KEYS[1], ARGV[1]) then return 1 end
if redis.call('zcard', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('zadd', KEYS[1], ARGV[3], ARGV[1])
redis.call('pexpireat', KEYS[1], ARGV[3])
return 1
"""


class RedisLimits:
    """Limits shared by every instance, in Redis keys under ``prefix``."""

    def __init__(self, client: aioredis.Redis, prefix: str = "seekgraph") -> None:
        self.r = client
        self.p = prefix

    async def hit(self, user: str, per_minute: int) -> float | None:
        """``INCR`` the user's counter of this minute."""
        minute, left = _window(time.time())
        key = f"{self.p}:rate:{user}:{minute}"
        pipe = self.r.pipeline()
        pipe.incr(key)
        pipe.expire(key, WINDOW_SECONDS + 1)
        count, _ = await pipe.execute()
        return left if int(count) > per_minute else None

    async def claim_run(self, user: str, run_id: str, most: int, ttl_ms: int) -> bool:
        """One atomic script: drop expired slots, then take one if fewer than ``most``."""
        now = int(time.time() * 1000)
        key = f"{self.p}:live-runs:{user}"
        return bool(await self.r.eval(_CLAIM, 1, key, run_id, now, now + ttl_ms, most))

    async def release_run(self, user: str, run_id: str) -> None:
        """Remove the run from the user's live set."""
        await self.r.zrem(f"{self.p}:live-runs:{user}", run_id)


class LocalLimits:
    """The same limits within one process."""

    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, int]] = {}
        self._live: dict[str, dict[str, float]] = {}

    async def hit(self, user: str, per_minute: int) -> float | None:
        """Count in this minute's window."""
        minute, left = _window(time.time())
        seen_minute, count = self._counts.get(user, (minute, 0))
        count = count + 1 if seen_minute == minute else 1
        self._counts[user] = (minute, count)
        return left if count > per_minute else None

    async def claim_run(self, user: str, run_id: str, most: int, ttl_ms: int) -> bool:
        """Take a slot unless ``most`` unexpired ones are held."""
        now = time.monotonic()
        live = {r: t for r, t in self._live.get(user, {}).items() if t > now}
        if run_id not in live and len(live) >= most:
            self._live[user] = live
            return False
        live[run_id] = now + ttl_ms / 1000
        self._live[user] = live
        return True

    async def release_run(self, user: str, run_id: str) -> None:
        """Drop the slot."""
        self._live.get(user, {}).pop(run_id, None)
