"""``seekgraph research --detach``: a research run queued for the server's workers.

It talks to the deployment's Redis (``SEEKGRAPH_REDIS_URL``, the same as the server's): the
run is queued like a background run of the API and followed with ``seekgraph runs list``
(``server/cli/run_records.py``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from seekgraph.graph.context import Context, context_to_dict
from seekgraph.server.cli.run_records import redis_of
from seekgraph.server.runs.coordination import RedisCoordinator
from seekgraph.server.runs.manager import RunManager
from seekgraph.server.runs.queue import Job, RedisRunQueue
from seekgraph.server.runs.records import RedisRunRecords, RunRecord
from seekgraph.server.runs.retention import seconds_of
from seekgraph.server.service.run_service import queued_token
from seekgraph.server.settings import Settings
from seekgraph.server.thread_ids import new_thread_id


async def detach(
    settings: Settings, user: str, graph_input: dict[str, Any], context: Context, as_json: bool
) -> int:
    """Queue a research run on a new thread of ``user``; print its thread and run ids."""
    client = await redis_of(settings, "--detach")
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
