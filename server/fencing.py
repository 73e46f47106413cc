"""Fenced checkpoint writes: a run that lost its thread lock may not write any more.

The run task sets ``FENCE`` to its lock token; every checkpoint write first checks that the
token still holds the lock, so a paused holder whose lock expired (and was taken over by
another instance) raises ``LostLockError`` instead of forking the thread's history.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.redis.aio import AsyncRedisSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from server.coordination import Coordinator


class LostLockError(RuntimeError):
    """The run's lock was taken by someone else; its results must not be written."""


@dataclass(frozen=True)
class Fence:
    """The lock a run must still hold to write."""

    coordinator: Coordinator
    thread_id: str
    token: str

    async def check(self) -> None:
        """Raise ``LostLockError`` unless ``token`` still holds the thread's lock."""
        if await self.coordinator.holder(self.thread_id) != self.token:
            raise LostLockError(
                f"run lock of thread {self.thread_id} is no longer held by this run; "
                "not writing its results"
            )


FENCE: ContextVar[Fence | None] = ContextVar("seekgraph_fence", default=None)


async def check_fence() -> None:
    """Check the current run's fence, if any."""
    fence = FENCE.get()
    if fence is not None:
        await fence.check()


class FencedRedisSaver(AsyncRedisSaver):
    """``AsyncRedisSaver`` whose writes are fenced."""

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        stream_mode: str = "values",
    ) -> RunnableConfig:
        """Check the fence, then save the checkpoint."""
        await check_fence()
        return await super().aput(config, checkpoint, metadata, new_versions, stream_mode)

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


class FencedSqliteSaver(AsyncSqliteSaver):
    """``AsyncSqliteSaver`` whose writes are fenced."""

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
