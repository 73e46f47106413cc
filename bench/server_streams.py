"""One server instance under held SSE streams, and resume latency (same instance, forwarded).

Starts a Redis server (PyPI packages), the test model server (silent for a long time before
answering, so streams stay idle), and two seekgraph instances. Then:

1. opens ``--streams`` concurrent ``GET /threads/{id}/stream`` connections to instance A on
   one live run, holds them for ``--hold`` seconds and counts heartbeats; A's RSS before and
   after gives the memory per idle stream;
2. measures time to the first event of a resume with ``Last-Event-ID``: on A (the run is
   live there) and on B (forwarded to A through the Redis routing table).

    python -m bench.server_streams --streams 500 --hold 25 --json bench/results/server_streams.json
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.report import write
from seekgraph.server.auth import add_key_to_file
from tests.support.processes import Proc, start_app, start_model_server, start_redis


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def hold_stream(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], hold: float, stats: dict[str, Any]
) -> None:
    try:
        async with client.stream("GET", url, headers=headers) as r:
            if r.status_code != 200:
                stats["failed"] += 1
                await r.aread()
                key = f"{r.status_code} {r.text[:80]}"
                stats.setdefault("statuses", {})
                stats["statuses"][key] = stats["statuses"].get(key, 0) + 1
                return
            stats["open"] += 1
            deadline = time.monotonic() + hold
            snapshot = heartbeats = 0
            async for line in r.aiter_lines():
                if line.startswith("event: snapshot"):
                    snapshot = 1
                elif line.startswith(": heartbeat"):
                    heartbeats += 1
                if time.monotonic() > deadline:
                    break
            stats["with_snapshot"] += snapshot
            stats["with_heartbeat"] += 1 if heartbeats else 0
    except httpx.HTTPError as exc:
        stats["failed"] += 1
        stats.setdefault("errors", {})  # type: ignore[arg-type]
        errors: dict[str, int] = stats["errors"]  # type: ignore[assignment]
        errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1


async def first_event_ms(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> float:
    start = time.perf_counter()
    async with client.stream("GET", url, headers=headers) as r:
        async for line in r.aiter_lines():
            if line.startswith("event: "):
                return (time.perf_counter() - start) * 1000
    raise RuntimeError("no event")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * p))], 1)


async def run(args: argparse.Namespace, a: Proc, b: Proc, key: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=args.streams + 50, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=httpx.Timeout(None, connect=30), limits=limits) as c:
        thread = (await c.post(f"{a.url}/threads", headers=headers)).json()["thread_id"]
        # the run that keeps the thread live: the model stays silent for a long time
        starter = asyncio.create_task(
            c.post(
                f"{a.url}/threads/{thread}/runs",
                headers=headers,
                json={"question": "How do I connect to the VPN from a new laptop?"},
            )
        )
        await asyncio.sleep(3)
        base_rss = rss_mb(a.popen.pid)
        stats: dict[str, Any] = {"open": 0, "failed": 0, "with_snapshot": 0, "with_heartbeat": 0}
        url = f"{a.url}/threads/{thread}/stream"
        holders = [
            asyncio.create_task(hold_stream(c, url, headers, args.hold, stats))
            for _ in range(args.streams)
        ]
        await asyncio.sleep(min(args.hold - 2, 10))
        held_rss = rss_mb(a.popen.pid)
        open_at_peak = stats["open"]
        await asyncio.gather(*holders)

        last = "x:1"
        same: list[float] = []
        forwarded: list[float] = []
        for _ in range(args.resumes):
            same.append(await first_event_ms(c, url, {**headers, "Last-Event-ID": last}))
            forwarded.append(
                await first_event_ms(
                    c, f"{b.url}/threads/{thread}/stream", {**headers, "Last-Event-ID": last}
                )
            )
        starter.cancel()
    return {
        "streams_requested": args.streams,
        "streams_open_at_peak": open_at_peak,
        "streams_failed": stats["failed"],
        "stream_errors": stats.get("errors", {}),
        "stream_statuses": stats.get("statuses", {}),
        "streams_with_snapshot": stats["with_snapshot"],
        "streams_with_heartbeat": stats["with_heartbeat"],
        "hold_seconds": args.hold,
        "heartbeat_seconds": args.heartbeat,
        "rss_before_mb": round(base_rss, 1),
        "rss_with_streams_mb": round(held_rss, 1),
        "kb_per_idle_stream": round((held_rss - base_rss) * 1024 / max(1, open_at_peak), 1),
        "resume_first_event_ms": {
            "same_instance": {
                "p50": pct(same, 0.5),
                "p95": pct(same, 0.95),
                "median": round(statistics.median(same), 1),
            },
            "forwarded": {
                "p50": pct(forwarded, 0.5),
                "p95": pct(forwarded, 0.95),
                "median": round(statistics.median(forwarded), 1),
            },
            "attempts": args.resumes,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--hold", type=float, default=25.0)
    parser.add_argument("--heartbeat", type=float, default=10.0)
    parser.add_argument("--resumes", type=int, default=50)
    parser.add_argument("--json", type=Path, default=Path("bench/results/server_streams.json"))
    args = parser.parse_args()
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        procs: list[Proc] = []
        try:
            redis_proc, redis_url = start_redis(tmp)
            procs.append(redis_proc)
            model = start_model_server(tmp, delay=0.0, tokens=10, first_delay=3600)
            procs.append(model)
            keys = tmp / "keys.json"
            key = add_key_to_file(keys, "alice")
            env = {
                "SEEKGRAPH_REDIS_URL": redis_url,
                "SEEKGRAPH_API_KEYS_FILE": keys,
                "SEEKGRAPH_INTERNAL_TOKEN": "bench",
                "SEEKGRAPH_LLM_MODEL": "m",
                "SEEKGRAPH_LLM_BASE_URL": model.url + "/v1",
                "SEEKGRAPH_LLM_TIMEOUT": 7200,
                "SEEKGRAPH_HEARTBEAT_SECONDS": args.heartbeat,
            }
            a = start_app(tmp, "a", env)
            procs.append(a)
            b = start_app(tmp, "b", env)
            procs.append(b)
            result = asyncio.run(run(args, a, b, key))
        finally:
            for p in reversed(procs):
                p.stop()
    out = {
        "command": "python -m bench.server_streams "
        + " ".join(f"--{k} {v}" for k, v in vars(args).items() if k != "json"),
        "result": result,
        "targets": {
            "streams": 500,
            "resume_same_instance_p50_ms": 50,
            "resume_forwarded_p50_ms": 150,
        },
    }
    write(args.json, out, started)


if __name__ == "__main__":
    main()
