"""Instances started at the same moment on one Redis all come up (an orchestrator's replicas)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import redis

from tests.integration.processes import Proc, shared_redis, start_app


def test_three_instances_started_at_once_on_a_fresh_redis_all_come_up(tmp_path: Path) -> None:
    """The checkpoint indexes are dropped first, so each instance finds none and creates them."""
    procs: list[Proc] = []
    url = shared_redis(tmp_path, procs)
    client = redis.Redis.from_url(url)
    for name in client.execute_command("FT._LIST"):
        if name.decode().startswith("checkpoint"):  # the saver's; its documents stay
            client.execute_command("FT.DROPINDEX", name)
    client.close()
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
