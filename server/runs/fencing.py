"""Fenced checkpoint writes: a run that lost its thread lock may not write any more.

The run task sets ``FENCE`` to its lock token. On Redis, a checkpoint (with its "latest"
pointer) and a task's writes are each stored by one Lua script that first checks the token
against the thread's lock (``coordination.FENCE_PRELUDE``): the check and the write are one
atomic step, so a paused holder whose lock was taken over writes nothing at all, not even a
write that was already on its way. On SQLite (one instance) the check precedes the write.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import zlib
from collections.abc import AsyncIterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.redis.aio import AsyncRedisSaver
from langgraph.checkpoint.redis.util import to_storage_safe_id, to_storage_safe_str
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from redis.exceptions import RedisError, ResponseError
from redisvl.exceptions import RedisVLError

from server.runs.coordination import FENCE_PRELUDE, LOST_LOCK_MARK, Coordinator, RedisCoordinator

log = logging.getLogger("seekgraph.runs")

#: Strings at least this long (passages, documents, answers) are stored once per thread and
#: referenced from checkpoints and writes: a passage found in round 1 is then one copy, not
#: one per later checkpoint, branch write and thread-level evidence list.
PASSAGE_MIN_CHARS = 160
#: What a reference to a stored passage looks like in a checkpoint (never a real text's
#: start: it begins with NUL).
PASSAGE_MARK = "\x00passage:"


#: Parts of a checkpoint document stored as one JSON string each (see ``_dump_checkpoint``).
PACKED_PARTS = frozenset(
    {"channel_values", "channel_versions", "versions_seen", "updated_channels"}
)
#: How a packed part starts: zlib-compressed JSON in base 85 (valid in a JSON string).
PACKED_MARK = "z85:"


def pack(value: Any) -> str:
    """A checkpoint part as one compressed string."""
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return PACKED_MARK + base64.b85encode(zlib.compress(raw, 6)).decode()


def unpack(value: Any) -> Any:
    """A packed part back as data (anything else is returned as it is)."""
    if isinstance(value, str) and value.startswith(PACKED_MARK):
        return json.loads(zlib.decompress(base64.b85decode(value[len(PACKED_MARK) :])))
    return value


def passages_key(thread_id: str, prefix: str = "seekgraph") -> str:
    """The hash of a thread's passages (digest → text); the thread id in braces (one slot)."""
    return f"{prefix}:passages:{{{thread_id}}}"


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
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
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


class LostLockError(RuntimeError):
    """The run's lock was taken by someone else; its results must not be written."""


@dataclass(frozen=True)
class Fence:
    """The lock a run must still hold to write."""

    coordinator: Coordinator
    thread_id: str
    token: str
    ttl_ms: int

    def lost(self) -> LostLockError:
        """The error a refused write raises."""
        return LostLockError(
            f"run lock of thread {self.thread_id} is no longer held by this run; "
            "not writing its results"
        )

    async def check(self) -> None:
        """Raise ``LostLockError`` unless ``token`` still holds (or may take back) the lock."""
        if not await self.coordinator.refresh(self.thread_id, self.token, self.ttl_ms):
            raise self.lost()

    def redis_args(self) -> tuple[list[str], list[Any]]:
        """KEYS and ARGV that ``FENCE_PRELUDE`` expects first."""
        coordinator = self.coordinator
        if not isinstance(coordinator, RedisCoordinator):
            raise TypeError("a fenced Redis saver needs the Redis coordinator")
        return list(coordinator.fence_keys(self.thread_id)), [self.token, self.ttl_ms]


FENCE: ContextVar[Fence | None] = ContextVar("seekgraph_fence", default=None)


async def check_fence() -> None:
    """Check the current run's fence, if any."""
    fence = FENCE.get()
    if fence is not None:
        await fence.check()


# KEYS: lock, fence, checkpoint, latest pointer, the parent's write registry ('' = none);
# ARGV: token, ttl ms, checkpoint JSON, expiry seconds ('' = none). The parent's writes
# are in the new checkpoint now: they go (resume needs only the latest checkpoint's).
_PUT_CHECKPOINT = (
    FENCE_PRELUDE
    + """
redis.call('JSON.SET', KEYS[3], '$', ARGV[3])
redis.call('SET', KEYS[4], KEYS[3])
if KEYS[5] ~= '' then
  local spent = redis.call('ZRANGE', KEYS[5], 0, -1)
  for i = 1, #spent do redis.call('DEL', spent[i]) end
  redis.call('DEL', KEYS[5])
end
if ARGV[4] ~= '' then
  redis.call('EXPIRE', KEYS[3], ARGV[4])
  redis.call('EXPIRE', KEYS[4], ARGV[4])
end
return 1
"""
)

