"""``seekgraph research --detach`` and ``seekgraph runs list|cancel``: the server's run queue.

These talk to the deployment's Redis (``SEEKGRAPH_REDIS_URL``, the same as the server's):
a detached research run is queued for its workers like a background run of the API, and
runs are listed or stopped by their records, wherever they execute.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import redis.asyncio as aioredis

from seekgraph.graph.context import Context, context_to_dict
from seekgraph.server.cli.common import CliError
from seekgraph.server.runs.coordination import RedisCoordinator
from seekgraph.server.runs.manager import RunManager
from seekgraph.server.runs.queue import Job, RedisRunQueue
from seekgraph.server.runs.records import (
    CancelAction,
    RedisRunRecords,
    RunEndedError,
    RunRecord,
    ask_to_cancel,
)
from seekgraph.server.runs.retention import seconds_of
from seekgraph.server.service.run_service import queued_token
from seekgraph.server.settings import Settings
from seekgraph.server.thread_ids import new_thread_id


def redis_of(settings: Settings, what: str) -> aioredis.Redis:
    """The deployment's Redis; a clear error without one."""
    if not settings.redis_url:
        raise CliError(
            f"{what} uses the server's run queue: set SEEKGRAPH_REDIS_URL to the server's Redis"
        )
    return aioredis.Redis.from_url(settings.redis_url)


async def detach(
    settings: Settings, user: str, graph_input: dict[str, Any], context: Context, as_json: bool
) -> int:
    """Queue a research run on a new thread of ``user``; print its thread and run ids."""
    client = redis_of(settings, "--detach")
    try:
        keep_s = seconds_of(settings.retention_minutes)
        coordinator = RedisCoordinator(client, thread_ttl_s=keep_s)
        thread = new_thread_id()
        await coordinator.create_thread(thread, user)
        await coordinator.set_title(thread, graph_input["question"][:120])
        record = RunRecord(
            RunManager.new_run_id(), thread, user, "research", background=True, queued=True
        )
        token = queued_token(record.run_id)
        await coordinator.acquire(thread, token, settings.queued_lock_ttl_ms)
        await RedisRunRecords(client, ttl_s=keep_s).put(record)
        job = Job(record.run_id, thread, user, "research", "start", graph_input,
                  context_to_dict(context), user, False, token)  # fmt: skip
        await RedisRunQueue(client, settings.queue).put(job)
    finally:
        await client.aclose()
    if as_json:
        print(json.dumps({"thread_id": thread, "run_id": record.run_id, "status": "pending"}))
    else:
        print(f"queued run {record.run_id} on thread {thread}", file=sys.stderr)
        print(f"follow it: seekgraph runs list {thread}", file=sys.stderr)
    return 0


async def runs_list(args: argparse.Namespace, settings: Settings) -> int:
    """``seekgraph runs list THREAD``: the thread's runs, newest first."""
    client = redis_of(settings, "seekgraph runs list")
    try:
        runs = await RedisRunRecords(client).list(args.thread_id)
    finally:
        await client.aclose()
    if args.json:
        print(json.dumps([r.public() for r in runs], indent=1))
    for r in [] if args.json else runs:
        where = r.executor or "waiting for a worker"
        why = f" — {r.error}" if r.error else ""
        print(f"{r.run_id} {r.flow} {r.status}{' (background)' * r.background} {where}{why}")
    if not runs:
        raise CliError(f"no runs recorded on thread {args.thread_id!r}")
    return 0


async def runs_cancel(args: argparse.Namespace, settings: Settings) -> int:
    """``seekgraph runs cancel THREAD RUN``: stop it at its next step, wherever it runs."""
    client = redis_of(settings, "seekgraph runs cancel")
    action: CancelAction = "rollback" if args.rollback else "interrupt"
    try:
        record = await ask_to_cancel(RedisRunRecords(client), args.thread_id, args.run_id, action)
    except RunEndedError as exc:
        raise CliError(str(exc)) from None
    finally:
        await client.aclose()
    if record is None:
        raise CliError(f"thread {args.thread_id!r} has no run {args.run_id!r}")
    print(f"run {args.run_id}: cancel ({action}) asked", file=sys.stderr)
    return 0
