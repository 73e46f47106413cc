"""``seekgraph runs list|cancel``: a thread's runs, by their records in the server's Redis.

Runs are listed or stopped wherever they execute. An operator's polling command: it loads
the run records and nothing of the graph (0.9 CPU-s a command, against 3.3 with the graph).
"""

from __future__ import annotations

import argparse
import json
import sys

import redis.asyncio as aioredis
import redis.exceptions

from seekgraph.server.cli.common import CliError
from seekgraph.server.runs.records import (
    CancelAction,
    RedisRunRecords,
    RunEndedError,
    ask_to_cancel,
)
from seekgraph.server.settings import Settings


async def redis_of(settings: Settings, what: str) -> aioredis.Redis:
    """The deployment's Redis, answering.

    A clear error without one, or when it does not answer: its host and port are named, never
    the password a URL may hold.
    """
    if not settings.redis_url:
        raise CliError(
            f"{what} uses the server's run queue: set SEEKGRAPH_REDIS_URL to the server's Redis"
        )
    client = aioredis.Redis.from_url(settings.redis_url, socket_connect_timeout=5)
    where = client.connection_pool.connection_kwargs
    port = where.get("port")
    place = where.get("path") or (
        f"{where.get('host')}:{port}" if isinstance(port, int) else "the address"
    )
    try:
        await client.ping()
    except redis.exceptions.RedisError as exc:
        await client.aclose()
        # (an AuthenticationError is a ConnectionError too: asked first)
        if isinstance(exc, redis.exceptions.AuthenticationError):
            why = f"the server's Redis at {place} refused the credentials in SEEKGRAPH_REDIS_URL"
        elif isinstance(exc, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)):
            why = (
                f"the server's Redis at {place} (SEEKGRAPH_REDIS_URL) does not answer"
                f" ({type(exc).__name__}): start it, or set SEEKGRAPH_REDIS_URL to the Redis the"
                " server uses"
            )
        else:  # not a Redis, or a user who may not PING
            why = (
                f"the server at {place} (SEEKGRAPH_REDIS_URL) did not answer as a Redis"
                f" ({type(exc).__name__}): check the URL"
            )
        raise CliError(f"{what}: {why}") from None
    return client


async def runs_list(args: argparse.Namespace, settings: Settings) -> int:
    """``seekgraph runs list THREAD``: the thread's runs, newest first."""
    client = await redis_of(settings, "seekgraph runs list")
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
    client = await redis_of(settings, "seekgraph runs cancel")
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