# KEYS: lock, fence, checkpoint, registry ('' = none), latest pointer, write keys…;
# ARGV: token, ttl ms, expiry seconds ('' = none), write JSONs… Writes that arrive after
# their checkpoint's child was saved are not stored: the child holds them already, and only
# the latest checkpoint's writes serve a resume.
_PUT_WRITES = (
    FENCE_PRELUDE
    + """
if redis.call('EXISTS', KEYS[3]) == 1 and redis.call('GET', KEYS[5]) ~= KEYS[3] then
  return 0
end
for i = 6, #KEYS do
  redis.call('JSON.SET', KEYS[i], '$', ARGV[i - 2])
  if ARGV[3] ~= '' then redis.call('EXPIRE', KEYS[i], ARGV[3]) end
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('JSON.SET', KEYS[3], '$.has_writes', 'true')
end
if KEYS[4] ~= '' then
  for i = 6, #KEYS do redis.call('ZADD', KEYS[4], i - 6, KEYS[i]) end
  if ARGV[3] ~= '' then redis.call('EXPIRE', KEYS[4], ARGV[3]) end
end
return 1
"""
)


class FencedRedisSaver(AsyncRedisSaver):
    """``AsyncRedisSaver`` whose writes are atomic with the run's lock check.

    The documents written are the ones ``AsyncRedisSaver`` writes (same keys, same fields,
    read back by its own ``aget_tuple`` and searches); only the round trips differ: one
    script per checkpoint and one per task's writes. Without a fence (no run task) the
    saver writes as its base class does.
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
        """The base saver's document, its bulky parts each one JSON string.

        RedisJSON keeps a node per value (about 2.7 bytes of memory per byte of JSON for
        a checkpoint's many small values); nothing searches inside these parts, so each is
        kept as one string and unpacked by ``_load_checkpoint``.
        """
        dumped = super()._dump_checkpoint(checkpoint)
        for part in PACKED_PARTS:
            if part in dumped:
                dumped[part] = pack(dumped[part])
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
        if isinstance(channel_values, str):
            channel_values = self._recursive_deserialize(unpack(channel_values))
        loaded = super()._load_checkpoint(checkpoint, channel_values, pending_sends)
        if isinstance(loaded.get("channel_values"), str):
            unpacked = self._recursive_deserialize(unpack(loaded["channel_values"]))
            loaded = {**loaded, "channel_values": unpacked}
        return loaded

    def _expiry(self) -> str:
        if self.ttl_config and "default_ttl" in self.ttl_config:
            return str(int(self.ttl_config["default_ttl"] * 60))
        return ""

    async def _fenced(self, fence: Fence, script: str, keys: list[str], args: list[Any]) -> None:
        prelude_keys, prelude_args = fence.redis_args()
        try:
            await self._redis.eval(script, len(prelude_keys) + len(keys), *prelude_keys, *keys,
                                   *prelude_args, *args)  # fmt: skip
        except ResponseError as exc:
            if LOST_LOCK_MARK in str(exc):
                raise fence.lost() from None
            raise

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        stream_mode: str = "values",
    ) -> RunnableConfig:
        """Save the checkpoint and move the "latest" pointer, only while the lock is held.

        The run's metadata (its flow, owner, run id) is stored with it, as LangGraph's own
        savers do (``AsyncRedisSaver`` leaves that to its caller).
        """
        metadata = get_checkpoint_metadata(config, metadata)
        configurable = config["configurable"]
        thread_id = configurable["thread_id"]
        stowed: dict[str, str] = {}
        checkpoint = {
            **checkpoint,
            "channel_values": stow(checkpoint.get("channel_values") or {}, stowed),
        }
        fence = FENCE.get()
        if fence is None or self.cluster_mode:
            await check_fence()
            await self._store_passages(thread_id, stowed)
            return await super().aput(config, checkpoint, metadata, new_versions, stream_mode)
        await self._store_passages(thread_id, stowed)
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        parent_id = configurable.get("checkpoint_id")
        checkpoint_id = checkpoint["id"]
        run_id = configurable.get("run_id", metadata.get("run_id"))
        data: dict[str, Any] = {
            "thread_id": to_storage_safe_id(thread_id),
            "run_id": to_storage_safe_id(run_id) if run_id else "",
            "checkpoint_ns": to_storage_safe_str(checkpoint_ns),
            "checkpoint_id": to_storage_safe_id(checkpoint_id),
            "parent_checkpoint_id": to_storage_safe_id(parent_id)
            if parent_id and parent_id != checkpoint_id
            else "",
            "checkpoint_ts": _ulid_ms(checkpoint_id),
            "checkpoint": self._dump_checkpoint(checkpoint.copy()),
            "metadata": self._dump_metadata(metadata),
            "has_writes": False,
        }
        if "source" in metadata and "step" in metadata:
            data["source"] = metadata["source"]
            data["step"] = metadata["step"]
        key = self._make_redis_checkpoint_key_cached(thread_id, checkpoint_ns, checkpoint_id)
        latest = self._make_redis_checkpoint_latest_key(thread_id, checkpoint_ns)
        spent = (
            self._key_registry.make_write_keys_zset_key(thread_id, checkpoint_ns, parent_id)
            if self._key_registry and parent_id and parent_id != checkpoint_id
            else ""
        )
        await self._fenced(
            fence, _PUT_CHECKPOINT, [key, latest, spent], [json.dumps(data), self._expiry()]
        )
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint_id,
            }
        }

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Save a task's writes, only while the lock is held."""
        configurable = config["configurable"]
        thread_id = configurable["thread_id"]
        stowed: dict[str, str] = {}
        writes = [(channel, stow(value, stowed)) for channel, value in writes]
        fence = FENCE.get()
        if fence is None or self.cluster_mode or not writes:
            await check_fence()
            await self._store_passages(thread_id, stowed)
            await super().aput_writes(config, writes, task_id, task_path)
            return
        await self._store_passages(thread_id, stowed)
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = configurable["checkpoint_id"]
        keys: list[str] = []
        documents: list[str] = []
        for idx, (channel, value) in enumerate(writes):
            type_, blob = self.serde.dumps_typed(value)
            index = WRITES_IDX_MAP.get(channel, idx)
            keys.append(
                self._make_redis_checkpoint_writes_key_cached(
                    thread_id, checkpoint_ns, checkpoint_id, task_id, index
                )
            )
            documents.append(
                json.dumps(
                    {
                        "thread_id": to_storage_safe_id(thread_id),
                        "checkpoint_ns": to_storage_safe_str(checkpoint_ns),
                        "checkpoint_id": to_storage_safe_id(checkpoint_id),
                        "task_id": task_id,
                        "task_path": task_path,
                        "idx": index,
                        "channel": channel,
                        "type": type_,
                        "blob": self._encode_blob(blob),
                    }
                )
            )
        checkpoint_key = self._make_redis_checkpoint_key(thread_id, checkpoint_ns, checkpoint_id)
        registry = (
            self._key_registry.make_write_keys_zset_key(thread_id, checkpoint_ns, checkpoint_id)
            if self._key_registry
            else ""
        )
        latest = self._make_redis_checkpoint_latest_key(thread_id, checkpoint_ns)
        await self._fenced(
            fence,
            _PUT_WRITES,
            [checkpoint_key, registry, latest, *keys],
            [self._expiry(), *documents],
        )

    async def _store_passages(self, thread_id: str, passages: dict[str, str]) -> None:
        """Store passages before the checkpoint or writes that refer to them (idempotent)."""
        if not passages:
            return
        key = passages_key(thread_id)
        packed = {d: zlib.compress(t.encode(), 6) for d, t in passages.items()}
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

    async def indexes_ready(self) -> bool:
        """Whether the saver's search indexes exist; recreate them when they are missing.

        A Redis restarted without its data has lost them, and every run would fail.
        """
        try:
            if await self.checkpoints_index.exists() and (
                await self.checkpoint_writes_index.exists()
            ):
                return True
            await self.checkpoints_index.create(overwrite=False)
            await self.checkpoint_writes_index.create(overwrite=False)
            return bool(
                await self.checkpoints_index.exists()
                and await self.checkpoint_writes_index.exists()
            )
        except (OSError, RedisError, RedisVLError):
            return False


def _ulid_ms(checkpoint_id: str) -> float:
    """The checkpoint's time in ms since the epoch (its id is a ULID or a UUID6)."""
    import time

    try:
        from ulid import ULID

        return float(ULID.from_str(checkpoint_id).timestamp)
    except Exception:  # noqa: BLE001 - the base saver falls back to now the same way
        return time.time() * 1000


class FencedSqliteSaver(AsyncSqliteSaver):
    """``AsyncSqliteSaver`` whose writes are fenced (one instance: check, then write)."""

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Check the fence, then save the checkpoint."""
        await check_fence()
        return await super().aput(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Check the fence, then save the writes."""
        await check_fence()
        await super().aput_writes(config, writes, task_id, task_path)
