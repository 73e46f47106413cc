"""Coordination for one instance without Redis (the SQLite set-up).

The same bookkeeping as ``RedisCoordinator``: locks and routes in memory, thread owners in a
JSON file beside the checkpoints.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seekgraph.server.runs.coordination import Route


class LocalCoordinator:
    """The same bookkeeping for a single instance without Redis.

    Locks and routes live in memory (they die with the process anyway); thread owners are
    kept in a JSON file beside the SQLite checkpoints, so threads survive a restart.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._threads: dict[str, dict[str, Any]] = {}
        if path is not None and path.exists():
            self._threads = json.loads(path.read_text(encoding="utf-8"))
        self._locks: dict[str, tuple[str, float]] = {}
        self._fences: dict[str, str] = {}
        self._routes: dict[str, tuple[Route, float]] = {}

    async def _save(self) -> None:
        if self.path is None:
            return
        data = json.dumps(self._threads)
        path = self.path

        def write() -> None:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(data, encoding="utf-8")
            tmp.replace(path)

        await asyncio.to_thread(write)

    async def ping(self) -> None:
        """Always reachable."""

    async def create_thread(self, thread_id: str, owner: str) -> bool:
        """Record a thread."""
        if thread_id in self._threads:
            return False
        self._threads[thread_id] = {"owner": owner, "created_at": time.time(), "last_run": None}
        await self._save()
        return True

    async def forget_thread(self, thread_id: str) -> None:
        """Remove the thread's record (it was deleted)."""
        if self._threads.pop(thread_id, None) is not None:
            await self._save()

    async def owner(self, thread_id: str) -> str | None:
        """The owner."""
        info = self._threads.get(thread_id)
        return None if info is None else str(info["owner"])

    async def threads_of(self, owner: str) -> list[str]:
        """Threads of ``owner``, newest first."""
        mine = [(i["created_at"], t) for t, i in self._threads.items() if i["owner"] == owner]
        return [t for _, t in sorted(mine, reverse=True)]

    async def set_title(self, thread_id: str, title: str) -> None:
        """Set the title if none yet."""
        info = self._threads.get(thread_id)
        if info is not None and not info.get("title"):
            info["title"] = title
            await self._save()

    async def title(self, thread_id: str) -> str | None:
        """The title."""
        info = self._threads.get(thread_id)
        return None if info is None else info.get("title")

    async def created_at(self, thread_id: str) -> float | None:
        """When the thread was created."""
        info = self._threads.get(thread_id)
        return None if info is None else float(info["created_at"])

    async def set_last_run(self, thread_id: str, run_id: str, context: dict[str, Any]) -> None:
        """Remember the latest run."""
        self._threads[thread_id]["last_run"] = [run_id, context]
        await self._save()

    async def last_run(self, thread_id: str) -> tuple[str, dict[str, Any]] | None:
        """The latest run."""
        info = self._threads.get(thread_id)
        if info is None or not info["last_run"]:
            return None
        run_id, context = info["last_run"]
        return str(run_id), dict(context)

    def _live_lock(self, thread_id: str) -> str | None:
        held = self._locks.get(thread_id)
        if held is None or held[1] < time.monotonic():
            return None
        return held[0]

    async def acquire(self, thread_id: str, token: str, ttl_ms: int) -> bool:
        """Take the lock if free or expired."""
        if self._live_lock(thread_id) is not None:
            return False
        self._locks[thread_id] = (token, time.monotonic() + ttl_ms / 1000)
        self._fences[thread_id] = token
        return True

    def _refresh(self, thread_id: str, token: str, ttl_ms: int, route: Route | None) -> bool:
        held = self._live_lock(thread_id)
        if held != token and (held is not None or self._fences.get(thread_id) != token):
            return False
        self._locks[thread_id] = (token, time.monotonic() + ttl_ms / 1000)
        if route is not None:
            self._routes[thread_id] = (route, time.monotonic() + ttl_ms / 1000)
        return True

    async def refresh(
        self, thread_id: str, token: str, ttl_ms: int, route: Route | None = None
    ) -> bool:
        """Extend (or take back) our lock, unless someone else acquired it since."""
        return self._refresh(thread_id, token, ttl_ms, route)

    def sync_refresher(
        self, thread_id: str, token: str, ttl_ms: int, route: Route | None
    ) -> Callable[[], bool]:
        """``refresh`` as a plain call."""
        return lambda: self._refresh(thread_id, token, ttl_ms, route)

    async def handoff(self, thread_id: str, from_token: str, to_token: str, ttl_ms: int) -> bool:
        """Pass the lock on while ``from_token`` may hold it."""
        held = self._live_lock(thread_id)
        if held != from_token and (held is not None or self._fences.get(thread_id) != from_token):
            return False
        self._locks[thread_id] = (to_token, time.monotonic() + ttl_ms / 1000)
        self._fences[thread_id] = to_token
        return True

    async def release(self, thread_id: str, token: str) -> None:
        """Drop our lock."""
        if self._live_lock(thread_id) == token:
            del self._locks[thread_id]

    async def holder(self, thread_id: str) -> str | None:
        """The lock token."""
        return self._live_lock(thread_id)

    async def set_route(self, thread_id: str, route: Route, ttl_ms: int) -> None:
        """Remember the route."""
        self._routes[thread_id] = (route, time.monotonic() + ttl_ms / 1000)

    async def route(self, thread_id: str) -> Route | None:
        """The route, unless expired."""
        held = self._routes.get(thread_id)
        if held is None or held[1] < time.monotonic():
            return None
        return held[0]

    async def clear_route(self, thread_id: str, run_id: str) -> None:
        """Drop the route of a finished run."""
        held = self._routes.get(thread_id)
        if held is not None and held[0].run_id == run_id:
            del self._routes[thread_id]

    async def close(self) -> None:
        """Nothing to close."""
