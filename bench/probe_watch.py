"""What another client sees while an attack runs: ``/healthz`` latency, the server's memory."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.processes import Proc


def rss_mb(pid: int) -> float:
    """The process's resident memory, MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Watch:
    """While an attack runs: another client's ``/healthz`` latencies and the server's memory."""

    def __init__(self, proc: Proc) -> None:
        self.proc = proc
        self.health: list[float] = []
        self.rss: list[float] = []
        self._done = threading.Event()
        self._threads = [threading.Thread(target=self._probe), threading.Thread(target=self._mem)]

    def __enter__(self) -> Watch:
        self.rss.append(rss_mb(self.proc.popen.pid))
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        for t in self._threads:
            t.join()

    def _probe(self) -> None:
        with httpx.Client(timeout=60) as c:
            while not self._done.is_set():
                started = time.monotonic()
                c.get(f"{self.proc.url}/healthz")
                self.health.append(time.monotonic() - started)
                self._done.wait(0.05)

    def _mem(self) -> None:
        while not self._done.is_set():
            self.rss.append(rss_mb(self.proc.popen.pid))
            self._done.wait(0.05)

    def numbers(self) -> dict[str, Any]:
        ms = sorted(h * 1000 for h in self.health) or [0.0]
        return {
            "healthz_p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1),
            "healthz_max_ms": round(ms[-1], 1),
            "memory_growth_mb": round(max(self.rss) - self.rss[0]),
        }


def repeated(attack: Any, seconds: float = 5.0, most: int = 30) -> tuple[list[int], list[float]]:
    """``attack()`` (a status) again and again for ``seconds`` (``most`` times at most):
    statuses, and each one's time."""
    statuses, took = [], []
    until = time.monotonic() + seconds
    while time.monotonic() < until and len(statuses) < most:
        started = time.monotonic()
        statuses.append(attack())
        took.append(time.monotonic() - started)
    return statuses, took
