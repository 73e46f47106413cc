"""The composition root: the process's parts (``AppState``), built once, opened and closed.

Routes take the parts they use from it through ``server.http.deps``, never the whole of it;
threads and runs are its ``service`` (``server.service.RunService``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import redis
import redis.asyncio as aioredis
from langgraph.graph.state import CompiledStateGraph
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from seekgraph.graph.flows import DEFAULT_FLOW
from seekgraph.graph.ingest import WorkerEmbedding
from seekgraph.server.audit import AuditLog, RedisAuditLog, SqliteAuditLog
from seekgraph.server.auth import ApiKeyStore
from seekgraph.server.bootstrap import build_services, close_services, flow_graphs
from seekgraph.server.images import PixelBudget
from seekgraph.server.limits import Limits, LocalLimits, RedisLimits
from seekgraph.server.observe import Metrics, RunObserver, Telemetry, prices_of
from seekgraph.server.runs.coordination import Coordinator, RedisCoordinator
from seekgraph.server.runs.events import RedisEventLog
from seekgraph.server.runs.fencing import FencedRedisSaver, FencedSqliteSaver
from seekgraph.server.runs.handle import RunHandle
from seekgraph.server.runs.ingest import IngestWorker, ingest_jobs, ingest_queue
from seekgraph.server.runs.local_coordination import LocalCoordinator
from seekgraph.server.runs.manager import RunManager
from seekgraph.server.runs.queue import LocalRunQueue, RedisRunQueue, RunQueue
from seekgraph.server.runs.records import LocalRunRecords, RedisRunRecords, RunRecords
from seekgraph.server.runs.retention import (
    EVENTS_MAX_S,
    LocalRetention,
    RedisRetention,
    Retention,
    seconds_of,
)
from seekgraph.server.runs.webhooks import Webhooks
from seekgraph.server.runs.worker import Worker, worker_name
from seekgraph.server.service.run_service import RunService
from seekgraph.server.settings import Settings

if TYPE_CHECKING:
    from seekgraph.nodes.plumbing.services import Services

log = logging.getLogger("seekgraph.server")

#: The store's sizes walk every key: measured at most this often, whatever the scrapes.
STORE_EVERY_S = 30.0


@dataclass
class AppState:
    """Everything the routes share, built once at start-up."""

    settings: Settings
    services: Services
    graph: CompiledStateGraph[Any, Any, Any, Any]
    coordinator: Coordinator
    runs: RunManager
    keys: ApiKeyStore
    http: httpx.AsyncClient
    instance: str
    images_dir: Path
    backend: str
    limits: Limits
    audit: AuditLog
    metrics: Metrics
    saver: Any = None
    graphs: dict[str, CompiledStateGraph[Any, Any, Any, Any]] = field(default_factory=dict)
    """Every flow served, by name (``graph`` is the default one, ``search``)."""
    background: list[asyncio.Task[None]] = field(default_factory=list)
    """Tasks that live as long as the server (the connectors' sync loop, the worker)."""
    records: RunRecords = field(default_factory=LocalRunRecords)
    """Every run's record and cancel flag."""
    queue: RunQueue = field(default_factory=LocalRunQueue)
    """Runs waiting for a worker."""
    events: RedisEventLog | None = None
    """Where queued runs publish their events (Redis only)."""
    worker: Worker | None = None
    """This process's worker (None: an API-only instance)."""
    ingester: IngestWorker | None = None
    """This process's ingest worker (with a worker, when the index is on Redis)."""
    decoding: PixelBudget = field(default_factory=PixelBudget)
    """Pixels of images being decoded, per key (bounded by max_decoding_pixels_per_key)."""
    unsynced: set[str] = field(default_factory=set)
    """Live connectors whose first sync since start has not ended (``/readyz`` waits)."""
    retention: Retention | None = None
    """How long threads are kept; deletes them."""
    redis: aioredis.Redis | None = None
    """The shared Redis client (None on SQLite)."""
    service: RunService = field(init=False)
    """Threads and runs for every door, over the parts above."""

    def __post_init__(self) -> None:
        self.service = RunService(
            settings=self.settings,
            services=self.services,
            graphs=self.graphs,
            saver=self.saver,
            coordinator=self.coordinator,
            runs=self.runs,
            records=self.records,
            queue=self.queue,
            limits=self.limits,
            metrics=self.metrics,
            keys=self.keys,
            audit=self.audit,
            http=self.http,
            instance=self.instance,
            images_dir=self.images_dir,
            has_worker=self.worker is not None,
            events=self.events,
            retention=self.retention,
            decoding=self.decoding,
        )


def redis_clients(url: str) -> tuple[aioredis.Redis, redis.Redis]:
    """The async and the blocking client every Redis user of a process shares.

    A blocking pool: a burst of requests waits for a free connection instead of failing (the
    default pool raises MaxConnectionsError past its limit). A connection broken by a Redis
    restart is retried on a fresh one (every write is idempotent: a checkpoint or a write
    stored twice is stored once).
    """
    retries: dict[str, Any] = {
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
        "socket_timeout": 5,
    }
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=64,
        timeout=10,
        retry=AsyncRetry(ExponentialBackoff(cap=1.0, base=0.05), 3),
        **retries,
    )
    sync = redis.Redis.from_url(url, retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), 3),
                                **retries)  # fmt: skip
    return aioredis.Redis(connection_pool=pool), sync


