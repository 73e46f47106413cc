"""What the server keeps in Redis, by key family: how big it is, and what retention removes.

Every key a thread makes belongs to one family (its checkpoints, their writes and pointers,
its events, run records, lock, route, passages, …). ``thread_keys`` names them all, so a
thread is deleted — on request or when its retention has passed — with no orphan left;
``family_sizes`` is what ``/metrics`` and ``seekgraph admin storage`` show.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis

#: Key families, in the order they are shown: (name, how its keys start).
FAMILIES: tuple[tuple[str, str], ...] = (
    ("checkpoints", "checkpoint:"),
    ("checkpoint_writes", "checkpoint_write:"),
    ("checkpoint_latest", "checkpoint_latest:"),
    ("write_registries", "write_keys_zset:"),
    ("passages", "seekgraph:passages:"),
    ("threads", "seekgraph:thread:"),
    ("user_threads", "seekgraph:user-threads:"),
    ("events", "seekgraph:events:"),
    ("run_records", "seekgraph:run:"),
    ("run_lists", "seekgraph:runs:"),
    ("cancel_flags", "seekgraph:cancel:"),
    ("locks", "seekgraph:lock:"),
    ("fences", "seekgraph:fence:"),
    ("routes", "seekgraph:route:"),
    ("run_queue", "seekgraph:runq"),
    ("retention", "seekgraph:retention"),
    ("audit", "seekgraph:audit"),
    ("index", "seekgraph:index:"),
    ("ingest", "seekgraph:ingest"),
    ("limits", "seekgraph:live-runs:"),
    ("rate", "seekgraph:rate:"),
    ("usage", "seekgraph:usage:"),
    ("api_keys", "seekgraph:apikeys"),
)


def family_of(key: str) -> str:
    """The family a key belongs to (``other`` for keys that are not ours)."""
    for name, prefix in FAMILIES:
        if key.startswith(prefix):
            return name
    return "other"


@dataclass
class FamilySizes:
    """Keys and bytes (Redis ``MEMORY USAGE``) per family."""

    keys: Counter[str] = field(default_factory=Counter)
    bytes: Counter[str] = field(default_factory=Counter)

    @property
    def total_keys(self) -> int:
        """Keys of every family."""
        return sum(self.keys.values())

    @property
    def total_bytes(self) -> int:
        """Bytes of every family."""
        return sum(self.bytes.values())


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def family_sizes(client: aioredis.Redis, batch: int = 500) -> FamilySizes:
    """Walk the keyspace once (``SCAN``) and sum ``MEMORY USAGE`` per family.

    Costs one pass over every key: fine for ``/metrics`` scraped every few seconds on a
    store of a few hundred thousand keys, and for the admin command.
    """
    out = FamilySizes()
    async for chunk in _scan_chunks(client, batch):
        async with client.pipeline(transaction=False) as pipe:
            for key in chunk:
                pipe.memory_usage(key, samples=0)
            sizes = await pipe.execute(raise_on_error=False)
        for key, size in zip(chunk, sizes, strict=True):
            name = family_of(key)
            out.keys[name] += 1
            out.bytes[name] += int(size) if isinstance(size, int) else 0
    return out


async def _scan_chunks(client: aioredis.Redis, batch: int) -> Any:
    cursor: int = 0
    while True:
        cursor, found = await client.scan(cursor, count=batch)
        if found:
            yield [_text(k) for k in found]
        if cursor == 0:
            return


def now() -> float:
    """Seconds since the epoch (a function, so tests can see what it is compared with)."""
    return time.time()
