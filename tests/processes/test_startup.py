"""Instances started at the same moment on one Redis all come up (an orchestrator's replicas)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import redis

from seekgraph.server.runs.fencing import FencedRedisSaver
from tests.support.processes import Proc, shared_redis, start_app


def drop_checkpoint_indexes(url: str) -> None:
    """Drop the saver's search indexes (its documents stay): the next start creates them."""
    client = redis.Redis.from_url(url)
    for name in client.execute_command("FT._LIST"):
        if name.decode().startswith("checkpoint"):
            client.execute_command("FT.DROPINDEX", name)
    client.close()


async def test_checkpoint_stores_set_up_together_all_succeed(redis_url: str) -> None:
    """Three instances' savers set up at once: each finds no index, each creates it; the ones
    that come second are told "Index already exists" — and carry on, the index is there."""
    import redis.asyncio as aioredis

    drop_checkpoint_indexes(redis_url)
    clients = [aioredis.from_url(redis_url) for _ in range(3)]
    try:
        savers = [FencedRedisSaver(redis_client=c) for c in clients]
        results = await asyncio.gather(*(s.asetup() for s in savers), return_exceptions=True)
        ready = [await s.indexes_ready() for s in savers]
    finally:
        for c in clients:
            await c.aclose()
    assert [repr(r) for r in results if isinstance(r, BaseException)] == []
    assert ready == [True, True, True]


def test_three_instances_started_at_once_on_a_fresh_redis_all_come_up(tmp_path: Path) -> None:
    """The checkpoint indexes are dropped first, so each instance finds none and creates them."""
    procs: list[Proc] = []
    url = shared_redis(tmp_path, procs)
    drop_checkpoint_indexes(url)
    env = {"SEEKGRAPH_REDIS_URL": url, "SEEKGRAPH_HEARTBEAT_SECONDS": "0.5"}
    started: dict[str, Proc] = {}
    failed: dict[str, str] = {}
    gate = threading.Barrier(3)

    def start(name: str) -> None:
        gate.wait()
        try:
            started[name] = start_app(tmp_path, name, env)
        except AssertionError as exc:  # it died at start: its log says why
            failed[name] = str(exc)[-600:]

    threads: list[Any] = [threading.Thread(target=start, args=(f"i{n}",)) for n in range(3)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ready = {n: httpx.get(f"{p.url}/readyz", timeout=10).status_code
                 for n, p in started.items()}  # fmt: skip
    finally:
        for p in [*started.values(), *procs]:
            p.stop()
    assert failed == {}
    assert ready == {"i0": 200, "i1": 200, "i2": 200}
