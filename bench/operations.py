"""What operating it costs and whether its limits hold, measured in one run.

1. **overhead**: the served flow driven by the run manager (as the server drives it) with
   zero-latency fakes, without and with observation — metrics, an OpenTelemetry trace per
   run (batch export to memory) and the audit entry written to Redis — interleaved in
   blocks of 5; medians per run, and the difference as a share of the flow's own time.
   These runs call no model, so (as on a server without one) no LangChain callback is
   installed; with a model, model-call spans add LangChain's callback dispatch to each step;
2. **audit writes**: the median cost of one audit entry, Redis stream and SQLite;
3. **limits**: ``--keys`` API keys against one ``seekgraph serve`` with a limit of
   ``--per-minute`` requests a minute each; all but one send ``--per-minute + 2`` runs
   (OpenAI door, a new thread each) within 60 seconds, the last sends half its limit:
   each busy key gets exactly its limit, the quiet one everything.

    python -m bench.operations --json bench/results/operations.json
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import redis
import redis.asyncio as aioredis
from langgraph.checkpoint.redis.aio import AsyncRedisSaver
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bench.graph_overhead import QUESTION, fake_services
from bench.report import command_line, write
from seekgraph.graph.context import Context, FilteringKnobs, SearchKnobs
from seekgraph.graph.search import search_flow
from seekgraph.server.audit import AuditEntry, RedisAuditLog, SqliteAuditLog
from seekgraph.server.auth import add_key_to_file
from seekgraph.server.observe import Metrics, RunObserver
from seekgraph.server.runs.coordination import RedisCoordinator
from seekgraph.server.runs.handle import RunHandle
from seekgraph.server.runs.manager import RunManager
from tests.support.processes import start_app, start_redis


async def drive(runs: RunManager, flow: Any, n: int, ctx: Context) -> list[float]:
    """``n`` runs through the run manager, one after another; wall ms each."""
    out = []
    for _ in range(n):
        thread, run_id = uuid.uuid4().hex, runs.new_run_id()
        start = time.perf_counter()
        assert await runs.try_lock(thread, run_id)
        handle = runs.start(
            thread, "u", {"question": QUESTION}, ctx, run_id, graph=flow, flow="search"
        )
        assert handle.task is not None
        await handle.task
        out.append((time.perf_counter() - start) * 1000)
        assert handle.status == "done", handle.fold["errors"]
    return out


async def overhead(redis_url: str, n: int) -> dict[str, Any]:
    client = aioredis.from_url(redis_url)
    sync = redis.Redis.from_url(redis_url)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    metrics = Metrics()

    services = fake_services(4)

    def observe(handle: RunHandle, flow: str) -> RunObserver:  # as the server builds it
        return RunObserver(
            metrics, tracer, run_id=handle.run_id, thread_id=handle.thread_id, flow=flow,
            user=handle.owner, prices={"m": 1.0}, models=services.chat_model is not None,
        )  # fmt: skip

    async with AsyncRedisSaver.from_conn_string(redis_url) as saver:
        flow = search_flow(services, saver)
        coordinator = RedisCoordinator(client, sync_client=sync)
        plain = RunManager(coordinator, "bench", 30_000)
        watched = RunManager(
            coordinator,
            "bench",
            30_000,
            audit=RedisAuditLog(client, 1, key="seekgraph:bench-audit"),
            observe=observe,
        )
        ctx = Context(
            user="u",
            search=SearchKnobs(max_variants=1),
            max_rounds=1,
            filtering=FilteringKnobs(fastpass_enabled=False),
        )
        await drive(plain, flow, 3, ctx)
        await drive(watched, flow, 3, ctx)
        off: list[float] = []
        on: list[float] = []
        for _ in range(max(1, n // 5)):  # small blocks: machine noise hits both alike
            off += await drive(plain, flow, 5, ctx)
            on += await drive(watched, flow, 5, ctx)
    provider.shutdown()
    spans = len(exporter.get_finished_spans())
    await client.delete("seekgraph:bench-audit")
    await client.aclose()
    sync.close()
    m_off, m_on = statistics.median(off), statistics.median(on)
    return {
        "runs_each": len(off),
        "median_ms_off": round(m_off, 2),
        "median_ms_on": round(m_on, 2),
        "added_ms": round(m_on - m_off, 2),
        "added_share_of_flow": round((m_on - m_off) / m_off, 4),
        "spans_exported": spans,
        "spans_per_run": round(spans / (len(on) + 3), 1),
    }


async def audit_writes(redis_url: str, n: int) -> dict[str, Any]:
    client = aioredis.from_url(redis_url)
    entry = AuditEntry(
        ts=time.time(), user="u", key_id="0123456789ab", door="native", action="run",
        flow="search", run_id="r", thread_id="t", status="done",
        shown=["kb/vpn-access", "chat/it-help/m003"], listed=["kb/travel-expenses"],
    )  # fmt: skip
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, log in (
            ("redis", RedisAuditLog(client, 1, key="seekgraph:bench-audit")),
            ("sqlite", SqliteAuditLog(Path(tmp) / "audit.sqlite", 1)),
        ):
            ms = []
            for _ in range(n):
                start = time.perf_counter()
                await log.append(entry)
                ms.append((time.perf_counter() - start) * 1000)
            out[f"{name}_median_ms"] = round(statistics.median(ms), 3)
    await client.delete("seekgraph:bench-audit")
    await client.aclose()
    return out


def limits(redis_url: str, tmp: Path, keys: int, per_minute: int) -> dict[str, Any]:
    keyfile = tmp / "keys.json"
    issued = [add_key_to_file(keyfile, ("alice", "bob")[i % 2]) for i in range(keys)]
    env = {
        "SEEKGRAPH_REDIS_URL": redis_url,
        "SEEKGRAPH_API_KEYS_FILE": keyfile,
        "SEEKGRAPH_RATE_LIMIT_PER_MINUTE": per_minute,
        "SEEKGRAPH_INTERNAL_TOKEN": "bench",
    }
    app = start_app(tmp, "limits", env)
    try:
        body = {"model": "seekgraph-search", "messages": [{"role": "user", "content": "VPN?"}]}

        def send(i: int) -> list[int]:
            sent = per_minute + 2 if i < keys - 1 else per_minute // 2
            with httpx.Client(timeout=120) as c:
                return [
                    c.post(
                        f"{app.url}/v1/chat/completions",
                        json=body,
                        headers={"Authorization": f"Bearer {issued[i]}"},
                    ).status_code
                    for _ in range(sent)
                ]

        started = time.monotonic()
        with ThreadPoolExecutor(keys) as pool:
            statuses = list(pool.map(send, range(keys)))
        seconds = time.monotonic() - started
    finally:
        app.stop()
    accepted = [s.count(200) for s in statuses]
    return {
        "keys": keys,
        "limit_per_minute": per_minute,
        "runs_requested": sum(len(s) for s in statuses),
        "accepted_per_key": accepted,
        "refused_429_per_key": [s.count(429) for s in statuses],
        "other_statuses": sorted({c for s in statuses for c in s} - {200, 429}),
        "busy_keys_held_exactly": all(a == per_minute for a in accepted[:-1]),
        "quiet_key_unaffected": accepted[-1] == per_minute // 2,
        "seconds": round(seconds, 1),
        # the rate is a moving window: exact when every request falls within 60 seconds
        "within_sixty_seconds": seconds < 60,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=Path("bench/results/operations.json"))
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--keys", type=int, default=10)
    parser.add_argument("--per-minute", type=int, default=20)
    args = parser.parse_args()
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        proc, url = start_redis(tmp)
        try:
            out = {
                "command": command_line("bench.operations", args),
                "overhead": asyncio.run(overhead(url, args.runs)),
                "audit_writes": asyncio.run(audit_writes(url, 200)),
                "limits": limits(url, tmp, args.keys, args.per_minute),
            }
        finally:
            proc.stop()
    write(args.json, out, started)


if __name__ == "__main__":
    main()
