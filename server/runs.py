"""Live runs on this instance: each run's numbered events, its folded snapshot, its lock.

A ``RunHandle`` keeps every event of a run (ids ``run:seq``) and a folded view of them (the
snapshot a reconnecting client receives instead of a replay). ``RunManager`` drives the graph
for a run in a background task: it holds the thread's lock (refreshed by a heartbeat, checked
before every checkpoint write), publishes the route to this instance, and releases both at
the end, whatever happens to the client's connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from graph.api import empty_fold, fold_event
from graph.context import Context, context_to_dict
from graph.run import RESUMABLE_ERRORS, RUN_ERRORS, jsonable, run_config, stream_run
from server.audit import AuditEntry, AuditLog, shown_by_run
from server.coordination import Coordinator, Route
from server.fencing import FENCE, Fence, LostLockError
from server.limits import Limits
from server.lock_keeper import LockKeeper
from server.observe import ModelSpans, RunObserver

log = logging.getLogger("seekgraph.runs")

#: Seconds a run may go past its wall-clock budget (``Context.max_seconds``) to write its
#: answer before it is stopped: a run never outlives its budget by more than this, even
#: when its branches are all waiting on timeouts.
OVERRUN_GRACE_S = 30.0

LOST_MESSAGE = (
    "another instance took this run over; attach with GET /threads/{id}/stream to follow it"
)


@dataclass
class Event:
    """One numbered event of a run."""

    seq: int
    type: str
    data: dict[str, Any]


@dataclass
class RunHandle:
    """A run's events, their folded snapshot, and who waits for more."""

    run_id: str
    thread_id: str
    owner: str
    seq: int = 0
    events: list[Event] = field(default_factory=list)
    fold: dict[str, Any] = field(default_factory=dict)
    protocol_seq: int = 0
    protocol: list[Event] = field(default_factory=list)
    """The LangGraph protocol's events of this run (``metadata``, ``values``, ``updates``,
    ``custom``, ``end``), numbered apart from the native ones and kept for replay."""
    values: dict[str, Any] | None = None
    """The latest state values (the protocol's snapshot on a reconnect)."""
    record_protocol: bool = False
    """Keep every ``values`` and ``updates`` event for replay (runs started through the
    LangGraph protocol); other runs keep only the latest values, sent on a protocol join."""
    done: bool = False
    status: str = "running"
    lost_lock: bool = False
    limit_key: str = ""
    """Whose live-run slot this run holds (the key id that started it)."""
    finished_at: float | None = None
    task: asyncio.Task[None] | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        if not self.fold:
            self.fold = empty_fold(self.run_id, self.thread_id)

    def emit(self, type_: str, data: dict[str, Any]) -> Event:
        """Number an event, fold it into the snapshot and wake the followers."""
        self.seq += 1
        event = Event(self.seq, type_, data)
        self.events.append(event)
        fold_event(self.fold, type_, data)
        self._changed.set()
        self._changed = asyncio.Event()
        return event

    def emit_protocol(self, type_: str, data: Any) -> Event:
        """Number a LangGraph-protocol event and wake the followers."""
        self.protocol_seq += 1
        event = Event(self.protocol_seq, type_, data)
        self.protocol.append(event)
        self._changed.set()
        self._changed = asyncio.Event()
        return event

    def snapshot(self) -> Event:
        """Everything so far as one event, numbered with the latest sequence number."""
        return Event(self.seq, "snapshot", {**self.fold, "seq": self.seq})

    def finish(self) -> None:
        """Mark the run done and wake the followers."""
        self.done = True
        self.finished_at = time.monotonic()
        self._changed.set()

    async def follow(self, after: int, channel: str = "native") -> AsyncIterator[Event]:
        """Events numbered after ``after``, live, until the run ends.

        ``channel``: ``native`` (the SSE protocol) or ``protocol`` (the LangGraph one).
        """
        while True:
            waiter = self._changed
            events = self.events if channel == "native" else self.protocol
            last = self.seq if channel == "native" else self.protocol_seq
            first = events[0].seq - 1 if events else last
            for event in events[max(0, after - first) :]:
                if event.seq > after:
                    after = event.seq
                    yield event
            if self.done and after >= last:
                return
            await waiter.wait()

    @property
    def first_seq(self) -> int:
        """Sequence number before this handle's first event (a takeover continues numbering)."""
        return self.events[0].seq - 1 if self.events else self.seq


