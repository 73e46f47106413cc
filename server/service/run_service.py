"""The one thread/run implementation every door translates to.

Threads (create, list, own, read, delete), runs (admit, start, resume, continue, get, list,
join, cancel) and their event streams (``server.service.streams``): the native API, the
LangGraph protocol, the OpenAI-compatible chat and MCP call these and only reshape requests
and answers. A refusal is a domain error (``server.service.errors``); no HTTP here.

A run either starts on this instance (a streamed run where a worker lives) or is put on the
run queue for a worker (background runs, API-only instances, runs waiting their turn on a
busy thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from langgraph.errors import InvalidUpdateError
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StateSnapshot

from seekgraph.graph.api import (
    AdmissionError,
    PlanError,
    UnknownUserError,
    User,
    admit,
    checked_plan,
)
from seekgraph.graph.context import REQUEST_KNOBS, Context, context_from_dict, context_to_dict
from seekgraph.graph.flows import DEFAULT_FLOW
from seekgraph.server.audit import AuditLog
from seekgraph.server.auth import ApiKeyStore
from seekgraph.server.caller import CALLER, Caller, key_id
from seekgraph.server.images import PixelBudget
from seekgraph.server.limits import Limits
from seekgraph.server.observe import Metrics, name_run
from seekgraph.server.runs.coordination import Coordinator
from seekgraph.server.runs.events import RedisEventLog
from seekgraph.server.runs.handle import RunHandle
from seekgraph.server.runs.manager import RunManager
from seekgraph.server.runs.queue import Job, RunQueue
from seekgraph.server.runs.records import (
    CancelAction,
    RunEndedError,
    RunRecord,
    RunRecords,
    ask_to_cancel,
)
from seekgraph.server.runs.retention import Retention
from seekgraph.server.runs.webhooks import WebhookRefusedError, check_webhook
from seekgraph.server.service import streams
from seekgraph.server.service.admission import (
    accepted_images,
    claim_live,
    claim_waiting,
    limit_key_of,
    within_daily_tokens,
)
from seekgraph.server.service.errors import (
    BadInputError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    RateLimitedError,
    RunConflictError,
    UnauthenticatedError,
    UnavailableError,
)
from seekgraph.server.service.requests import RunRequest
from seekgraph.server.service.stores import STORE_DOWN
from seekgraph.server.settings import Settings
from seekgraph.server.thread_ids import BadThreadIdError, canonical_thread_id, new_thread_id

if TYPE_CHECKING:
    from seekgraph.nodes.plumbing.services import Services

log = logging.getLogger("seekgraph.runs")

Graph = CompiledStateGraph[Any, Any, Any, Any]

#: State fields ``update_state`` may write (a person's edit of the answer).
EDITABLE_FIELDS = frozenset({"answer"})


@dataclass
class Started:
    """A run that was accepted: its handle when it runs here, None when it is queued."""

    run_id: str
    thread_id: str
    handle: RunHandle | None


def queued_token(run_id: str) -> str:
    """The lock token of a run waiting in the queue (its worker takes the lock over)."""
    return f"{run_id}@queued"


def live_run_of(holder: str | None) -> str | None:
    """The run id in a lock token."""
    return (holder or "").split("@")[0] or None


def thread_id_of(raw: str) -> str:
    """The canonical form of a thread id a client sent; ``BadInputError`` when it is not one."""
    try:
        return canonical_thread_id(raw)
    except BadThreadIdError as exc:
        raise BadInputError(str(exc)) from None


@dataclass
class RunService:
    """Threads and runs for every door, over the stores built at start-up."""

    settings: Settings
    services: Services
    graphs: dict[str, Graph]
    saver: Any
    coordinator: Coordinator
    runs: RunManager
    records: RunRecords
    queue: RunQueue
    limits: Limits
    metrics: Metrics
    keys: ApiKeyStore
    audit: AuditLog
    http: httpx.AsyncClient
    instance: str
    images_dir: Path
    has_worker: bool
    """A worker lives in this process: a streamed run starts here (else it is queued)."""
    events: RedisEventLog | None = None
    retention: Retention | None = None
    decoding: PixelBudget = field(default_factory=PixelBudget)
    """Pixels of images being decoded, per key (bounded by max_decoding_pixels_per_key)."""

    # --- callers -------------------------------------------------------------------------

    async def user_for_key(self, key: str, door: str) -> User:
        """The user of an API key, counted against the key's request rate.

        The request's ``Caller`` (user, key id, door) is set for what the request does next.
        """
        try:
            name = await self.keys.user_for(key)
        except STORE_DOWN:
            raise UnavailableError("the key store is unreachable; try again shortly") from None
        if name is None:
            raise UnauthenticatedError("unknown API key")
        try:
            user = self.services.registry.user(name)
        except UnknownUserError:
            raise ForbiddenError("this key's user is not known to the workspace") from None
        caller = Caller(user=user.name, key_id=key_id(key), door=door)
        CALLER.set(caller)
        await self.within_rate(caller.key_id)
        return user

    async def within_rate(self, key: str) -> None:
        """Count a request with the key ``key`` (its id); ``RateLimitedError`` past the rate."""
        most = self.settings.rate_limit_per_minute
        try:
            wait = await self.limits.hit(key, most)
        except STORE_DOWN:
            raise UnavailableError("the limits store is unreachable; try again shortly") from None
        if wait is not None:
            self.metrics.limited.labels("rate").inc()
            raise RateLimitedError(
                f"more than {most} requests a minute with this key; wait and try again",
                retry_after=max(1, round(wait)),
            )

    async def searchable_sources(self) -> list[Any]:
        """The sources a run may search now (each enforces its own permissions)."""
        await self.services.registry.refresh_sources()
        return list(self.services.registry.select())

    # --- threads -------------------------------------------------------------------------

    async def own_thread(self, user: User, raw: str) -> str:
        """The canonical id of ``raw`` when ``user`` owns it; ``NotFoundError`` otherwise.

        Every door checks ownership here, and uses the id it returns from then on. The thread
        is renewed (``server.runs.retention``): reading or continuing it keeps it.
        """
        thread_id = thread_id_of(raw)
        try:
            owner = await self.coordinator.owner(thread_id)
            if owner == user.name and self.retention is not None:
                await self.retention.touch(thread_id)  # read or continued: kept from now
        except STORE_DOWN:
            raise UnavailableError("the thread store is unreachable; try again shortly") from None
        if owner != user.name:
            raise NotFoundError(f"no thread {thread_id}")
        return thread_id

    async def owns(self, user: User, thread_id: str) -> bool:
        """Whether ``user`` owns the (canonical) thread id."""
        return await self.coordinator.owner(thread_id) == user.name

    async def create_thread(self, user: User) -> str:
        """A new thread owned by ``user``; its id."""
        thread_id = new_thread_id()
        try:
            await self.coordinator.create_thread(thread_id, user.name)
        except STORE_DOWN:
            raise UnavailableError("the thread store is unreachable; try again shortly") from None
        return thread_id

    async def thread_for(self, user: User, given: str | None) -> str:
        """The thread to run on: the caller's own when named (``NotFoundError`` else), or new."""
        return await self.own_thread(user, given) if given else await self.create_thread(user)

    async def threads_of(self, user: User) -> list[str]:
        """The caller's threads, newest first."""
        try:
            return await self.coordinator.threads_of(user.name)
        except STORE_DOWN:
            raise UnavailableError("the thread store is unreachable; try again shortly") from None

    async def title(self, thread_id: str) -> str | None:
        """The thread's title (its first question)."""
        return await self.coordinator.title(thread_id)

    async def created_at(self, thread_id: str) -> float | None:
        """When the thread was created (epoch seconds)."""
        return await self.coordinator.created_at(thread_id)

    def busy(self, thread_id: str) -> bool:
        """A run of the thread is going on in this process."""
        live = self.runs.live(thread_id)
        return live is not None and not live.done

    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread and its keys, at once (``ConflictError`` while a run holds it)."""
        try:
            holder = await self.coordinator.holder(thread_id)
            if holder is not None:
                run_id = holder.split("@", 1)[0]
                raise ConflictError(
                    f"thread {thread_id} has a live or queued run ({run_id}); cancel it first"
                )
            if self.retention is not None:
                await self.retention.delete(thread_id)
        except STORE_DOWN:
            raise UnavailableError("the thread store is unreachable; try again shortly") from None
        handle = self.runs.live(thread_id)
        if handle is not None:
            self.runs.forget(handle)

    async def flow_of(self, thread_id: str) -> str:
        """The flow the thread runs (its runs' checkpoints say; a new thread: the default)."""
        config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        found = await self.saver.aget_tuple(config)
        for _ in range(3):  # a rolled-back thread's latest is a copy: its parent names it
            if found is None or (found.metadata or {}).get("flow") or not found.parent_config:
                break
            found = await self.saver.aget_tuple(found.parent_config)
        flow = (found.metadata or {}).get("flow") if found is not None else None
        return str(flow) if flow in self.graphs else DEFAULT_FLOW

    async def graph_of(self, thread_id: str) -> Graph:
        """The compiled flow of the thread."""
        return self.graphs.get(await self.flow_of(thread_id), self.graphs[DEFAULT_FLOW])

    async def shown_graph_of(self, thread_id: str) -> Graph:
        """The thread's flow for reading it: its state as its person may see it now."""
        from seekgraph.graph.visibility import visible_graph

        owner = await self.coordinator.owner(thread_id)
        return visible_graph(await self.graph_of(thread_id), self.services.registry, owner or "")

    async def state_of(self, thread_id: str) -> StateSnapshot:
        """The thread's latest checkpoint as its person may see it now."""
        shown = await self.shown_graph_of(thread_id)
        return await shown.aget_state({"configurable": {"thread_id": thread_id}})

    async def update_state(
        self, thread_id: str, values: dict[str, Any] | None, as_node: str | None
    ) -> Any:
        """Write values into the thread's state as a node would (no run may be live).

        A person may edit the answer only: everything else in the state (evidence, turns and
        their images, budgets) is what the server wrote and what its checks rely on. The
        config of the checkpoint written.
        """
        foreign = sorted(set(values or {}) - EDITABLE_FIELDS)
        if foreign:
            raise BadInputError(
                f"only {', '.join(sorted(EDITABLE_FIELDS))} may be edited; not {', '.join(foreign)}"
            )
        graph = await self.graph_of(thread_id)
        if as_node is not None and as_node not in graph.nodes:
            raise BadInputError(
                f"no node {as_node!r}; as_node is one of "
                f"{', '.join(n for n in graph.nodes if not n.startswith('__'))}"
            )
        run_id = self.runs.new_run_id()
        if not await self.runs.try_lock(thread_id, run_id):
            raise ConflictError("a run is live on this thread; update its state when it ends")
        try:
            return await graph.aupdate_state(
                {"configurable": {"thread_id": thread_id}}, values, as_node=as_node
            )
        except (ValueError, KeyError, InvalidUpdateError) as exc:
            raise BadInputError(f"cannot update the state: {exc}") from None
        finally:
            await self.coordinator.release(thread_id, self.runs.token(run_id))

    async def store_ready(self) -> bool:
        """The checkpoint store answers and has its search indexes (recreated if missing)."""
        await self.coordinator.ping()
        ready = getattr(self.saver, "indexes_ready", None)
        return True if ready is None else bool(await ready())

    # --- runs ----------------------------------------------------------------------------

    async def record_of(self, thread_id: str, run_id: str) -> RunRecord:
        """The run's record; ``NotFoundError`` when the thread has no such run."""
        record = await self.records.get(thread_id, run_id) if len(run_id) <= 64 else None
        if record is None:
            raise NotFoundError(f"this thread has no run {run_id[:64]!r}")
        return record

    async def list_runs(self, thread_id: str, limit: int) -> list[RunRecord]:
        """The thread's runs, newest first."""
        return await self.records.list(thread_id, limit)

    async def finished(self, thread_id: str, run_id: str, timeout: float) -> RunRecord:
        """The run's record once it has ended (or as it is after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        record = await self.record_of(thread_id, run_id)
        delay = 0.02
        while not record.done and time.monotonic() < deadline:
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 0.5)
            record = await self.record_of(thread_id, run_id)
        return record

    async def cancel_run(self, thread_id: str, run_id: str, action: CancelAction) -> None:
        """Ask the run to stop wherever it runs (at once when it runs in this process)."""
        with contextlib.suppress(RunEndedError):  # it ended meanwhile: nothing to stop
            await ask_to_cancel(self.records, thread_id, run_id, action)
        self.runs.cancel_local(thread_id, run_id, action)

    async def stop_run(
        self, thread_id: str, run_id: str, action: CancelAction, wait: bool
    ) -> RunRecord:
        """Cancel the run (``NotFoundError`` unknown, ``ConflictError`` once it ended).

        With ``wait``, the record once it has stopped.
        """
        await self.record_of(thread_id, run_id)
        try:
            record = await ask_to_cancel(self.records, thread_id, run_id, action)
        except RunEndedError as exc:
            raise ConflictError(str(exc)) from None
        assert record is not None
        if record.status == "cancelled":  # it never started: the thread it held is free now
            await self.coordinator.release(thread_id, queued_token(run_id))
        self.runs.cancel_local(thread_id, run_id, action)  # at once when it runs in this process
        if wait:
            record = await self.finished(thread_id, run_id, 30.0)
        return record

    async def keep_while_queued(self, thread_id: str) -> None:
        """Keep a queued run's thread at least as long as the queue reserves it for the run."""
        if self.retention is not None:
            at_least_s = self.settings.queued_lock_ttl_ms // 1000
            await self.retention.touch(thread_id, at_least_s=at_least_s)

    async def _checked_store(self) -> None:
        try:
            if not await self.store_ready():
                raise UnavailableError("the checkpoint store is not ready yet; try again shortly")
        except STORE_DOWN:
            raise UnavailableError(
                "the checkpoint store is unreachable; try again shortly"
            ) from None

    async def start_run(
        self, user: User, thread_id: str, body: RunRequest, record_protocol: bool = False
    ) -> Started:
        """Admit a run on a thread the caller owns and start it, here or through the queue.

        A streamed run on an instance with a worker runs here; a background run (``stream``
        false), any run on an API-only instance, and a run that waits its turn on a busy thread
        (``multitask_strategy`` other than ``reject``) go to the queue. Raises ``BadInputError``,
        ``RateLimitedError`` or ``UnavailableError`` before anything is locked or stored, and
        ``RunConflictError`` while another run is live on the thread (``reject``).
        """
        await self._checked_store()
        flow = await self.flow_of(thread_id)
        config: Any = {"configurable": {"thread_id": thread_id}}
        previous = (await self.graphs[flow].aget_state(config)).values
        if body.flow not in self.graphs:
            raise BadInputError(f"unknown flow {body.flow!r}; flows: {', '.join(self.graphs)}")
        if previous and body.flow != flow:
            raise BadInputError(
                f"this thread runs the {flow!r} flow; start a new thread for {body.flow!r}"
            )
        flow = body.flow
        if body.plan is not None and flow != "research":
            raise BadInputError(f"a plan is for the research flow, not {flow!r}")
        try:
            plan = checked_plan(body.plan) if body.plan is not None else None
        except PlanError as exc:
            raise BadInputError(f"the plan cannot run: {exc}") from None
        turns = (previous or {}).get("turns", [])
        earlier_images = [ref for t in turns for ref in t.get("images", [])]
        knobs = body.model_dump(include=set(REQUEST_KNOBS))
        context = context_from_dict({**knobs, "user": user.name})
        await self.services.registry.refresh_sources()
        try:
            asks_images = bool(body.images or earlier_images)
            admitted = admit(self.services, context, body.question, asks_images)
        except AdmissionError as exc:
            raise BadInputError(str(exc)) from None
        limit_key = limit_key_of(user)
        images = await accepted_images(self, user, limit_key, body.images, earlier_images)
        try:
            hosts = self.settings.webhook_hosts
            webhook = check_webhook(body.webhook, hosts) if body.webhook else ""
        except WebhookRefusedError as exc:
            raise BadInputError(f"the webhook cannot be used: {exc}") from None
        context = await within_daily_tokens(self, user, context)
        run_id = self.runs.new_run_id()
        name_run(run_id)
        queued = not body.stream or not self.has_worker
        strategy = body.multitask_strategy
        token, waiting = await self._take_thread(thread_id, run_id, queued, strategy, limit_key)
        queued = queued or waiting
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
            await self.coordinator.set_title(thread_id, admitted.question[:120])
            await self.records.put(record)
            job = Job(run_id, thread_id, user.name, flow, "start", graph_input,
                      context_to_dict(context), limit_key, record_protocol, token)  # fmt: skip
            return await self._queue_or_start(job, context, queued)
        except BaseException:
            # nothing started: the thread must not stay locked by a run that never ran
            log.exception("could not start run %s on thread %s", run_id, thread_id)
            with contextlib.suppress(Exception):
                await self.records.update(thread_id, run_id, status="error", error="not started")
                if waiting:
                    await self.limits.release_waiting(limit_key, thread_id, run_id)
                if token:
                    await self.coordinator.release(thread_id, token)
                    await self.limits.release_run(limit_key, thread_id, token)
            raise UnavailableError("the run could not be started; nothing was changed") from None

    async def _queue_or_start(self, job: Job, context: Context, queued: bool) -> Started:
        """Queue ``job`` for a worker (``queued``), or start it on this instance."""
        if queued:
            await self.queue.put(job)
            await self.keep_while_queued(job.thread_id)
            return Started(job.run_id, job.thread_id, None)
        # a new run's input, a waiting run's resume value; a continued run starts at its checkpoint
        graph_input = job.input if job.kind == "start" else None
        if job.kind == "resume":
            graph_input = Command(resume=job.input)
        handle = self.runs.start(
            job.thread_id,
            job.owner,
            graph_input,
            context,
            job.run_id,
            record_protocol=job.record_protocol,
            limit_key=job.limit_key,
            graph=self.graphs[job.flow],
            flow=job.flow,
        )
        return Started(job.run_id, job.thread_id, handle)

    async def _take_thread(
        self, thread_id: str, run_id: str, queued: bool, strategy: str, limit_key: str
    ) -> tuple[str, bool]:
        """Lock the thread for the run, or count it as waiting for it: (its token, waits).

        A run that waits has no token (it takes the lock when its turn comes).
        """
        token = queued_token(run_id) if queued else self.runs.token(run_id)
        ttl = self.settings.queued_lock_ttl_ms if queued else self.settings.lock_ttl_ms
        try:
            if await self.coordinator.acquire(thread_id, token, ttl):
                await claim_live(self, limit_key, thread_id, token)
                return token, False
            live = live_run_of(await self.coordinator.holder(thread_id))
            if strategy == "reject":
                raise RunConflictError(thread_id, live)
            # it waits for the thread: counted against its key and the thread from now on
            await claim_waiting(self, limit_key, thread_id, run_id)
            if live is not None and strategy in ("interrupt", "rollback"):
                await self.cancel_run(thread_id, live, strategy)  # type: ignore[arg-type]
            return "", True
        except STORE_DOWN:
            raise UnavailableError(
                "the checkpoint store is unreachable; try again shortly"
            ) from None

    async def resume_run(
        self,
        user: User,
        thread_id: str,
        value: Any,
        record_protocol: bool = False,
        background: bool = False,
    ) -> Started:
        """Resume a run that waits for a person (an ``interrupt()``) with ``value``.

        ``BadInputError`` when nothing waits (or an edited plan cannot run),
        ``RunConflictError`` while a run is live.
        """
        if isinstance(value, dict) and value.get("plan") is not None:
            try:
                checked_plan(value["plan"])
            except PlanError as exc:
                raise BadInputError(f"the plan cannot run: {exc}") from None
        return await self._start_again(
            user, thread_id, "resume", value, record_protocol, background
        )

    async def continue_run(self, user: User, thread_id: str, background: bool = False) -> Started:
        """Continue the thread's run from its last saved step (one that was stopped half-way).

        ``BadInputError`` when the thread has nothing unfinished (or waits for a person: that
        is a resume), ``RunConflictError`` while a run is live.
        """
        return await self._start_again(user, thread_id, "continue", None, False, background)

    async def _start_again(
        self,
        user: User,
        thread_id: str,
        kind: str,
        value: Any,
        record_protocol: bool,
        background: bool,
    ) -> Started:
        """A run that goes on from the thread's checkpoint: resumed with a value, or continued."""
        config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
        flow = await self.flow_of(thread_id)
        snap = await self.graphs[flow].aget_state(config)  # type: ignore[arg-type]
        if kind == "resume" and not snap.interrupts:
            raise BadInputError("nothing on this thread waits for a resume value; start a run")
        if kind == "continue" and (snap.interrupts or not snap.tasks):
            what = "waits for a person: resume it" if snap.interrupts else "has no unfinished run"
            raise BadInputError(f"this thread {what}")
        run_id = self.runs.new_run_id()
        name_run(run_id)
        queued = background or not self.has_worker
        token = queued_token(run_id) if queued else self.runs.token(run_id)
        ttl = self.settings.queued_lock_ttl_ms if queued else self.settings.lock_ttl_ms
        limit_key = limit_key_of(user)
        try:
            if not await self.coordinator.acquire(thread_id, token, ttl):
                holder = await self.coordinator.holder(thread_id)
                raise RunConflictError(thread_id, live_run_of(holder))
            await claim_live(self, limit_key, thread_id, token)  # the same limit as a new run's
        except STORE_DOWN:
            raise UnavailableError(
                "the checkpoint store is unreachable; try again shortly"
            ) from None
        last = await self.coordinator.last_run(thread_id)
        context = context_from_dict({**(last[1] if last else {}), "user": user.name})
        try:
            record = RunRecord(run_id, thread_id, user.name, flow, background=background)
            await self.records.put(dataclasses.replace(record, queued=queued))
            job = Job(run_id, thread_id, user.name, flow, kind, value,
                      context_to_dict(context), limit_key, record_protocol, token)  # fmt: skip
            return await self._queue_or_start(job, context, queued)
        except BaseException:
            with contextlib.suppress(Exception):
                await self.coordinator.release(thread_id, token)
                await self.limits.release_run(limit_key, thread_id, token)
            raise

    # --- event streams (``server.service.streams``) ----------------------------------------

    def started_frames(
        self, started: Started, owner: str, channel: str = "native"
    ) -> AsyncIterator[bytes]:
        """The frames of a run just started, here or by a worker."""
        return streams.started_frames(self, started, owner, channel)

    async def attach_frames(
        self, owner: str, thread_id: str, lei: str | None, channel: str = "native"
    ) -> tuple[AsyncIterator[bytes], str | None]:
        """The frames of the thread's current or last run, wherever it lives, and its run id."""
        return await streams.attach_frames(self, owner, thread_id, lei, channel)

    async def run_frames(
        self, user: User, thread_id: str, request: RunRequest
    ) -> tuple[AsyncIterator[bytes], str | None]:
        """A new run's frames, or those of the run already answering this question."""
        return await streams.run_frames(self, user, thread_id, request)

    def origin_frames(
        self, thread_id: str, run_id: str, owner: str, lei: str | None, channel: str
    ) -> tuple[AsyncIterator[bytes], str]:
        """The live run here, for the instance a client of ``owner`` reconnected to."""
        return streams.origin_frames(self, thread_id, run_id, owner, lei, channel)
