"""Fenced checkpoint writes: a run that lost its thread lock may not write any more.

The run task sets ``FENCE`` to its lock token. On Redis, a checkpoint (with its "latest"
pointer) and a task's writes are each stored by one Lua script that first checks the token
against the thread's lock (``coordination.FENCE_PRELUDE``): the check and the write are one
atomic step, so a paused holder whose lock was taken over writes nothing at all, not even a
write that was already on its way. On SQLite (one instance) the check precedes the write.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.redis.util import to_storage_safe_id, to_storage_safe_str
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from redis.exceptions import RedisError, ResponseError
from redisvl.exceptions import RedisVLError

from seekgraph.server.runs.compact import (
    CompactRedisSaver,
    packed_passages,
    passages_key,
    stow,
)
from seekgraph.server.runs.coordination import (
    FENCE_PRELUDE,
    LOST_LOCK_MARK,
    Coordinator,
    RedisCoordinator,
)

log = logging.getLogger("seekgraph.runs")


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


# The passages a checkpoint or a task's writes refer to (the thread's hash, digest → text)
# are stored by the same script, after the lock check: a run that lost its lock adds none.
# ``store_passages(key, first, expiry)`` sets the field/value pairs ARGV[first…].
_STORE_PASSAGES = """
local function store_passages(key, first, expiry)
  if #ARGV < first then return end
  for i = first, #ARGV, 2 do redis.call('HSET', key, ARGV[i], ARGV[i + 1]) end
  if expiry ~= '' then redis.call('EXPIRE', key, expiry) end
end
"""

# KEYS: lock, fence, checkpoint, latest pointer, the parent's write registry ('' = none),
# passages; ARGV: token, ttl ms, checkpoint JSON, expiry seconds ('' = none), passage
# digest/text pairs… The parent's writes are in the new checkpoint now: they go (resume
# needs only the latest checkpoint's).
_PUT_CHECKPOINT = (
    FENCE_PRELUDE
    + _STORE_PASSAGES
    + """
store_passages(KEYS[6], 5, ARGV[4])
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

# KEYS: lock, fence, checkpoint, registry ('' = none), latest pointer, passages, write
# keys…; ARGV: token, ttl ms, expiry seconds ('' = none), write JSONs…, passage digest/text
# pairs… Writes that arrive after their checkpoint's child was saved are not stored (nor
# their passages): the child holds them already, and only the latest checkpoint's writes
# serve a resume.
_PUT_WRITES = (
    FENCE_PRELUDE
    + _STORE_PASSAGES
    + """
if redis.call('EXISTS', KEYS[3]) == 1 and redis.call('GET', KEYS[5]) ~= KEYS[3] then
  return 0
end
store_passages(KEYS[6], #KEYS - 2, ARGV[3])
for i = 7, #KEYS do
  redis.call('JSON.SET', KEYS[i], '$', ARGV[i - 3])
  if ARGV[3] ~= '' then redis.call('EXPIRE', KEYS[i], ARGV[3]) end
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('JSON.SET', KEYS[3], '$.has_writes', 'true')
end
if KEYS[4] ~= '' then
  for i = 7, #KEYS do redis.call('ZADD', KEYS[4], i - 7, KEYS[i]) end
  if ARGV[3] ~= '' then redis.call('EXPIRE', KEYS[4], ARGV[3]) end
end
return 1
"""
)


class FencedRedisSaver(CompactRedisSaver):
    """``AsyncRedisSaver`` whose writes are atomic with the run's lock check.

    The documents written are the ones ``AsyncRedisSaver`` writes (same keys, same fields,
    read back by its own ``aget_tuple`` and searches); only the round trips differ: one
    script per checkpoint and one per task's writes. Without a fence (no run task) the
    saver writes as its base class does.
    """

    async def asetup(self) -> None:
        """Set up as ``AsyncRedisSaver`` does, when other instances do the same at once.

        Its index creation checks for the index and then creates it: two instances started
        together both see none, and the second's ``FT.CREATE`` fails with "Index already
        exists". The index is there then (what setup wanted), so setup runs again and finds it.
        """
        for attempt in range(5):
            try:
                await super().asetup()
                return
            except (RedisError, RedisVLError) as exc:
                if "already exists" not in str(exc).lower() or attempt == 4:
                    raise
                log.info("checkpoint indexes created by another instance meanwhile: %s", exc)

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
            fence,
            _PUT_CHECKPOINT,
            [key, latest, spent, passages_key(thread_id)],
            [json.dumps(data), self._expiry(), *_pairs(stowed)],
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
            [checkpoint_key, registry, latest, passages_key(thread_id), *keys],
            [self._expiry(), *documents, *_pairs(stowed)],
        )

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


def _pairs(passages: dict[str, str]) -> list[str | bytes]:
    """The passages as a script's ARGV: each digest followed by its compressed text."""
    return [x for pair in packed_passages(passages).items() for x in pair]


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
