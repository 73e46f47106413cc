"""A Redis checkpointer that keeps a run small: passages once per thread, parts compressed.

A search run checkpoints after every node, and every checkpoint held the whole state: the
same passages in the hits, the evidence and the thread's evidence, a copy per step. Here a
passage (a hit or a piece of evidence) and any long string is stored once in the thread's
passages hash and referred to by digest; a checkpoint's bulky parts (channel values,
versions) are one compressed string together instead of a RedisJSON tree; channel versions
are 10-digit counters. Reading (``aget_tuple``, ``alist``) puts everything back, so the state a
node, ``GET /threads/{id}/history`` or Studio sees is the one that was written.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import zlib
from collections.abc import AsyncIterator
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointTuple
from langgraph.checkpoint.redis.aio import AsyncRedisSaver

log = logging.getLogger("seekgraph.runs")

#: Strings at least this long (passages, documents, answers) are stored once per thread and
#: referenced from checkpoints and writes: a passage found in round 1 is then one copy, not
#: one per later checkpoint, branch write and thread-level evidence list.
PASSAGE_MIN_CHARS = 160
#: What a reference to a stored passage looks like in a checkpoint (never a real text's
#: start: it begins with NUL).
PASSAGE_MARK = "\x00passage:"


#: Parts of a checkpoint document packed into one string (see ``_dump_checkpoint``).
PACKED_PARTS = frozenset(
    {"channel_values", "channel_versions", "versions_seen", "updated_channels"}
)
#: How a packed part starts: zlib-compressed JSON in base 85 (valid in a JSON string).
PACKED_MARK = "z85:"
#: How the packed parts of a checkpoint together start (a dict of the parts, packed).
BUNDLE_MARK = "z85b:"


def pack(value: Any) -> str:
    """A checkpoint part as one compressed string."""
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return PACKED_MARK + base64.b85encode(zlib.compress(raw, 6)).decode()


def unpack(value: Any) -> Any:
    """A packed part (or bundle of parts) back as data; anything else as it is."""
    for mark in (PACKED_MARK, BUNDLE_MARK):
        if isinstance(value, str) and value.startswith(mark):
            return json.loads(zlib.decompress(base64.b85decode(value[len(mark) :])))
    return value


def passages_key(thread_id: str, prefix: str = "seekgraph") -> str:
    """The hash of a thread's passages (digest → text); the thread id in braces (one slot)."""
    return f"{prefix}:passages:{{{thread_id}}}"


def packed_passages(passages: dict[str, str]) -> dict[str, bytes]:
    """The passages as the thread's hash stores them: digest → compressed text."""
    return {d: zlib.compress(t.encode(), 6) for d, t in passages.items()}


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def stow(value: Any, found: dict[str, str]) -> Any:
    """``value`` with every passage and long string replaced by its reference.

    A passage (a hit or a piece of evidence: a dict with ``source_id`` and ``snippet``) is
    stored whole as JSON, a long string as itself; ``found`` gets them by digest. Plain data
    only (dicts, lists, tuples, strings); anything else is kept as it is. The value given is
    never changed: what changes is copied.
    """
    if isinstance(value, str):
        if len(value) < PASSAGE_MIN_CHARS or value.startswith(PASSAGE_MARK):
            return value
        digest = _digest(value)
        found[digest] = value
        return PASSAGE_MARK + digest
    if isinstance(value, dict):
        if "source_id" in value and isinstance(value.get("snippet"), str):
            try:
                text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
            except TypeError:  # not plain data after all: its strings are stowed one by one
                text = ""
            if text:
                digest = "j" + _digest(text)
                found[digest] = text
                return PASSAGE_MARK + digest
        return {k: stow(v, found) for k, v in value.items()}
    if isinstance(value, list):
        return [stow(v, found) for v in value]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(stow(v, found) for v in value)
    return value


def references(value: Any, found: set[str]) -> None:
    """Add the digests ``value`` refers to."""
    if isinstance(value, str):
        if value.startswith(PASSAGE_MARK):
            found.add(value[len(PASSAGE_MARK) :])
    elif isinstance(value, dict):
        for v in value.values():
            references(v, found)
    elif isinstance(value, list | tuple):
        for v in value:
            references(v, found)


def restore(value: Any, texts: dict[str, str]) -> Any:
    """``value`` with every reference replaced by its text."""
    if isinstance(value, str):
        if not value.startswith(PASSAGE_MARK):
            return value
        digest = value[len(PASSAGE_MARK) :]
        text = texts.get(digest)
        if text is None:
            return "[passage no longer stored]"
        return json.loads(text) if digest.startswith("j") else text
    if isinstance(value, dict):
        return {k: restore(v, texts) for k, v in value.items()}
    if isinstance(value, list):
        return [restore(v, texts) for v in value]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(restore(v, texts) for v in value)
    return value


