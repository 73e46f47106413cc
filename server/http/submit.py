"""Starting, stopping and awaiting runs: admission, the lock, the multitask strategies.

Every door (the native SSE API, the OpenAI-compatible chat, MCP, the LangGraph protocol)
starts runs with ``start_run``, so admission rules are written once. A run either starts on
this instance (a streamed run where a worker lives) or is put on the run queue for a worker
(background runs, API-only instances, runs waiting their turn on a busy thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException
from langgraph.types import Command

from seekgraph.graph.api import AdmissionError, PlanError, User, admit, checked_plan
from seekgraph.graph.context import REQUEST_KNOBS, context_from_dict, context_to_dict
from seekgraph.server.app_state import AppState
from seekgraph.server.http.admission import (
    accepted_images,
    claim_live,
    claim_waiting,
    limit_key_of,
    within_daily_tokens,
)
from seekgraph.server.http.api_models import RunRequest
from seekgraph.server.http.deps import STORE_DOWN
from seekgraph.server.http.telemetry import name_run
from seekgraph.server.runs.handle import RunHandle
from seekgraph.server.runs.queue import Job
from seekgraph.server.runs.records import CancelAction, RunEndedError, RunRecord, ask_to_cancel
from seekgraph.server.runs.webhooks import WebhookRefusedError, check_webhook

log = logging.getLogger("seekgraph.runs")


@dataclass
class Started:
    """A run that was accepted: its handle when it runs here, None when it is queued."""

    run_id: str
    thread_id: str
    handle: RunHandle | None


def queued_token(run_id: str) -> str:
    """The lock token of a run waiting in the queue (its worker takes the lock over)."""
    return f"{run_id}@queued"


async def keep_while_queued(app: AppState, thread_id: str) -> None:
    """Keep a queued run's thread at least as long as the queue reserves it for the run."""
    if app.retention is not None:
        await app.retention.touch(thread_id, at_least_s=app.settings.queued_lock_ttl_ms // 1000)


def live_run_of(holder: str | None) -> str | None:
    """The run id in a lock token."""
    return (holder or "").split("@")[0] or None


async def cancel_run(app: AppState, thread_id: str, run_id: str, action: CancelAction) -> None:
    """Ask the run to stop wherever it runs (at once when it runs in this process)."""
    with contextlib.suppress(RunEndedError):  # it ended meanwhile: nothing to stop
        await ask_to_cancel(app.records, thread_id, run_id, action)
    app.runs.cancel_local(thread_id, run_id, action)


async def record_of(app: AppState, thread_id: str, run_id: str) -> RunRecord:
    """The run's record; 404 when the thread has no such run."""
    record = await app.records.get(thread_id, run_id) if len(run_id) <= 64 else None
    if record is None:
        raise HTTPException(404, f"this thread has no run {run_id[:64]!r}")
    return record


async def finished(app: AppState, thread_id: str, run_id: str, timeout: float) -> RunRecord:
    """The run's record once it has ended (or as it is after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    record = await record_of(app, thread_id, run_id)
    delay = 0.02
    while not record.done and time.monotonic() < deadline:
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, 0.5)
        record = await record_of(app, thread_id, run_id)
    return record


async def stop_run(
    app: AppState, thread_id: str, run_id: str, action: CancelAction, wait: bool
) -> RunRecord:
    """Cancel the run (404 unknown, 409 once it ended); with ``wait``, once it has stopped."""
    await record_of(app, thread_id, run_id)
    try:
        record = await ask_to_cancel(app.records, thread_id, run_id, action)
    except RunEndedError as exc:
        raise HTTPException(409, str(exc)) from None
    assert record is not None
    if record.status == "cancelled":  # it never started: the thread it held is free now
        await app.coordinator.release(thread_id, queued_token(run_id))
    app.runs.cancel_local(thread_id, run_id, action)  # at once when it runs in this process
    if wait:
        record = await finished(app, thread_id, run_id, 30.0)
    return record


class RunConflictError(Exception):
    """Another run is live on the thread; ``run_id`` names it (when known)."""

    def __init__(self, thread_id: str, run_id: str | None) -> None:
        super().__init__(
            "a run is already live on this thread; attach to it with "
            f"GET /threads/{thread_id}/stream"
        )
        self.run_id = run_id


async def start_run(
    app: AppState, user: User, thread_id: str, body: RunRequest, record_protocol: bool = False
) -> Started:
    """Admit a run on a thread the caller owns and start it, here or through the queue.

    A streamed run on an instance with a worker runs here; a background run (``stream``
    false), any run on an API-only instance, and a run that waits its turn on a busy thread
    (``multitask_strategy`` other than ``reject``) go to the queue. Raises ``HTTPException``
    (422 bad input, 503 store down) before anything is locked or stored, and
    ``RunConflictError`` while another run is live on the thread (``reject``).
    """
    settings = app.settings
    try:
        if not await app.store_ready():
            raise HTTPException(503, "the checkpoint store is not ready yet; try again shortly")
    except STORE_DOWN:
        raise HTTPException(503, "the checkpoint store is unreachable; try again shortly") from None
    flow = await app.flow_of(thread_id)
    previous = (
        await app.graphs[flow].aget_state({"configurable": {"thread_id": thread_id}})
    ).values
    if body.flow not in app.graphs:
        raise HTTPException(422, f"unknown flow {body.flow!r}; flows: {', '.join(app.graphs)}")
    if previous and body.flow != flow:
        raise HTTPException(
            422, f"this thread runs the {flow!r} flow; start a new thread for {body.flow!r}"
        )
    flow = body.flow
    if body.plan is not None and flow != "research":
        raise HTTPException(422, f"a plan is for the research flow, not {flow!r}")
    try:
        plan = checked_plan(body.plan) if body.plan is not None else None
    except PlanError as exc:
        raise HTTPException(422, f"the plan cannot run: {exc}") from None
    earlier_images = [ref for t in (previous or {}).get("turns", []) for ref in t.get("images", [])]
    context = context_from_dict({**body.model_dump(include=set(REQUEST_KNOBS)), "user": user.name})
    await app.services.registry.refresh_sources()
    try:
        admitted = admit(app.services, context, body.question, bool(body.images or earlier_images))
    except AdmissionError as exc:
        raise HTTPException(422, str(exc)) from None
    limit_key = limit_key_of(user)
    images = await accepted_images(app, user, limit_key, body.images, earlier_images)
    try:
        webhook = check_webhook(body.webhook, settings.webhook_hosts) if body.webhook else ""
    except WebhookRefusedError as exc:
        raise HTTPException(422, f"the webhook cannot be used: {exc}") from None
    context = await within_daily_tokens(app, user, context)
    run_id = app.runs.new_run_id()
    name_run(run_id)
    queued = not body.stream or app.worker is None
    token = queued_token(run_id) if queued else app.runs.token(run_id)
    ttl = settings.queued_lock_ttl_ms if queued else settings.lock_ttl_ms
    strategy = body.multitask_strategy
    waiting = False
    try:
        locked = await app.coordinator.acquire(thread_id, token, ttl)
        if not locked:
            live = live_run_of(await app.coordinator.holder(thread_id))
            if strategy == "reject":
                raise RunConflictError(thread_id, live)
            # it waits for the thread: counted against its key and the thread from now on
            await claim_waiting(app, limit_key, thread_id, run_id)
            waiting = True
            if live is not None and strategy in ("interrupt", "rollback"):
                await cancel_run(app, thread_id, live, strategy)
            queued, token = True, ""  # waits for the thread, then runs
        else:
            await claim_live(app, limit_key, thread_id, token)
    except STORE_DOWN:
        raise HTTPException(503, "the checkpoint store is unreachable; try again shortly") from None
    graph_input: dict[str, Any] = {"question": admitted.question}
    if images:
        graph_input["images"] = images
    if plan is not None:
        graph_input["plan"] = plan
    if flow == "research":
        graph_input["trace_id"] = run_id  # one id from the request to every model call
    record = RunRecord(
        run_id=run_id,
        thread_id=thread_id,
        owner=user.name,
        flow=flow,
        multitask_strategy=strategy,
        background=not body.stream,
        queued=queued,
        webhook=webhook,
    )
    try:
        await app.coordinator.set_title(thread_id, admitted.question[:120])
        await app.records.put(record)
        if queued:
            job = Job(run_id, thread_id, user.name, flow, "start", graph_input,
                      context_to_dict(context), limit_key, record_protocol, token)  # fmt: skip
            await app.queue.put(job)
            await keep_while_queued(app, thread_id)
            return Started(run_id, thread_id, None)
        handle = app.runs.start(
            thread_id,
            user.name,
            graph_input,
            context,
            run_id,
            record_protocol=record_protocol,
            limit_key=limit_key,
            graph=app.graphs[flow],
            flow=flow,
        )
    except BaseException:
        # nothing started: the thread must not stay locked by a run that never ran
        log.exception("could not start run %s on thread %s", run_id, thread_id)
        with contextlib.suppress(Exception):
            await app.records.update(thread_id, run_id, status="error", error="not started")
            if waiting:
                await app.limits.release_waiting(limit_key, thread_id, run_id)
            if token:
                await app.coordinator.release(thread_id, token)
                await app.limits.release_run(limit_key, thread_id, token)
        raise HTTPException(503, "the run could not be started; nothing was changed") from None
    return Started(run_id, thread_id, handle)


async def resume_run(
    app: AppState,
    user: User,
    thread_id: str,
    value: Any,
    record_protocol: bool = False,
    background: bool = False,
) -> Started:
    """Resume a run that waits for a person (an ``interrupt()``) with ``value``.

    Raises ``HTTPException`` 422 when nothing waits, ``RunConflictError`` while a run is live.
    """
    return await start_again(app, user, thread_id, "resume", value, record_protocol, background)


async def continue_run(
    app: AppState, user: User, thread_id: str, background: bool = False
) -> Started:
    """Continue the thread's run from its last saved step (one that was stopped half-way).

    Raises ``HTTPException`` 422 when the thread has nothing unfinished (or waits for a
    person: that is a resume), ``RunConflictError`` while a run is live.
    """
    return await start_again(app, user, thread_id, "continue", None, False, background)


async def start_again(
    app: AppState,
    user: User,
    thread_id: str,
    kind: str,
    value: Any,
    record_protocol: bool,
    background: bool,
) -> Started:
    """A run that goes on from the thread's checkpoint: resumed with a value, or continued."""
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    flow = await app.flow_of(thread_id)
    snap = await app.graphs[flow].aget_state(config)  # type: ignore[arg-type]
    if kind == "resume" and not snap.interrupts:
        raise HTTPException(422, "nothing on this thread waits for a resume value; start a run")
    if kind == "continue" and (snap.interrupts or not snap.tasks):
        what = "waits for a person: resume it" if snap.interrupts else "has no unfinished run"
        raise HTTPException(422, f"this thread {what}")
    run_id = app.runs.new_run_id()
    name_run(run_id)
    queued = background or app.worker is None
    token = queued_token(run_id) if queued else app.runs.token(run_id)
    ttl = app.settings.queued_lock_ttl_ms if queued else app.settings.lock_ttl_ms
    limit_key = limit_key_of(user)
    try:
        if not await app.coordinator.acquire(thread_id, token, ttl):
            holder = await app.coordinator.holder(thread_id)
            raise RunConflictError(thread_id, live_run_of(holder))
        await claim_live(app, limit_key, thread_id, token)  # the same limit as a new run's
    except STORE_DOWN:
        raise HTTPException(503, "the checkpoint store is unreachable; try again shortly") from None
    last = await app.coordinator.last_run(thread_id)
    context = context_from_dict({**(last[1] if last else {}), "user": user.name})
    try:
        record = RunRecord(run_id, thread_id, user.name, flow, background=background)
        await app.records.put(dataclasses.replace(record, queued=queued))
        if queued:
            job = Job(run_id, thread_id, user.name, flow, kind, value,
                      context_to_dict(context), limit_key, record_protocol, token)  # fmt: skip
            await app.queue.put(job)
            await keep_while_queued(app, thread_id)
            return Started(run_id, thread_id, None)
        handle = app.runs.start(
            thread_id,
            user.name,
            Command(resume=value) if kind == "resume" else None,
            context,
            run_id,
            record_protocol=record_protocol,
            limit_key=limit_key,
            graph=app.graphs[flow],
            flow=flow,
        )
    except BaseException:
        with contextlib.suppress(Exception):
            await app.coordinator.release(thread_id, token)
            await app.limits.release_run(limit_key, thread_id, token)
        raise
    return Started(run_id, thread_id, handle)
