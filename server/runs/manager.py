"""Runs executed by this process: the graph driven in a task, under the thread's lock.

``RunManager`` drives a run in a background task (its events go to a ``RunHandle``): it
holds the thread's lock (refreshed by a keeper thread, checked before every checkpoint
write), publishes the route to this process, keeps the run's record, stops the run when a
cancel is asked (rolling the thread back if asked so), and releases everything at the end,
whatever happens to the client's connection. A worker's runs also publish their events for
every instance.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from seekgraph.graph.context import Context, context_to_dict, wall_seconds
from seekgraph.graph.run import RESUMABLE_ERRORS, RUN_ERRORS, jsonable, run_config, stream_run
from seekgraph.server.audit import AuditEntry, AuditLog, shown_by_run
from seekgraph.server.limits import Limits
from seekgraph.server.observe import ModelSpans, RunObserver
from seekgraph.server.runs.coordination import Coordinator, Route
from seekgraph.server.runs.events import EventPublisher, RedisEventLog
from seekgraph.server.runs.fencing import FENCE, Fence, LostLockError
from seekgraph.server.runs.handle import RunHandle
from seekgraph.server.runs.lock_keeper import LockKeeper
from seekgraph.server.runs.records import ENDED_WELL, RunRecords, outcome
from seekgraph.server.runs.retention import Retention, renew_while_running
from seekgraph.server.runs.rollback import checkpoint_id, roll_back
from seekgraph.server.runs.webhooks import Webhooks

log = logging.getLogger("seekgraph.runs")

#: Seconds a run may go past its wall-clock budget (``Context.max_seconds``) to write its
#: answer before it is stopped: a run never outlives its budget by more than this, even
#: when its branches are all waiting on timeouts.
OVERRUN_GRACE_S = 30.0

LOST_MESSAGE = (
    "another instance took this run over; attach with GET /threads/{id}/stream to follow it"
)
#: A run whose record went with its thread (deleted, or expired under it): nobody continues it.
GONE_MESSAGE = (
    "this run's thread was deleted or expired while it ran; the run cannot finish. "
    "Ask again on a new thread"
)


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
        records: RunRecords | None = None,
        events: RedisEventLog | None = None,
        cancel_poll_s: float = 0.25,
        webhooks: Webhooks | None = None,
        model_name: str | None = None,
        retention: Retention | None = None,
    ) -> None:
        self.retention = retention
        self.webhooks = webhooks or Webhooks()
        self.model_name = model_name  # the configured chat model: its pace fits time budgets
        self.coordinator = coordinator
        self.records = records
        self.events = events
        self.cancel_poll_s = cancel_poll_s
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
        publish: bool = False,
    ) -> RunHandle:
        """Drive a run of ``graph`` (the thread's ``flow``) whose lock is already held.

        ``graph_input=None`` continues the thread's checkpoint. ``publish``: write its events
        where every instance reads them (a run a worker executes).
        """
        run_id = run_id or (handle.run_id if handle else uuid.uuid4().hex[:12])
        handle = handle or RunHandle(run_id=run_id, thread_id=thread_id, owner=owner)
        handle.record_protocol = handle.record_protocol or record_protocol
        handle.limit_key = limit_key or handle.limit_key
        if publish and self.events is not None:
            handle.sink = EventPublisher(self.events, thread_id, run_id)
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
        drive = asyncio.current_task()
        assert drive is not None
        keeper = self._keeper(handle, drive)
        watcher = asyncio.create_task(self._watch_cancel(handle, drive))
        renewer = asyncio.create_task(renew_while_running(self.retention, handle.thread_id))
        status = "done"
        before: str | None = None
        try:
            route = Route(instance=self.instance, run_id=handle.run_id)
            await self.coordinator.refresh(handle.thread_id, token, self.lock_ttl_ms, route)
            keeper.start()
            before = await self._where_it_began(graph, handle)
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

            events: AsyncGenerator[Any, None] = stream_run(  # type: ignore[assignment]
                graph,
                graph_input,
                config,
                context,
                on_chunk=relay,
                values=True,
                on_task=observer.on_task if observer is not None else None,
            )
            # closed on the way out, whatever stops it: the graph's last writes are done
            # before a rollback or the lock's release
            async with (
                contextlib.aclosing(events),
                asyncio.timeout(
                    wall_seconds(flow, context, self.model_name) + self.overrun_grace_s
                ),
            ):
                async for event in events:
                    if event["event"] == "waiting":  # paused for a person: resumed later
                        status = "waiting"
                    handle.emit(event["event"], {k: v for k, v in event.items() if k != "event"})
        except TimeoutError:
            status = "error"
            log.warning("run %s stopped: past its wall-clock budget", handle.run_id)
            handle.emit(
                "error",
                {
                    "message": "the run went past its time budget "
                    f"({wall_seconds(flow, context, self.model_name):g} s) "
                    "and was stopped; ask again, perhaps on fewer sources"
                },
            )
        except asyncio.CancelledError:
            if handle.cancel == "handback":  # its worker stops: another one continues it
                drive.uncancel()
                status = "handed_back"
                handle.emit("node", {"node": "handback", "detail": {},
                                     "summary": "handed back to the queue; another worker "
                                     "continues it from the last checkpoint"})  # fmt: skip
            elif handle.cancel:  # a person asked: stop here, and roll back if they asked that
                drive.uncancel()
                status = "cancelled"
                if handle.cancel == "rollback":
                    await roll_back(graph, handle.thread_id, before)
            elif handle.lost_lock:
                status = await self._lost(handle)
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
            log.warning("run %s lost the lock: %s", handle.run_id, exc)
            status = await self._lost(handle)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            log.error("checkpoint store unreachable during run %s: %s", handle.run_id, exc)
            if isinstance(handle.sink, EventPublisher):  # a worker's run: back to the queue
                status = "handed_back"
                handle.emit("node", {"node": "handback", "detail": {},
                                     "summary": "the checkpoint store was unreachable; the run "
                                     "goes back to the queue and a worker continues it from "
                                     "its last saved step"})  # fmt: skip
            else:
                status = "interrupted"
                handle.emit(
                    "error",
                    {
                        "message": "the checkpoint store is unreachable; the run stopped at its "
                        "last saved step and can be resumed with GET /threads/{id}/stream"
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
            watcher.cancel()
            renewer.cancel()
            handle.status = status
            if status not in ENDED_WELL and status != "handed_back":
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
                if self.records is not None and status not in ("lost", "handed_back"):
                    # (lost or handed back: it goes on elsewhere)
                    with contextlib.suppress(Exception):
                        error = handle.fold["errors"][-1] if handle.fold["errors"] else ""
                        record = await self.records.update(
                            handle.thread_id, handle.run_id, status=outcome(status), error=error
                        )
                        if record is not None and record.webhook:
                            self.webhooks.send(record, handle.fold)
                await asyncio.wait({renewer})  # its last renewal: the thread lives on from now
                with contextlib.suppress(Exception):
                    await self.coordinator.clear_route(handle.thread_id, handle.run_id)
                    await self.coordinator.release(handle.thread_id, token)
                if self.limits is not None:
                    with contextlib.suppress(Exception):
                        await self.limits.release_run(handle.limit_key, handle.thread_id, token)
            finally:  # cancelled again while releasing: the followers still hear the end
                if status != "handed_back":  # not over: its followers reconnect to it
                    handle.emit_protocol("end", {"status": status})
                    handle.emit("end", {"status": status, **({"usage": usage} if usage else {})})
                handle.finish()
                if isinstance(handle.sink, EventPublisher):
                    await handle.sink.close()

    async def _lost(self, handle: RunHandle) -> str:
        """Tell the followers why the run lost its thread's lock, and return its status.

        ``lost``: another instance goes on with it. ``error``: its thread is gone (deleted, or
        expired under it) and nothing continues it.
        """
        gone = False
        if self.records is not None:
            with contextlib.suppress(Exception):
                gone = await self.records.get(handle.thread_id, handle.run_id) is None
        handle.emit("error", {"message": GONE_MESSAGE if gone else LOST_MESSAGE})
        return "error" if gone else "lost"

    async def _where_it_began(
        self, graph: CompiledStateGraph[Any, Any, Any, Any], handle: RunHandle
    ) -> str | None:
        """The thread's checkpoint when the run first began (a rollback's target).

        Kept in the run's record, so a run continued by another worker rolls back to where
        it began, not to where it was taken over; the record shows who runs it now.
        """
        record = None
        if self.records is not None:
            record = await self.records.get(handle.thread_id, handle.run_id)
        began = record.began_at if record is not None and record.began_at else None
        if began is None:
            began = await checkpoint_id(graph, handle.thread_id) or "-"
        if self.records is not None:
            await self.records.update(handle.thread_id, handle.run_id, status="running",
                                      executor=self.instance, began_at=began)  # fmt: skip
        return None if began == "-" else began

    async def _watch_cancel(self, handle: RunHandle, drive: asyncio.Task[None]) -> None:
        """Stop the run when someone asks for it to be cancelled (on any instance)."""
        if self.records is None:
            return
        while not handle.done:
            await asyncio.sleep(self.cancel_poll_s)
            try:
                action = await self.records.cancel_requested(handle.thread_id, handle.run_id)
            except Exception:  # noqa: BLE001 - the store may blip; ask again
                continue
            if action is not None:
                log.info("run %s: cancel (%s) asked", handle.run_id, action)
                handle.cancel = action
                drive.cancel()
                return

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

    def cancel_local(self, thread_id: str, run_id: str, action: str) -> bool:
        """Cancel the run if this process executes it (no need to wait for the poll)."""
        handle = self.runs.get(thread_id)
        if handle is None or handle.run_id != run_id or handle.done or handle.task is None:
            return False
        handle.cancel = action
        handle.task.cancel()
        return True

    async def shutdown(self) -> None:
        """Cancel live runs (their checkpoints stay; another instance can continue them)."""
        for handle in self.runs.values():
            if handle.task is not None and not handle.done:
                handle.task.cancel()