class RunManager:
    """Starts, drives and finds the live runs of this instance."""

    def __init__(
        self,
        coordinator: Coordinator,
        instance: str,
        lock_ttl_ms: int,
        keep_finished_s: float = 600.0,
        limits: Limits | None = None,
        overrun_grace_s: float = OVERRUN_GRACE_S,
        audit: AuditLog | None = None,
        observe: Callable[[RunHandle, str], RunObserver] | None = None,
    ) -> None:
        self.coordinator = coordinator
        self.limits = limits
        self.audit = audit
        self.observe = observe
        self.overrun_grace_s = overrun_grace_s
        self.instance = instance
        self.lock_ttl_ms = lock_ttl_ms
        self.keep_finished_s = keep_finished_s
        self.runs: dict[str, RunHandle] = {}

    @staticmethod
    def new_run_id() -> str:
        """A fresh run id."""
        return uuid.uuid4().hex[:12]

    def token(self, run_id: str) -> str:
        """The lock value (fencing token) of a run on this instance."""
        return f"{run_id}@{self.instance}"

    def live(self, thread_id: str) -> RunHandle | None:
        """The thread's run on this instance, live or recently finished."""
        self._forget_old()
        return self.runs.get(thread_id)

    def forget(self, handle: RunHandle) -> None:
        """Drop a finished run (it is about to be continued from its checkpoint)."""
        if self.runs.get(handle.thread_id) is handle and handle.done:
            del self.runs[handle.thread_id]

    def _forget_old(self) -> None:
        now = time.monotonic()
        for thread_id, handle in list(self.runs.items()):
            if handle.finished_at is not None and now - handle.finished_at > self.keep_finished_s:
                del self.runs[thread_id]

    async def try_lock(self, thread_id: str, run_id: str) -> bool:
        """Take the thread's lock for ``run_id``."""
        return await self.coordinator.acquire(thread_id, self.token(run_id), self.lock_ttl_ms)

    def start(
        self,
        thread_id: str,
        owner: str,
        graph_input: dict[str, Any] | Command[Any] | None,
        context: Context,
        run_id: str | None = None,
        handle: RunHandle | None = None,
        record_protocol: bool = False,
        limit_key: str = "",
        *,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        flow: str,
    ) -> RunHandle:
        """Drive a run of ``graph`` (the thread's ``flow``) whose lock is already held.

        ``graph_input=None`` continues the thread's checkpoint.
        """
        run_id = run_id or (handle.run_id if handle else uuid.uuid4().hex[:12])
        handle = handle or RunHandle(run_id=run_id, thread_id=thread_id, owner=owner)
        handle.record_protocol = handle.record_protocol or record_protocol
        handle.limit_key = limit_key or handle.limit_key
        self.runs[thread_id] = handle
        handle.task = asyncio.create_task(self._drive(graph, flow, handle, graph_input, context))
        return handle

    def _keeper(self, handle: RunHandle, drive: asyncio.Task[None]) -> LockKeeper:
        """A thread that keeps the run's lock and route fresh; it cancels the run if lost."""
        loop = asyncio.get_running_loop()
        route = Route(instance=self.instance, run_id=handle.run_id)
        refresh = self.coordinator.sync_refresher(
            handle.thread_id, self.token(handle.run_id), self.lock_ttl_ms, route
        )

        def lost() -> None:
            log.warning("run %s lost the lock of thread %s", handle.run_id, handle.thread_id)
            handle.lost_lock = True
            drive.cancel()

        return LockKeeper(refresh, self.lock_ttl_ms / 3000, lambda: loop.call_soon_threadsafe(lost))

    async def _drive(
        self,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        flow: str,
        handle: RunHandle,
        graph_input: dict[str, Any] | Command[Any] | None,
        context: Context,
    ) -> None:
        token = self.token(handle.run_id)
        FENCE.set(Fence(self.coordinator, handle.thread_id, token, self.lock_ttl_ms))
        config = run_config(handle.thread_id, owner=handle.owner, run_id=handle.run_id, flow=flow)
        observer = self.observe(handle, flow) if self.observe is not None else None
        if observer is not None and observer.tracer is not None and observer.models:
            config["callbacks"] = [ModelSpans(observer)]
        keeper = self._keeper(handle, asyncio.current_task())  # type: ignore[arg-type]
        status = "done"
        try:
            route = Route(instance=self.instance, run_id=handle.run_id)
            await self.coordinator.refresh(handle.thread_id, token, self.lock_ttl_ms, route)
            keeper.start()
            await self.coordinator.set_last_run(
                handle.thread_id, handle.run_id, context_to_dict(context)
            )
            handle.emit_protocol(
                "metadata", {"run_id": handle.run_id, "thread_id": handle.thread_id}
            )

            def relay(mode: str, chunk: Any) -> None:  # the LangGraph protocol's own events
                if mode == "values":
                    handle.values = chunk
                if mode == "custom" or handle.record_protocol:
                    handle.emit_protocol(mode, chunk if mode == "custom" else jsonable(chunk))

            async with asyncio.timeout(context.max_seconds + self.overrun_grace_s):
                async for event in stream_run(
                    graph,
                    graph_input,
                    config,
                    context,
                    on_chunk=relay,
                    values=True,
                    on_task=observer.on_task if observer is not None else None,
                ):
                    if event["event"] == "waiting":  # paused for a person: resumed later
                        status = "waiting"
                    handle.emit(event["event"], {k: v for k, v in event.items() if k != "event"})
        except TimeoutError:
            status = "error"
            log.warning("run %s stopped: past its wall-clock budget", handle.run_id)
            handle.emit(
                "error",
                {
                    "message": f"the run went past its time budget ({context.max_seconds:g} s) "
                    "and was stopped; ask again, perhaps on fewer sources"
                },
            )
        except asyncio.CancelledError:
            if handle.lost_lock:
                status = "lost"
                handle.emit("error", {"message": LOST_MESSAGE})
            else:
                status = "interrupted"
                handle.emit(
                    "error",
                    {
                        "message": "this server is shutting down; the run can be resumed from its "
                        "last saved step"
                    },
                )
        except LostLockError as exc:
            status = "lost"
            log.warning("run %s lost the lock: %s", handle.run_id, exc)
            handle.emit("error", {"message": LOST_MESSAGE})
        except (RedisConnectionError, RedisTimeoutError) as exc:
            status = "interrupted"
            log.error("checkpoint store unreachable during run %s: %s", handle.run_id, exc)
            handle.emit(
                "error",
                {
                    "message": "the checkpoint store is unreachable; the run stopped at its last "
                    "saved step and can be resumed with GET /threads/{id}/stream"
                },
            )
        except RUN_ERRORS as exc:
            status = "interrupted" if isinstance(exc, RESUMABLE_ERRORS) else "error"
            handle.emit("error", {"message": str(exc)})
        except Exception as exc:  # noqa: BLE001 - the client must hear about any failure
            status = "error"
            log.exception("run %s failed", handle.run_id)
            handle.emit("error", {"message": f"the run failed ({type(exc).__name__})"})
        finally:
            keeper.stop()
            handle.status = status
            if status not in ("done", "waiting"):
                message = handle.fold["errors"][-1] if handle.fold["errors"] else status
                handle.emit_protocol("error", {"error": status, "message": message})
            usage = observer.usage() if observer is not None else None
            if observer is not None:
                observer.finish(status)
            # usage counted and the lock released *before* the client hears ``end``: a client
            # that asks again as soon as it has its answer finds the thread free and the
            # day's tokens already spent
            try:
                with contextlib.suppress(Exception):
                    await self._account(handle, flow, status, usage)
                with contextlib.suppress(Exception):
                    await self.coordinator.clear_route(handle.thread_id, handle.run_id)
                    await self.coordinator.release(handle.thread_id, token)
                if self.limits is not None:
                    with contextlib.suppress(Exception):
                        await self.limits.release_run(handle.limit_key, handle.thread_id, token)
            finally:  # cancelled again while releasing: the followers still hear the end
                handle.emit_protocol("end", {"status": status})
                handle.emit("end", {"status": status, **({"usage": usage} if usage else {})})
                handle.finish()

    async def _account(
        self, handle: RunHandle, flow: str, status: str, usage: dict[str, Any] | None
    ) -> None:
        """The run's audit entry, and its tokens and cost added to its user's day."""
        if self.audit is not None:
            values = {**(handle.values or {}), **handle.fold}
            shown, listed = shown_by_run(values)
            await self.audit.append(
                AuditEntry.now(
                    handle.owner,
                    "run",
                    flow=flow,
                    run_id=handle.run_id,
                    thread_id=handle.thread_id,
                    status=status,
                    shown=shown,
                    listed=listed,
                    tokens=int((usage or {}).get("tokens", 0)),
                    cost_usd=float((usage or {}).get("cost_usd", 0.0)),
                )
            )
        if self.limits is not None and usage and usage["tokens"]:
            await self.limits.add_usage(handle.owner, usage["tokens"], usage["cost_usd"])

    async def shutdown(self) -> None:
        """Cancel live runs (their checkpoints stay; another instance can continue them)."""
        for handle in self.runs.values():
            if handle.task is not None and not handle.done:
                handle.task.cancel()