async def open_app_state(
    settings: Settings,
    stack: AsyncExitStack,
    role: str = "serve",
    telemetry: Telemetry | None = None,
) -> AppState:
    """Build the services and open the stores; ``stack`` closes what must be closed.

    ``role``: ``serve`` (the HTTP doors, with an in-process worker unless
    ``settings.worker`` is off) or ``worker`` (a worker process; its caller runs the worker).
    ``telemetry``: the app's metrics and traces (from the ``OTEL_*`` variables when None).
    """
    services, _ = await asyncio.to_thread(build_services, settings)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    instance = worker_name() if role == "worker" else settings.instance_url or "local"
    redis_client = None
    if settings.redis_url:
        redis_client, sync_client = redis_clients(settings.redis_url)
        keep_s = seconds_of(settings.retention_minutes)
        # the checkpointer's own TTL (refreshed on read) is the floor: a key that nobody
        # renews goes on its own; ``retention.touch`` renews a whole thread at once
        ttl = {"default_ttl": keep_s / 60, "refresh_on_read": True} if keep_s is not None else None
        saver: Any = FencedRedisSaver(redis_client=redis_client, ttl=ttl)
        await saver.asetup()
        redis_coordinator = RedisCoordinator(
            redis_client, sync_client=sync_client, thread_ttl_s=keep_s
        )
        coordinator: Coordinator = redis_coordinator
        limits: Limits = RedisLimits(redis_client, redis_coordinator.lock_prefix)
        audit: AuditLog = RedisAuditLog(redis_client, settings.audit_retention_days)
        records: RunRecords = RedisRunRecords(redis_client, ttl_s=keep_s)
        queue: RunQueue = RedisRunQueue(redis_client, settings.queue)
        events_ttl = min(keep_s, EVENTS_MAX_S) if keep_s is not None else EVENTS_MAX_S
        events: RedisEventLog | None = RedisEventLog(redis_client, ttl_s=events_ttl)
        retention: Retention = RedisRetention(redis_client, saver, keep_s, settings.queue)
        backend = "redis"
    else:
        if not settings.worker:
            raise ValueError(
                "SEEKGRAPH_WORKER=false needs SEEKGRAPH_REDIS_URL: without Redis no other "
                "process can take this instance's runs"
            )
        saver = await stack.enter_async_context(
            FencedSqliteSaver.from_conn_string(str(settings.data_dir / "server.sqlite"))
        )
        coordinator = LocalCoordinator(settings.data_dir / "threads.json")
        limits = LocalLimits()
        audit = SqliteAuditLog(settings.data_dir / "audit.sqlite", settings.audit_retention_days)
        records, queue, events = LocalRunRecords(), LocalRunQueue(), None
        retention = LocalRetention(saver, coordinator)
        backend = "sqlite"
        log.warning("no SEEKGRAPH_REDIS_URL: running as a single instance on SQLite checkpoints")
    graphs = flow_graphs(services, saver)
    http = await stack.enter_async_context(httpx.AsyncClient(timeout=None))
    telemetry = telemetry or Telemetry.from_env()
    metrics, tracer = telemetry.metrics, telemetry.tracer
    prices = prices_of(settings.model_prices)

    def observe(handle: RunHandle, flow: str) -> RunObserver:
        return RunObserver(
            metrics,
            tracer,
            run_id=handle.run_id,
            thread_id=handle.thread_id,
            flow=flow,
            user=handle.owner,
            prices=prices,
            content=settings.trace_content,
            models=services.chat_model is not None,
        )

    runs = RunManager(
        coordinator,
        instance,
        settings.lock_ttl_ms,
        limits=limits,
        audit=audit,
        observe=observe,
        records=records,
        events=events,
        webhooks=Webhooks(
            settings.webhook_secret.get_secret_value() if settings.webhook_secret else None,
            settings.webhook_hosts,
        ),
        model_name=services.model_name,
        retention=retention,
    )
    background = []
    worker = None
    if settings.worker or role == "worker":
        worker = Worker(
            queue=queue,
            runs=runs,
            graphs=graphs,
            records=records,
            events=events,
            name=instance if role == "worker" else f"{instance}#{worker_name()}",
            concurrency=settings.worker_concurrency,
            claim_idle_ms=int(settings.claim_idle_seconds * 1000),
            max_live_runs=settings.max_live_runs_per_key,
            waiting_ttl_ms=settings.queued_lock_ttl_ms,
        )
        if role == "serve":
            background.append(asyncio.create_task(worker.run()))
    ingester = None
    if redis_client is not None and settings.index_backend == "redis":
        jobs = ingest_jobs(sync_client, settings.ingest_queue)
        for _, index in services.registry.connectors:  # scheduled syncs embed on the workers
            index.workers = WorkerEmbedding(jobs)
        if worker is not None:
            ingester = IngestWorker(
                queue=ingest_queue(redis_client, settings.ingest_queue),
                jobs=jobs,
                redis_url=str(settings.redis_url),
                embedder=services.embedder,
                name=worker.name,
                claim_idle_ms=int(settings.claim_idle_seconds * 1000),
            )
            if role == "serve":
                background.append(asyncio.create_task(ingester.run()))
    unsynced = {connector.name for connector, _ in services.registry.connectors}
    if services.registry.connectors:
        minutes = settings.connector_sync_minutes
        loop = sync_loop(services.registry.connectors, minutes, unsynced)
        background.append(asyncio.create_task(loop))
    return AppState(
        unsynced=unsynced,
        background=background,
        settings=settings,
        services=services,
        graph=graphs[DEFAULT_FLOW],
        graphs=graphs,
        coordinator=coordinator,
        runs=runs,
        keys=ApiKeyStore(settings.api_keys_file, redis_client),
        http=http,
        instance=instance,
        images_dir=settings.data_dir / "images",
        backend=backend,
        limits=limits,
        audit=audit,
        metrics=metrics,
        saver=saver,
        records=records,
        queue=queue,
        events=events,
        worker=worker,
        ingester=ingester,
        retention=retention,
        redis=redis_client,
    )