class CompactRedisSaver(AsyncRedisSaver):
    """``AsyncRedisSaver`` with passages stored once, parts packed, short versions.

    Subclasses that write documents themselves (``FencedRedisSaver``) ``stow`` the values
    and ``_store_passages`` before writing.
    """

    def get_next_version(self, current: str | None, channel: Any) -> str:
        """The channel's next version: a 10-digit counter (the base saver's has 52 chars).

        Versions are compared as strings: equal widths keep their order, and a counter
        written this way sorts after the base saver's zero-padded ones of the same thread.
        Nothing here is keyed by version (channel values are stored inline), so the base's
        random suffix has nothing to keep apart.
        """
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:010d}"

    def _dump_checkpoint(self, checkpoint: Checkpoint) -> dict[str, Any]:
        """The base saver's document, its bulky parts packed together in one string.

        RedisJSON keeps a node per value (about 2.7 bytes of memory per byte of JSON for a
        checkpoint's many small values); nothing searches inside the channel values and
        versions, so they are one compressed string in ``channel_values`` (the field every
        read of the base saver fetches), unpacked by ``_load_checkpoint``.
        """
        dumped = super()._dump_checkpoint(checkpoint)
        bundle = {part: dumped.pop(part) for part in PACKED_PARTS if part in dumped}
        dumped["channel_values"] = BUNDLE_MARK + pack(bundle)[len(PACKED_MARK) :]
        return dumped

    def _load_checkpoint(
        self,
        checkpoint: dict[str, Any] | str,
        channel_values: dict[str, Any],
        pending_sends: list[Any],
    ) -> Checkpoint:
        """The base saver's loading, with the packed parts unpacked."""
        if isinstance(checkpoint, str):
            checkpoint = json.loads(checkpoint)
        if isinstance(checkpoint, dict):
            checkpoint = {k: unpack(v) if k in PACKED_PARTS else v for k, v in checkpoint.items()}
            bundle = checkpoint.get("channel_values")
            if not isinstance(bundle, dict) or "channel_values" not in bundle:
                bundle = unpack(channel_values) if isinstance(channel_values, str) else None
            if isinstance(bundle, dict) and "channel_values" in bundle:
                checkpoint = {**checkpoint, **bundle}
                channel_values = self._recursive_deserialize(bundle["channel_values"])
        if isinstance(channel_values, str):  # a part packed alone
            channel_values = self._recursive_deserialize(unpack(channel_values))
        return super()._load_checkpoint(checkpoint, channel_values, pending_sends)

    def _expiry(self) -> str:
        if self.ttl_config and "default_ttl" in self.ttl_config:
            return str(int(self.ttl_config["default_ttl"] * 60))
        return ""

    async def _store_passages(self, thread_id: str, passages: dict[str, str]) -> None:
        """Store passages before the checkpoint or writes that refer to them (idempotent)."""
        if not passages:
            return
        key = passages_key(thread_id)
        packed = packed_passages(passages)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hset(key, mapping=packed)  # type: ignore[arg-type]
            expiry = self._expiry()
            if expiry:
                pipe.expire(key, int(expiry))
            await pipe.execute()

    async def _restored(self, found: CheckpointTuple | None) -> CheckpointTuple | None:
        """``found`` with its passages put back (one ``HMGET``)."""
        if found is None:
            return None
        digests: set[str] = set()
        references(found.checkpoint.get("channel_values"), digests)
        references([w[2] for w in found.pending_writes or []], digests)
        if not digests:
            return found
        thread_id = found.config["configurable"]["thread_id"]
        ordered = sorted(digests)
        raw: Any = await self._redis.hmget(passages_key(thread_id), ordered)
        texts = {
            d: zlib.decompress(t).decode()
            for d, t in zip(ordered, raw, strict=True)
            if t is not None
        }
        if len(texts) < len(ordered):
            log.warning("thread %s: %d passages no longer stored", thread_id,
                        len(ordered) - len(texts))  # fmt: skip
        checkpoint = {
            **found.checkpoint,
            "channel_values": restore(found.checkpoint.get("channel_values"), texts),
        }
        writes = [(t, c, restore(v, texts)) for t, c, v in found.pending_writes or []]
        return found._replace(checkpoint=checkpoint, pending_writes=writes)  # type: ignore[arg-type]

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint, its passages put back."""
        return await self._restored(await super().aget_tuple(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - the base class's name
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """The checkpoints, their passages put back."""
        async for found in super().alist(config, filter=filter, before=before, limit=limit):
            restored = await self._restored(found)
            if restored is not None:
                yield restored

    async def adelete_thread(self, thread_id: str) -> None:
        """Every checkpoint, write and passage of the thread."""
        await super().adelete_thread(thread_id)
        await self._redis.delete(passages_key(thread_id))
