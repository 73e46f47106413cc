"""A thread that keeps a run's lock alive whatever the event loop is busy with.

A node doing CPU-bound work on the event loop (embedding, reranking) can hold it for
seconds; a refresh scheduled on the same loop then comes too late, the lock lapses and the
run is lost. The keeper refreshes from its own thread with a blocking client instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from redis.exceptions import RedisError

log = logging.getLogger("seekgraph.runs")


class LockKeeper:
    """Calls ``refresh`` every ``interval`` seconds; ``on_lost`` once it returns False."""

    def __init__(
        self, refresh: Callable[[], bool], interval: float, on_lost: Callable[[], object]
    ) -> None:
        self.refresh = refresh
        self.interval = interval
        self.on_lost = on_lost
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="seekgraph-lock", daemon=True)

    def start(self) -> None:
        """Begin refreshing."""
        self._thread.start()

    def stop(self) -> None:
        """Stop refreshing (the thread ends at its next wake-up)."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                held = self.refresh()
            except (RedisError, OSError) as exc:
                # the store is down: writes are fenced anyway; try again next time
                log.warning("could not refresh a run lock: %s", exc)
                continue
            if not held:
                if not self._stop.is_set():
                    self.on_lost()
                return