async def sync_loop(
    connectors: list[tuple[Any, Any]], minutes: float, unsynced: set[str] | None = None
) -> None:
    """Sync each live connector now, then every ``minutes`` (a failure keeps the last state).

    The rounds start ``minutes`` apart (not ``minutes`` after the last one ended), so a change
    in a source takes effect within one interval plus one sync. A connector's name leaves
    ``unsynced`` when its first sync ends, however it ended (``/readyz`` waits for them all).
    """
    from seekgraph.graph.api import sync_connector

    while True:
        started = time.monotonic()
        for connector, index in connectors:
            done = await asyncio.to_thread(sync_connector, index, connector)
            if done.busy:
                log.info("connector %s: another instance is syncing it", done.source)
            elif done.error:
                log.warning("connector %s: %s; the last good sync stays", done.source, done.error)
            else:
                log.info("connector %s: %d indexed, %d removed", done.source, done.indexed,
                         done.removed)  # fmt: skip
            if unsynced is not None:
                unsynced.discard(connector.name)
        await asyncio.sleep(max(0.0, minutes * 60 - (time.monotonic() - started)))


async def measure(state: AppState) -> None:
    """Set the gauges read at scrape time: index sizes, syncs, the queue, the store's sizes.

    The store's sizes walk every key: measured at most every ``STORE_EVERY_S``.
    """
    from seekgraph.graph.api import connector_state

    metrics, registry = state.metrics, state.services.registry
    await registry.refresh_sources()
    for source in registry.select():
        index, name = getattr(source, "index", None), getattr(source, "name", "")
        if index is not None and hasattr(index, "count"):
            documents, chunks = await asyncio.to_thread(index.count, name)
            metrics.index_documents.labels(name).set(documents)
            metrics.index_chunks.labels(name).set(chunks)
            synced = await asyncio.to_thread(index.get_meta, f"synced:{name}")
            if synced:
                kept = json.loads(synced)
                metrics.synced_at.labels(name).set(kept["at"])
                metrics.sync_problems.labels(name).set(kept["problems"])
    for connector, index in registry.connectors:
        kept = await asyncio.to_thread(connector_state, index, connector.name)
        if kept.get("at"):
            metrics.synced_at.labels(connector.name).set(kept["at"])
        metrics.sync_problems.labels(connector.name).set(len(kept.get("problems") or []))
        metrics.connector_failing.labels(connector.name).set(1 if kept.get("error") else 0)
    for status, count in (await state.queue.depth()).items():
        metrics.queue_runs.labels(status).set(count)
    stale = time.monotonic() - metrics.store_measured_at > STORE_EVERY_S
    if state.redis is not None and state.retention is not None and stale:
        from seekgraph.server.runs.retention import threads_past_half
        from seekgraph.server.runs.storage import FAMILIES, family_sizes

        sizes = await family_sizes(state.redis)
        for family in [name for name, _ in FAMILIES] + ["other"]:
            metrics.store_bytes.labels(family).set(sizes.bytes[family])
            metrics.store_keys.labels(family).set(sizes.keys[family])
        past, unmanaged = await threads_past_half(state.redis, state.retention.ttl_s)
        metrics.threads_past_half.set(past)
        metrics.threads_unmanaged.set(unmanaged)
        metrics.store_measured_at = time.monotonic()


async def close_app_state(state: AppState) -> None:
    """Stop the live runs (their checkpoints stay) and close what the state opened."""
    if state.worker is not None:  # its runs end, or go back to the queue for another worker
        await state.worker.drain(state.settings.shutdown_grace_seconds)
    if state.ingester is not None:
        await state.ingester.drain(state.settings.shutdown_grace_seconds)
    for task in state.background:
        task.cancel()
    await state.runs.shutdown()
    await state.coordinator.close()
    await close_services(state.services)
