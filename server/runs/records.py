"""What every instance and worker knows of a run: its record (status, times) and its cancel flag.

A run's record is written when it is accepted (``pending``), when a worker starts it
(``running``) and when it ends (``success``, ``error``, ``interrupted``, ``cancelled``,
``waiting``). Its cancel flag is set by whichever instance receives the cancel; the run's
executor checks it between steps (``RunManager``) and stops the run.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, Protocol

import redis.asyncio as aioredis

#: Statuses after which nothing happens to the run any more.
TERMINAL = frozenset({"success", "error", "cancelled", "interrupted", "waiting"})
#: What a cancel does: keep the run's checkpoints, or roll the thread back to where it began.
CancelAction = Literal["interrupt", "rollback"]
#: How long records and cancel flags are kept when nothing else is said (the server gives
#: its threads' retention: they live and are renewed with their thread).
RECORD_TTL_S = 7 * 24 * 3600


#: A run manager's end statuses after which nothing went wrong (no error to tell).
ENDED_WELL = frozenset({"done", "cancelled", "waiting"})


def outcome(status: str) -> str:
    """A run manager's end status as a record status (``done`` → ``success``)."""
    return {"done": "success", "lost": "running"}.get(status, status)


def ended_as(status: str) -> str:
    """A record's status as a run's end status, as its stream says it (``success`` → ``done``)."""
    return {"success": "done"}.get(status, status)


@dataclass
class RunRecord:
    """One run as the API shows it."""

    run_id: str
    thread_id: str
    owner: str
    flow: str
    status: str = "pending"
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    multitask_strategy: str = "reject"
    background: bool = False
    queued: bool = False
    """Executed by a worker from the queue (its events are published for every instance)."""
    executor: str = ""
    """Who runs it now (an instance URL or ``worker:<name>``); empty while it waits."""
    error: str = ""
    cancel: str = ""
    """The cancel action asked for, if any."""
    webhook: str = ""
    began_at: str = ""
    """The thread's checkpoint id when the run first began (``-``: it had none)."""

    @property
    def done(self) -> bool:
        """Whether the run ended."""
        return self.status in TERMINAL

    def public(self) -> dict[str, Any]:
        """The record as an API response (no webhook address: it may carry a secret)."""
        out = asdict(self)
        out.pop("webhook")
        out.pop("began_at")
        return out


class RunRecords(Protocol):
    """Where run records and cancel flags live."""

    async def put(self, record: RunRecord) -> None:
        """Store a new record."""
        ...

    async def get(self, thread_id: str, run_id: str) -> RunRecord | None:
        """A run's record."""
        ...

    async def list(self, thread_id: str, limit: int = 50) -> list[RunRecord]:
        """The thread's runs, newest first."""
        ...

    async def update(self, thread_id: str, run_id: str, **changes: Any) -> RunRecord | None:
        """Change fields of a record (``updated_at`` follows); None when there is none."""
        ...

    async def request_cancel(self, thread_id: str, run_id: str, action: CancelAction) -> None:
        """Ask the run's executor to stop it."""
        ...

    async def cancel_requested(self, thread_id: str, run_id: str) -> CancelAction | None:
        """The cancel asked for the run, if any."""
        ...


def _record(raw: bytes | str) -> RunRecord:
    """A stored record.

    Fields this version does not know (written by a newer one during a rolling upgrade) are
    left out rather than failing every read.
    """
    known = {f.name for f in fields(RunRecord)}
    return RunRecord(**{k: v for k, v in json.loads(raw).items() if k in known})


