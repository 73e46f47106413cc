"""Workers: take runs from the queue and execute them, any number of processes on one Redis.

A worker claims up to ``concurrency`` jobs, takes each one's thread lock (passed on from the
instance that accepted the run, or waited for when the run was enqueued behind another),
and drives it with a ``RunManager`` whose events are published for every instance. A job
whose worker died is claimed again after ``claim_idle_ms`` and continued from its last
checkpoint, its events numbered on from the last one published. ``drain`` stops claiming,
lets the runs in hand finish within a grace period, and hands the rest back to the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Callable
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from graph.context import context_from_dict
from server.runs.events import RedisEventLog, seed
from server.runs.handle import RunHandle
from server.runs.manager import RunManager
from server.runs.queue import Claimed, Job, RunQueue
from server.runs.records import RunRecords
from server.runs.rollback import checkpoint_id

#: Statuses of runs a worker has nothing more to do for (an interrupted one is continued).
FINISHED = frozenset({"success", "error", "cancelled", "waiting"})

log = logging.getLogger("seekgraph.worker")


def worker_name() -> str:
    """A name unique to this process (the consumer name, part of its lock tokens)."""
    return f"worker:{socket.gethostname()}:{os.getpid()}"


class Worker:
    """Claims and executes queued runs, ``concurrency`` at a time."""

    def __init__(
        self,
        *,
        queue: RunQueue,
        runs: RunManager,
        graphs: dict[str, CompiledStateGraph[Any, Any, Any, Any]],
        records: RunRecords,
        events: RedisEventLog | None,
        name: str,
        concurrency: int = 4,
        claim_idle_ms: int = 15_000,
        max_live_runs: int = 10**6,
    ) -> None:
        self.queue = queue
        self.runs = runs
        self.graphs = graphs
        self.records = records
        self.events = events
        self.name = name
        self.concurrency = concurrency
        self.claim_idle_ms = claim_idle_ms
        self.max_live_runs = max_live_runs
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.handles: dict[str, RunHandle] = {}
        self._stopping = asyncio.Event()
        self._handing_back: set[str] = set()

    async def run(self) -> None:
        """Claim and execute jobs until ``drain`` (or cancellation)."""
        await self.queue.setup()
        toucher = asyncio.create_task(self._touch())
        try:
            while not self._stopping.is_set():
                free = self.concurrency - len(self.tasks)
                if free <= 0:
                    await asyncio.wait(list(self.tasks.values()), timeout=1.0,
                                       return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
                    continue
                try:
                    found = await self.queue.reclaim(self.name, self.claim_idle_ms, free)
                    if not found:
                        found = await self.queue.claim(self.name, free, block_ms=1000)
                except Exception as exc:  # noqa: BLE001 - the store may come back
                    log.warning("%s: cannot read the queue (%s); retrying", self.name, exc)
                    await asyncio.sleep(1.0)
                    continue
                for claimed in found:
                    task = asyncio.create_task(self._execute(claimed))
                    self.tasks[claimed.entry] = task
                    task.add_done_callback(self._forget(claimed.entry))
        finally:
            toucher.cancel()

    def _forget(self, entry: str) -> Callable[[asyncio.Task[None]], None]:
        def forget(_: asyncio.Task[None]) -> None:
            self.tasks.pop(entry, None)

        return forget

    async def _touch(self) -> None:
        """Keep the idle time of the jobs in hand low, so nobody takes them while we live."""
        while True:
            await asyncio.sleep(max(self.claim_idle_ms / 3000, 0.2))
            held = [e for e in self.tasks if e not in self._handing_back]
            with contextlib.suppress(Exception):
                await self.queue.touch(self.name, held)

    async def drain(self, grace_s: float) -> None:
        """Stop claiming; let running runs end within ``grace_s``; hand the rest back."""
        self._stopping.set()
        if self.tasks:
            await asyncio.wait(list(self.tasks.values()), timeout=grace_s)
        left = list(self.tasks)
        self._handing_back |= set(left)
        for entry in left:
            handle = self.handles.get(entry)
            if handle is not None and handle.task is not None and not handle.done:
                handle.cancel = "handback"
                handle.task.cancel()  # stops at its last checkpoint; a worker continues it
        if left:
            await asyncio.wait([self.tasks[e] for e in left if e in self.tasks], timeout=10)
            with contextlib.suppress(Exception):
                await self.queue.release(self.name, left)
            log.info("%s: handed %d run(s) back to the queue", self.name, len(left))

    async def _execute(self, claimed: Claimed[Job]) -> None:
        job = claimed.job
        try:
            finished = await self._run(claimed.entry, job)
        except (RedisConnectionError, RedisTimeoutError) as exc:  # the store is away: the
            # entry stays pending, untouched, and is taken again once it answers
            log.warning("%s: run %s paused, Redis unreachable (%s)", self.name, job.run_id, exc)
            return
        except Exception:  # noqa: BLE001 - one job's failure must not stop the worker
            log.exception("%s: run %s failed to start", self.name, job.run_id)
            await self.records.update(job.thread_id, job.run_id, status="error",
                                      error="the run could not be started")  # fmt: skip
            finished = True
        if finished and claimed.entry not in self._handing_back:
            await self.queue.ack(claimed.entry)

    async def _run(self, entry: str, job: Job) -> bool:
        """Execute one job; True when it needs no worker any more."""
        record = await self.records.get(job.thread_id, job.run_id)
        coordinator = self.runs.coordinator
        if record is None or record.status in FINISHED:
            if job.lock_token and (record is None or record.status == "cancelled"):
                # cancelled while it waited: free the thread it held (if it still does)
                await coordinator.release(job.thread_id, job.lock_token)
            return True
        token = self.runs.token(job.run_id)
        if await self.records.cancel_requested(job.thread_id, job.run_id) is not None:
            if job.lock_token:  # cancelled while it waited: free the thread it held
                await coordinator.release(job.thread_id, job.lock_token)
            await self.records.update(job.thread_id, job.run_id, status="cancelled")
            return True
        got = bool(job.lock_token) and record.status == "pending"
        if got:  # the lock the accepting instance took for it passes to this worker
            got = await coordinator.handoff(
                job.thread_id, job.lock_token, token, self.runs.lock_ttl_ms
            )
        while not got:  # enqueued behind another run, or its last worker's lock must lapse
            if self._stopping.is_set():
                self._handing_back.add(entry)
                return False
            if await self.records.cancel_requested(job.thread_id, job.run_id) is not None:
                await self.records.update(job.thread_id, job.run_id, status="cancelled")
                return True
            got = await coordinator.acquire(job.thread_id, token, self.runs.lock_ttl_ms)
            if not got:
                await asyncio.sleep(0.25)
        # the thread is this worker's now: look again (a worker that was only slow may have
        # finished the run, or published more of it, while this one waited)
        record = await self.records.get(job.thread_id, job.run_id)
        handle = RunHandle(run_id=job.run_id, thread_id=job.thread_id, owner=job.owner)
        started = record is not None and record.status != "pending"  # it ran before
        ended = started and self.events is not None and await seed(self.events, handle)
        if record is None or record.status in FINISHED or ended:
            await coordinator.release(job.thread_id, token)
            return True
        limits = self.runs.limits
        if limits is not None and job.limit_key:  # counted as this worker's run from now on
            with contextlib.suppress(Exception):
                await limits.release_run(job.limit_key, job.thread_id, job.lock_token)
                await limits.claim_run(job.limit_key, job.thread_id, token, self.max_live_runs)
        if started and record.began_at and job.kind != "continue":
            # begun, but nothing of it saved (its executor died, or the store went away, before
            # its first step was written): it starts again from its input
            now = await checkpoint_id(self.graphs[job.flow], job.thread_id)
            started = now != (None if record.began_at == "-" else record.began_at)
        graph_input: Any = None
        continued = started or job.kind == "continue"
        if job.kind == "resume" and not started:
            graph_input = Command(resume=job.input)
        elif not continued:
            graph_input = job.input
        self.handles[entry] = handle
        try:
            self.runs.start(
                job.thread_id,
                job.owner,
                graph_input,
                context_from_dict(job.context),
                handle=handle,
                record_protocol=job.record_protocol,
                limit_key=job.limit_key,
                graph=self.graphs[job.flow],
                flow=job.flow,
                publish=True,
            )
            if continued:  # published: the run's task has not begun, nothing precedes it
                summary = f"continued on {self.name} from the last checkpoint"
                handle.emit("node", {"node": "resume", "detail": {}, "summary": summary})
            assert handle.task is not None
            await asyncio.shield(handle.task)
        finally:
            self.handles.pop(entry, None)
        if handle.status == "handed_back" and entry not in self._handing_back:
            # the store went away mid-run: any worker takes the entry once it is back
            with contextlib.suppress(Exception):
                await self.queue.release(self.name, [entry])
            return False
        # lost: another worker took it over and holds its entry now
        return handle.status != "lost" and entry not in self._handing_back
