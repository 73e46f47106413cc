"""The audit trail: who was shown which documents, when, through which door.

Append-only. One entry per run (the documents its answer cited, and those whose titles it
listed) and per MCP ``search`` / ``read_document`` call (what they returned). Kept in a
Redis stream when instances share Redis, otherwise in ``audit.sqlite`` under the data
directory; ``seekgraph audit`` reads the same store the server writes. Entries older than
``SEEKGRAPH_AUDIT_RETENTION_DAYS`` are dropped when new ones are written.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import redis.asyncio as aioredis

from seekgraph.server.caller import CALLER


@dataclass(frozen=True)
class AuditEntry:
    """One thing shown to one person."""

    ts: float
    user: str
    key_id: str
    door: str
    action: str
    """``run``, ``search`` or ``read_document``."""
    flow: str = ""
    run_id: str = ""
    thread_id: str = ""
    status: str = ""
    shown: list[str] = field(default_factory=list)
    """Documents whose content was shown (cited passages, returned passages, a read)."""
    listed: list[str] = field(default_factory=list)
    """Documents named by title only (the run's evidence)."""
    tokens: int = 0
    cost_usd: float = 0.0

    @classmethod
    def now(cls, user: str, action: str, **fields: Any) -> AuditEntry:
        """An entry stamped now with the request's caller (its key id and door)."""
        caller = CALLER.get()
        return cls(
            ts=time.time(),
            user=user,
            key_id=caller.key_id if caller is not None else "",
            door=caller.door if caller is not None else "",
            action=action,
            **fields,
        )

    def matches(self, user: str | None, doc: str | None, since: float | None) -> bool:
        """Whether the entry passes a query's filters."""
        return (
            (user is None or self.user == user)
            and (doc is None or doc in self.shown or doc in self.listed)
            and (since is None or self.ts >= since)
        )


class AuditLog(Protocol):
    """Where entries are appended and read back."""

    async def append(self, entry: AuditEntry) -> None:
        """Add an entry (and drop those past retention)."""
        ...

    async def query(
        self,
        user: str | None = None,
        doc: str | None = None,
        since: float | None = None,
        limit: int = 1000,
    ) -> list[AuditEntry]:
        """Entries that match, oldest first (the newest ``limit``)."""
        ...


def _entry(data: dict[str, Any]) -> AuditEntry:
    return AuditEntry(**{k: v for k, v in data.items() if k in AuditEntry.__dataclass_fields__})


class RedisAuditLog:
    """A Redis stream (``XADD`` with ``MINID`` trimming: entries are never edited)."""

    def __init__(self, client: aioredis.Redis, retention_days: int, key: str = "seekgraph:audit"):
        self.r, self.key, self.retention_s = client, key, retention_days * 86_400

    async def append(self, entry: AuditEntry) -> None:
        """``XADD`` the entry as JSON."""
        oldest = int((time.time() - self.retention_s) * 1000)
        await self.r.xadd(
            self.key, {"entry": json.dumps(asdict(entry))}, minid=oldest, approximate=True
        )

    async def query(
        self,
        user: str | None = None,
        doc: str | None = None,
        since: float | None = None,
        limit: int = 1000,
    ) -> list[AuditEntry]:
        """Read the stream from ``since`` on and filter."""
        start = f"{int(since * 1000)}-0" if since is not None else "-"
        out: list[AuditEntry] = []
        while True:
            rows: list[Any] = await self.r.xrange(self.key, min=start, max="+", count=1000) or []
            for _, fields in rows:
                raw = (fields or {}).get(b"entry") or (fields or {}).get("entry")
                entry = _entry(json.loads(raw or "{}"))
                if entry.matches(user, doc, since):
                    out.append(entry)
            if len(rows) < 1000:
                break
            last = rows[-1][0]
            last = last.decode() if isinstance(last, bytes) else str(last)
            start = f"({last}"
        return out[-limit:]


class SqliteAuditLog:
    """A table in ``audit.sqlite`` (one instance without Redis), written in insert order."""

    def __init__(self, path: Path, retention_days: int) -> None:
        self.path, self.retention_s = path, retention_days * 86_400
        path.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(path) as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY, ts REAL, user TEXT,"
                " entry TEXT)"
            )
            db.execute("CREATE INDEX IF NOT EXISTS audit_ts ON audit (ts)")

    def _append(self, entry: AuditEntry) -> None:
        with sqlite3.connect(self.path) as db:
            db.execute(
                "INSERT INTO audit (ts, user, entry) VALUES (?, ?, ?)",
                (entry.ts, entry.user, json.dumps(asdict(entry))),
            )
            db.execute("DELETE FROM audit WHERE ts < ?", (time.time() - self.retention_s,))

    async def append(self, entry: AuditEntry) -> None:
        """Insert the entry."""
        await asyncio.to_thread(self._append, entry)

    def _query(self, since: float | None) -> list[AuditEntry]:
        with sqlite3.connect(self.path) as db:
            rows = db.execute(
                "SELECT entry FROM audit WHERE ts >= ? ORDER BY id", (since or 0.0,)
            ).fetchall()
        return [_entry(json.loads(r[0])) for r in rows]

    async def query(
        self,
        user: str | None = None,
        doc: str | None = None,
        since: float | None = None,
        limit: int = 1000,
    ) -> list[AuditEntry]:
        """Select from ``since`` on and filter."""
        rows = await asyncio.to_thread(self._query, since)
        return [e for e in rows if e.matches(user, doc, since)][-limit:]


def shown_by_run(values: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The documents a run's answer showed (cited) and named (its evidence's titles)."""
    cited = list(dict.fromkeys(str(c.get("doc_id")) for c in values.get("citations") or []))
    for ref in values.get("references") or []:  # a research report's numbered references
        if ref.get("doc_id") and str(ref["doc_id"]) not in cited:
            cited.append(str(ref["doc_id"]))
    listed = [
        d
        for d in dict.fromkeys(str(e.get("doc_id")) for e in values.get("evidence") or [])
        if d not in cited
    ]
    return cited, listed