class RedisRunRecords:
    """Records as JSON strings; a thread's runs in a sorted set by creation time.

    Every key of a thread carries the thread id in braces, so they share one cluster slot.
    """

    def __init__(
        self, client: aioredis.Redis, prefix: str = "seekgraph", ttl_s: int | None = RECORD_TTL_S
    ) -> None:
        self.r = client
        self.p = prefix
        self.ttl_s = ttl_s
        """How long a record lives after it was written or its thread used (None: always)."""

    def _run(self, thread_id: str, run_id: str) -> str:
        return f"{self.p}:run:{{{thread_id}}}:{run_id}"

    def _runs(self, thread_id: str) -> str:
        return f"{self.p}:runs:{{{thread_id}}}"

    def _cancel(self, thread_id: str, run_id: str) -> str:
        return f"{self.p}:cancel:{{{thread_id}}}:{run_id}"

    async def put(self, record: RunRecord) -> None:
        """Store the record and list it under its thread."""
        async with self.r.pipeline(transaction=True) as pipe:
            pipe.set(self._run(record.thread_id, record.run_id), json.dumps(asdict(record)))
            pipe.zadd(self._runs(record.thread_id), {record.run_id: record.created_at})
            if self.ttl_s is not None:
                pipe.expire(self._run(record.thread_id, record.run_id), self.ttl_s)
                pipe.expire(self._runs(record.thread_id), self.ttl_s)
            await pipe.execute()

    async def get(self, thread_id: str, run_id: str) -> RunRecord | None:
        """The record, or None."""
        raw = await self.r.get(self._run(thread_id, run_id))
        return _record(raw) if raw is not None else None

    async def list(self, thread_id: str, limit: int = 50) -> list[RunRecord]:
        """Newest first."""
        ids: Any = await self.r.zrevrange(self._runs(thread_id), 0, limit - 1)
        if not ids:
            return []
        keys = [self._run(thread_id, i.decode() if isinstance(i, bytes) else i) for i in ids]
        return [_record(raw) for raw in await self.r.mget(keys) if raw is not None]

    async def update(self, thread_id: str, run_id: str, **changes: Any) -> RunRecord | None:
        """Read, change and write back under WATCH (two instances may update one run)."""
        key = self._run(thread_id, run_id)
        async with self.r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(key)
                    raw = await pipe.get(key)
                    if raw is None:
                        await pipe.reset()  # type: ignore[no-untyped-call]
                        return None
                    record = replace(_record(raw), **changes, updated_at=time.time())
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.set(key, json.dumps(asdict(record)), keepttl=True)
                    await pipe.execute()
                    return record
                except aioredis.WatchError:
                    continue

    async def request_cancel(self, thread_id: str, run_id: str, action: CancelAction) -> None:
        """Set the flag the executor polls."""
        await self.r.set(self._cancel(thread_id, run_id), action, ex=self.ttl_s or RECORD_TTL_S)

    async def cancel_requested(self, thread_id: str, run_id: str) -> CancelAction | None:
        """The flag, if set."""
        raw = await self.r.get(self._cancel(thread_id, run_id))
        if raw is None:
            return None
        return "rollback" if raw in (b"rollback", "rollback") else "interrupt"


class LocalRunRecords:
    """Records in memory, for one instance without Redis (they end with the process)."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], RunRecord] = {}
        self._cancels: dict[tuple[str, str], CancelAction] = {}

    async def put(self, record: RunRecord) -> None:
        """Keep the record."""
        self._records[(record.thread_id, record.run_id)] = record

    async def get(self, thread_id: str, run_id: str) -> RunRecord | None:
        """The record."""
        found = self._records.get((thread_id, run_id))
        return replace(found) if found is not None else None

    async def list(self, thread_id: str, limit: int = 50) -> list[RunRecord]:
        """Newest first."""
        mine = [replace(r) for (t, _), r in self._records.items() if t == thread_id]
        return sorted(mine, key=lambda r: r.created_at, reverse=True)[:limit]

    async def update(self, thread_id: str, run_id: str, **changes: Any) -> RunRecord | None:
        """Change the record."""
        found = self._records.get((thread_id, run_id))
        if found is None:
            return None
        self._records[(thread_id, run_id)] = replace(found, **changes, updated_at=time.time())
        return replace(self._records[(thread_id, run_id)])

    async def request_cancel(self, thread_id: str, run_id: str, action: CancelAction) -> None:
        """Set the flag."""
        self._cancels[(thread_id, run_id)] = action

    async def cancel_requested(self, thread_id: str, run_id: str) -> CancelAction | None:
        """The flag."""
        return self._cancels.get((thread_id, run_id))


class RunEndedError(Exception):
    """The run to cancel already ended; ``status`` says how."""

    def __init__(self, run_id: str, status: str) -> None:
        super().__init__(f"run {run_id} already ended ({status})")
        self.status = status


async def ask_to_cancel(
    records: RunRecords, thread_id: str, run_id: str, action: CancelAction
) -> RunRecord | None:
    """Flag the run for its executor; a run nobody took yet is cancelled at once.

    None when there is no such run; ``RunEndedError`` when it already ended.
    """
    record = await records.get(thread_id, run_id)
    if record is None:
        return None
    if record.done:
        raise RunEndedError(run_id, record.status)
    await records.request_cancel(thread_id, run_id, action)
    record = await records.update(thread_id, run_id, cancel=action) or record
    if record.status == "pending":  # nobody runs it yet: it never will
        record = await records.update(thread_id, run_id, status="cancelled") or record
    return record
