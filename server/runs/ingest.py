"""The ingest queue's worker: embedding batches and ``finish`` tasks, beside the run worker.

Every worker process (``seekgraph worker``, and ``seekgraph serve`` unless ``--no-worker``)
takes ingest tasks from their own stream (``SEEKGRAPH_INGEST_QUEUE``, same consumer group
and claim rules as the run queue): one at a time, since embedding takes a core, in a thread
so the process's runs keep streaming. A task whose worker died is taken by another after
``claim_idle_ms``; doing a batch twice costs nothing (vectors are cached by content hash).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import redis
import redis.asyncio as aioredis

from seekgraph.graph.ingest import Embedder, IngestError, IngestJobs, IngestTask, RedisIndex
from seekgraph.server.runs.queue import Claimed, RedisStreamQueue

log = logging.getLogger("seekgraph.ingest")


def ingest_queue(client: aioredis.Redis, key: str) -> RedisStreamQueue[IngestTask]:
    """The ingest tasks' stream."""
    return RedisStreamQueue(client, key, IngestTask.loads)


def ingest_jobs(sync_client: redis.Redis, key: str) -> IngestJobs:
    """Job records whose tasks go to the stream ``key`` (for planners that are not async)."""

    def enqueue(task: IngestTask) -> None:
        sync_client.xadd(key, {"job": task.dumps()})

    return IngestJobs(sync_client, enqueue)


class IngestWorker:
    """Takes ingest tasks one at a time and does them."""

    def __init__(
        self,
        *,
        queue: RedisStreamQueue[IngestTask],
        jobs: IngestJobs,
        redis_url: str,
        embedder: Embedder,
        name: str,
        claim_idle_ms: int = 15_000,
    ) -> None:
        self.queue = queue
        self.jobs = jobs
        self.redis_url = redis_url
        self.embedder = embedder
        self.name = name
        self.claim_idle_ms = claim_idle_ms
        self.done = 0
        self._indexes: dict[str, RedisIndex] = {}
        self._stopping = asyncio.Event()
        self._current: Claimed[IngestTask] | None = None

    def _index(self, prefix: str) -> RedisIndex:
        if prefix not in self._indexes:
            self._indexes[prefix] = RedisIndex(self.redis_url, self.embedder, prefix=prefix)
        return self._indexes[prefix]

    async def run(self) -> None:
        """Claim and do tasks until ``drain`` (or cancellation)."""
        await self.queue.setup()
        toucher = asyncio.create_task(self._touch())
        try:
            while not self._stopping.is_set():
                try:
                    found = await self.queue.reclaim(self.name, self.claim_idle_ms, 1)
                    if not found:
                        found = await self.queue.claim(self.name, 1, block_ms=1000)
                except Exception as exc:  # noqa: BLE001 - the store may come back
                    log.warning("%s: cannot read the ingest queue (%s); retrying", self.name, exc)
                    await asyncio.sleep(1.0)
                    continue
                for claimed in found:
                    self._current = claimed
                    try:
                        await asyncio.to_thread(self._do, claimed.job)
                        await self.queue.ack(claimed.entry)
                    except Exception as exc:  # noqa: BLE001 - left pending: taken again later
                        log.warning("%s: ingest task of job %s stopped (%s); it will be "
                                    "taken again", self.name, claimed.job.job_id, exc)  # fmt: skip
                        await asyncio.sleep(1.0)
                    finally:
                        self._current = None
        finally:
            toucher.cancel()
            for index in self._indexes.values():
                with contextlib.suppress(Exception):
                    index.close()

    def _do(self, task: IngestTask) -> None:
        if task.model and task.model != self.embedder.name:
            self.jobs.fail(
                task.job_id,
                f"worker {self.name} embeds with {self.embedder.name!r}, the job's index uses "
                f"{task.model!r}: run the workers with SEEKGRAPH_EMBEDDING_MODEL={task.model}",
            )
            return
        try:
            index = self._index(task.prefix)
            if task.step == "finish":
                done: dict[str, Any] = self.jobs.finish(index, task)
                log.info("%s: ingest job %s written (%s documents re-indexed)", self.name,
                         task.job_id, done.get("indexed"))  # fmt: skip
            else:
                self.jobs.embed(index, task, self.name)
            self.done += 1
        except (IngestError, redis.ResponseError) as exc:
            log.warning("%s: ingest job %s failed: %s", self.name, task.job_id, exc)
            self.jobs.fail(task.job_id, str(exc))

    async def _touch(self) -> None:
        while True:
            await asyncio.sleep(max(self.claim_idle_ms / 3000, 0.2))
            current = self._current
            if current is not None:
                with contextlib.suppress(Exception):
                    await self.queue.touch(self.name, [current.entry])

    async def drain(self, grace_s: float) -> None:
        """Stop claiming; the task in hand gets ``grace_s``, then goes back to the queue."""
        self._stopping.set()
        deadline = asyncio.get_running_loop().time() + grace_s
        while self._current is not None and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        current = self._current
        if current is not None:  # its thread finishes in the background; another redoes it
            with contextlib.suppress(Exception):
                await self.queue.release(self.name, [current.entry])
