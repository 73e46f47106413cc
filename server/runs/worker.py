"""Workers: take runs from the queue and execute them, any number of processes on one Redis.

A worker executes up to ``concurrency`` runs at once. For each job it takes the thread's lock
(passed on from the instance that accepted the run, or taken once free when the run was
enqueued behind another) and a live slot of the run's key, and drives the run with a
``RunManager`` whose events are published for every instance. A job whose thread is busy, or
whose key has all its live runs already, waits in hand *without* a slot: it tries again every
quarter second, and meanwhile the slots go to other runs. So one key's queue cannot hold the
workers from another's (fair share: each key runs at most its live limit; among runs that may
run, first come first served). A job
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
import time
from collections.abc import Callable
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from seekgraph.graph.context import context_from_dict
from seekgraph.server.runs.events import RedisEventLog, seed
from seekgraph.server.runs.handle import RunHandle
from seekgraph.server.runs.manager import RunManager
from seekgraph.server.runs.queue import Claimed, Job, RunQueue
from seekgraph.server.runs.records import RunRecords
from seekgraph.server.runs.rollback import checkpoint_id

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
        max_waiting: int = 64,
        waiting_ttl_ms: int = 600_000,
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
        self.max_waiting = max_waiting
        """Jobs held waiting for their thread or their key's slot, beyond the running ones."""
        self.waiting_ttl_ms = waiting_ttl_ms
        self.running = 0
        """Runs executing now (at most ``concurrency``); waiting jobs hold no slot."""
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
                room = self.concurrency + self.max_waiting - len(self.tasks)
                free = min(self.concurrency - self.running, room)
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

    async def _take_turn(self, job: Job, token: str, handoff: bool) -> bool:
        """A worker slot, the thread's lock and the key's live slot — all three, or none.

        Never waits: a job that cannot have all three now holds nothing and tries again.
        ``handoff``: the lock the accepting instance took for the run passes to this worker,
        with the live slot counted for it since it was accepted.
        """
        if self.running >= self.concurrency:
            return False
        self.running += 1  # reserved before the first await: no other job can take it
        coordinator, limits = self.runs.coordinator, self.runs.limits
        ttl = self.runs.lock_ttl_ms
        try:
            if handoff and await coordinator.handoff(job.thread_id, job.lock_token, token, ttl):
                if limits is not None and job.limit_key:
                    await limits.transfer_run(job.limit_key, job.thread_id, job.lock_token, token)
                return True
            # no lock to pass on (it lapsed and another run took the thread, or the run was
            # enqueued behind one): the thread must be free, and the key's live slot too
            if not await coordinator.acquire(job.thread_id, token, ttl):
                self.running -= 1
                return False
            if (
                limits is not None
                and job.limit_key
                and not await limits.claim_run(
                    job.limit_key, job.thread_id, token, self.max_live_runs
                )
            ):  # the key runs its most already: the thread is free for its other runs
                await coordinator.release(job.thread_id, token)
                self.running -= 1
                return False
        except BaseException:
            self.running -= 1
            raise
        return True

    async def _forget_waiting(self, job: Job) -> None:
        limits = self.runs.limits
        if limits is not None and job.limit_key:
            await limits.release_waiting(job.limit_key, job.thread_id, job.run_id)

    async def _run(self, entry: str, job: Job) -> bool:
        """Execute one job; True when it needs no worker any more."""
        record = await self.records.get(job.thread_id, job.run_id)
        coordinator = self.runs.coordinator
        if record is None or record.status in FINISHED:
            if job.lock_token and (record is None or record.status == "cancelled"):
                # cancelled while it waited: free the thread it held (if it still does)
                await coordinator.release(job.thread_id, job.lock_token)
            await self._forget_waiting(job)
            return True
        token = self.runs.token(job.run_id)
        if await self.records.cancel_requested(job.thread_id, job.run_id) is not None:
            if job.lock_token:  # cancelled while it waited: free the thread it held
                await coordinator.release(job.thread_id, job.lock_token)
            await self._forget_waiting(job)
            await self.records.update(job.thread_id, job.run_id, status="cancelled")
            return True
        handoff = bool(job.lock_token) and record.status == "pending"
        got = await self._take_turn(job, token, handoff)
        limits, refreshed = self.runs.limits, time.monotonic()
        while not got:  # its thread or its key is busy, or every slot: it waits holding none
            if self._stopping.is_set():
                self._handing_back.add(entry)
                return False
            if await self.records.cancel_requested(job.thread_id, job.run_id) is not None:
                await self._forget_waiting(job)
                await self.records.update(job.thread_id, job.run_id, status="cancelled")
                return True
            await asyncio.sleep(0.25)
            waits_for_thread = not job.lock_token  # (accepted behind a busy thread)
            if (
                waits_for_thread
                and limits is not None
                and job.limit_key
                and (time.monotonic() - refreshed > 10)
            ):
                refreshed = time.monotonic()  # still waiting: still counted
                await limits.claim_waiting(job.limit_key, job.thread_id, job.run_id, 10**6,
                                           10**6, self.waiting_ttl_ms)  # fmt: skip
            got = await self._take_turn(job, token, handoff)
        try:
            return await self._execute_turn(entry, job, token)
        finally:
            self.running -= 1

    async def _execute_turn(self, entry: str, job: Job, token: str) -> bool:
        """Drive the run whose thread and slots this worker holds; True when it is over."""
        coordinator, limits = self.runs.coordinator, self.runs.limits
        await self._forget_waiting(job)
        # the thread is this worker's now: look again (a worker that was only slow may have
        # finished the run, or published more of it, while this one waited)
        record = await self.records.get(job.thread_id, job.run_id)
        handle = RunHandle(run_id=job.run_id, thread_id=job.thread_id, owner=job.owner)
        started = record is not None and record.status != "pending"  # it ran before
        ended = started and self.events is not None and await seed(self.events, handle)
        if record is None or record.status in FINISHED or ended:
            await coordinator.release(job.thread_id, token)
            if limits is not None and job.limit_key:
                await limits.release_run(job.limit_key, job.thread_id, token)
            return True
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
