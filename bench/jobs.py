"""Runs as jobs: throughput with 1, 2 and 4 workers, cancel latency, and the queue's overhead.

Two API instances (``seekgraph serve --no-worker`` on the demo workspace) take background
research runs; worker processes (this module's ``worker`` command: ``server.runs.Worker``
with zero-latency fakes and sources that sleep 200 ms per search) execute them from one
Redis. Measured:

- throughput: 40 research runs (three sub-questions each) submitted as background runs,
  alternating between the two instances, executed by 1, 2 and 4 workers; runs per minute,
  the p50/p95 time from submission to the run's first event, and the scaling ratios;
- cancel latency: a streamed run is cancelled through the *other* instance; p50/p95 from the
  cancel request to the ``end`` event (status ``cancelled``) on the first instance's stream;
- queue overhead: the same run started in-request (``RunManager.start``) and through the
  queue (enqueue → a worker in the same process → end), medians and their difference.

    python -m bench.jobs --json bench/results/jobs.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.report import command_line, write

SLEEP_S = 0.2
#: The workers' lock TTL and claim idle time (the tests' values; the defaults are 30 s and
#: 15 s): how soon a killed worker's run is taken over, which the fault trials wait for.
LOCK_TTL_MS = 5_000
CLAIM_IDLE_MS = 3_000
PLAN = [
    {"id": "vpn", "question": "How do I connect to the VPN?"},
    {"id": "sso", "question": "How do I set up single sign-on?"},
    {"id": "meals", "question": "What is the daily meal allowance?"},
]


def sleepy_services(sleep: float) -> Any:
    """Services whose sources sleep ``sleep`` seconds per search, and no model (extractive)."""
    from bench.graph_overhead import ConstantReranker, HashEmbedder
    from seekgraph.graph.api import User
    from seekgraph.nodes.plumbing.services import Services
    from seekgraph.sources.indexes.memory import InMemorySource, MemoryDocument
    from seekgraph.sources.registry import SourceRegistry

    docs = [
        MemoryDocument("vpn", "VPN", "Connect to the VPN with WireGuard.", acl=["group:all"]),
        MemoryDocument("sso", "SSO", "Set up single sign-on with Okta.", acl=["group:all"]),
        MemoryDocument("meals", "Meals", "The daily meal allowance is $60.", acl=["group:all"]),
    ]
    sources = [InMemorySource(n, "kb", docs, delay=sleep) for n in ("kb", "wiki")]
    users = [User(name, frozenset({"all"})) for name in ("alice", "bob")]
    registry = SourceRegistry(sources, users)
    return Services(registry=registry, embedder=HashEmbedder(), reranker=ConstantReranker())


async def open_worker(
    url: str, queue: str, concurrency: int, name: str, sleep: float = SLEEP_S
) -> Any:
    """A ``Worker`` on Redis over the sleepy services (and what it opened)."""
    from seekgraph.server.app_state import redis_clients
    from seekgraph.server.bootstrap import flow_graphs
    from seekgraph.server.runs.coordination import RedisCoordinator
    from seekgraph.server.runs.events import RedisEventLog
    from seekgraph.server.runs.fencing import FencedRedisSaver
    from seekgraph.server.runs.manager import RunManager
    from seekgraph.server.runs.queue import RedisRunQueue
    from seekgraph.server.runs.records import RedisRunRecords
    from seekgraph.server.runs.worker import Worker

    client, sync_client = redis_clients(url)  # as the product's workers: retried connections
    saver = FencedRedisSaver(redis_client=client)
    await saver.asetup()
    coordinator = RedisCoordinator(client, sync_client=sync_client)
    records, events = RedisRunRecords(client), RedisEventLog(client)
    runs = RunManager(coordinator, name, LOCK_TTL_MS, records=records, events=events)
    graphs = flow_graphs(sleepy_services(sleep), saver)
    return Worker(
        queue=RedisRunQueue(client, queue),
        runs=runs,
        graphs=graphs,
        records=records,
        events=events,
        name=name,
        concurrency=concurrency,
        claim_idle_ms=CLAIM_IDLE_MS,
    )


async def serve_worker(
    url: str, queue: str, concurrency: int, sleep: float = SLEEP_S, grace: float = 5.0
) -> None:
    """The ``worker`` command: run until SIGTERM, then drain (``grace`` seconds)."""
    name = f"bench-worker:{os.getpid()}"
    worker = await open_worker(url, queue, concurrency, name, sleep)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    task = asyncio.create_task(worker.run())
    print("ready", flush=True)
    await stop.wait()
    await worker.drain(grace)
    task.cancel()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def one_run(client: httpx.AsyncClient, base: str, key: str, t0: float) -> dict[str, float]:
    """Create a thread, submit a background research run, follow it to its end."""
    headers = {"Authorization": f"Bearer {key}"}
    thread = (await client.post(f"{base}/threads", headers=headers)).json()["thread_id"]
    body = {"question": "VPN, SSO and meals", "flow": "research", "plan": PLAN, "stream": False}
    submitted = time.monotonic()
    r = await client.post(f"{base}/threads/{thread}/runs", json=body, headers=headers)
    assert r.status_code == 202, r.text
    first = None
    async with client.stream("GET", f"{base}/threads/{thread}/stream", headers=headers) as s:
        event = ""
        async for line in s.aiter_lines():
            if line.startswith("id: ") and first is None and not line.endswith(":0"):
                first = time.monotonic()
            if line.startswith("event: "):
                event = line[7:]
            if event == "end" and line.startswith("data: "):
                assert json.loads(line[6:])["status"] == "done", line
                break
    return {
        "submitted": submitted - t0,
        "first_event_s": (first or time.monotonic()) - submitted,
        "ended": time.monotonic() - t0,
    }


async def throughput(apis: list[str], key: str, runs: int) -> dict[str, Any]:
    """``runs`` background runs over the instances; rate and time to first event."""
    t0 = time.monotonic()
    async with httpx.AsyncClient(timeout=300) as client:
        done = await asyncio.gather(
            *(one_run(client, apis[i % len(apis)], key, t0) for i in range(runs))
        )
    span = max(d["ended"] for d in done) - min(d["submitted"] for d in done)
    firsts = [d["first_event_s"] for d in done]
    return {
        "runs": runs,
        "seconds": round(span, 2),
        "runs_per_minute": round(runs / span * 60, 1),
        "first_event_p50_s": round(statistics.median(firsts), 3),
        "first_event_p95_s": round(percentile(firsts, 0.95), 3),
    }


async def cancel_latency(apis: list[str], key: str, trials: int) -> dict[str, Any]:
    """Stream a run on one instance, cancel it on the other; request → ``end`` event."""
    headers = {"Authorization": f"Bearer {key}"}
    latencies: list[float] = []
    async with httpx.AsyncClient(timeout=120) as client:
        for _ in range(trials):
            a, b = apis
            thread = (await client.post(f"{a}/threads", headers=headers)).json()["thread_id"]
            body = {"question": "VPN, SSO and meals", "flow": "research", "plan": PLAN}
            asked = 0.0
            async with client.stream(
                "POST", f"{a}/threads/{thread}/runs", json=body, headers=headers
            ) as s:
                run, event = "", ""
                async for line in s.aiter_lines():
                    if line.startswith("id: "):
                        run = line[4:].split(":")[0]
                    if line.startswith("event: "):
                        event = line[7:]
                    if event == "node" and not asked:
                        asked = time.monotonic()
                        r = await client.post(
                            f"{b}/threads/{thread}/runs/{run}/cancel", headers=headers
                        )
                        assert r.status_code == 202, r.text
                    if event == "end" and line.startswith("data: "):
                        assert json.loads(line[6:])["status"] == "cancelled", line
                        latencies.append(time.monotonic() - asked)
                        break
    return {
        "trials": trials,
        "p50_s": round(statistics.median(latencies), 3),
        "p95_s": round(percentile(latencies, 0.95), 3),
        "max_s": round(max(latencies), 3),
    }


async def queue_overhead(url: str, n: int) -> dict[str, Any]:
    """One process: a search run in-request vs through the queue to a worker."""
    import bench.jobs as me
    from seekgraph.graph.context import Context, context_to_dict
    from seekgraph.server.runs.queue import Job
    from seekgraph.server.runs.records import RunRecord

    me.SLEEP_S = 0.0  # the runs themselves: as fast as the graph goes
    queue = f"bench-overhead-{uuid.uuid4().hex[:6]}"
    worker = await open_worker(url, queue, 1, "bench-overhead")
    runs, records = worker.runs, worker.records
    task = asyncio.create_task(worker.run())
    ctx = Context(user="bob")
    graph = worker.graphs["search"]
    direct: list[float] = []
    queued: list[float] = []
    for _ in range(n):
        thread = uuid.uuid4().hex
        started = time.perf_counter()
        run_id = runs.new_run_id()
        assert await runs.try_lock(thread, run_id)
        handle = runs.start(thread, "bob", {"question": "VPN?"}, ctx, run_id, graph=graph,
                            flow="search")  # fmt: skip
        assert handle.task is not None
        await handle.task
        direct.append(time.perf_counter() - started)
        thread = uuid.uuid4().hex
        started = time.perf_counter()
        run_id = runs.new_run_id()
        token = f"{run_id}@queued"
        assert await runs.coordinator.acquire(thread, token, 600_000)
        await records.put(RunRecord(run_id, thread, "bob", "search", queued=True))
        await worker.queue.put(Job(run_id, thread, "bob", "search", "start", {"question": "VPN?"},
                                   context_to_dict(ctx), "", False, token))  # fmt: skip
        while not (await records.get(thread, run_id)).done:  # type: ignore[union-attr]
            await asyncio.sleep(0.001)
        queued.append(time.perf_counter() - started)
    await worker.drain(1)
    task.cancel()
    return {
        "runs": n,
        "in_request_median_ms": round(statistics.median(direct) * 1000, 1),
        "queued_median_ms": round(statistics.median(queued) * 1000, 1),
        "overhead_median_ms": round(
            (statistics.median(queued) - statistics.median(direct)) * 1000, 1
        ),
    }


def spawn_worker(url: str, queue: str, concurrency: int, log: Path, *timing: float) -> Any:
    """A bench worker process (``timing``: source sleep, drain grace), once it is ready."""
    from tests.support.processes import Proc

    args = ["worker", url, queue, str(concurrency), *map(str, timing)]
    proc = Proc([sys.executable, "-m", "bench.jobs", *args], log)
    while "ready" not in log.read_text():
        assert proc.alive(), proc.tail()
        time.sleep(0.05)
    return proc


def main() -> None:
    if sys.argv[1:2] == ["worker"]:  # url queue concurrency [sleep grace]
        url, queue, concurrency = sys.argv[2], sys.argv[3], int(sys.argv[4])
        timing = [float(x) for x in sys.argv[5:7]]
        asyncio.run(serve_worker(url, queue, concurrency, *timing))
        return
    from seekgraph.server.auth import add_key_to_file
    from tests.support.processes import Proc, free_port, start_app, start_redis

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=Path("bench/results/jobs.json"))
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--concurrency", type=int, default=4, help="runs at once per worker")
    parser.add_argument("--cancels", type=int, default=20)
    parser.add_argument("--overhead-runs", type=int, default=50)
    parser.add_argument("--fault-trials", type=int, default=10, help="each of SIGKILL, SIGTERM")
    parser.add_argument(
        "--restart-runs", type=int, default=6, help="background runs across a Redis restart"
    )
    parser.add_argument("--redis-down", type=float, default=5.0, help="seconds Redis is away")
    args = parser.parse_args()
    started = time.time()
    out: dict[str, Any] = {"command": command_line("bench.jobs", args)}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        port = free_port()
        redis_proc, url = start_redis(tmp, port, persist=True)  # AOF: it may be restarted
        procs: list[Proc] = []
        try:
            queue = f"bench-jobs-{uuid.uuid4().hex[:6]}"
            keys = tmp / "keys.json"
            key = add_key_to_file(keys, "bob")
            env = {
                "SEEKGRAPH_REDIS_URL": url,
                "SEEKGRAPH_API_KEYS_FILE": keys,
                "SEEKGRAPH_QUEUE": queue,
                # one key submits every run: its live-run limit (8) would refuse the burst
                "SEEKGRAPH_MAX_LIVE_RUNS_PER_KEY": args.runs + 10,
            }
            apis = [start_app(tmp, f"api{i}", env, "--no-worker") for i in (1, 2)]
            procs += apis
            urls = [a.url for a in apis]
            out["throughput"] = {}
            for count in [int(w) for w in args.workers.split(",")]:
                workers = [
                    spawn_worker(url, queue, args.concurrency, tmp / f"w{count}-{i}.log")
                    for i in range(count)
                ]
                try:
                    result = asyncio.run(throughput(urls, key, args.runs))
                    if count == 2 and args.cancels:
                        out["cancel_latency"] = asyncio.run(cancel_latency(urls, key, args.cancels))
                finally:
                    for w in workers:
                        w.stop()
                out["throughput"][f"{count}_workers"] = result
                print(count, result, flush=True)
            rates = {k: v["runs_per_minute"] for k, v in out["throughput"].items()}
            one = rates.get("1_workers")
            if one:
                out["scaling"] = {k: round(v / one, 2) for k, v in rates.items()}
            if args.overhead_runs:
                out["queue_overhead"] = asyncio.run(queue_overhead(url, args.overhead_runs))
            if args.fault_trials:
                from bench.job_faults import faults

                out["faults"] = faults(urls, key, url, queue, tmp, args.fault_trials)
            if args.restart_runs:
                from bench.job_faults import FAULT_SLEEP_S, redis_restart

                pool = [spawn_worker(url, queue, 4, tmp / f"restart-w{i}.log", FAULT_SLEEP_S, 5.0)
                        for i in range(2)]  # fmt: skip
                try:
                    out["redis_restart"], redis_proc = redis_restart(
                        urls, key, redis_proc, port, tmp, args.restart_runs, args.redis_down
                    )
                finally:
                    for w in pool:
                        w.stop()
        finally:
            for p in reversed(procs):
                p.stop()
            redis_proc.stop()
    out["settings"] = {
        "source_sleep_s": SLEEP_S,
        "concurrency_per_worker": args.concurrency,
        "lock_ttl_ms": LOCK_TTL_MS,
        "claim_idle_ms": CLAIM_IDLE_MS,
    }
    write(args.json, out, started)


if __name__ == "__main__":
    main()
