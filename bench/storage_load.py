"""The load half of ``bench.storage``: instances, a worker, clients, a SIGKILL, Redis sampled.

See ``bench.storage`` for what is measured and how to run it.
"""

from __future__ import annotations

import argparse
import random
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import redis

from bench.storage import QUESTIONS, _wait_unlocked, env_of, snapshot, stream_run
from seekgraph.server.auth import add_key_to_file
from tests.support.processes import Proc, auth, start_app, start_redis, start_worker, unforked


def background_run(base: str, key: str, question: str) -> dict[str, Any]:
    """One background run (LangGraph door), waited for: its end status and seconds."""
    headers = {"x-api-key": key}
    with httpx.Client(timeout=120) as c:
        thread = c.post(f"{base}/langgraph/threads", json={}, headers=headers).json()["thread_id"]
        start = time.monotonic()
        r = c.post(
            f"{base}/langgraph/threads/{thread}/runs/wait",
            json={"assistant_id": "search", "input": {"question": question}},
            headers=headers,
        )
        status = (
            "done" if r.status_code == 200 and r.json().get("answer") else f"http {r.status_code}"
        )
        return {"thread": thread, "status": status, "answer": status == "done", "base": base,
                "seconds": time.monotonic() - start, "door": "background"}  # fmt: skip


def duplicated_run(base: str, key: str, thread: str) -> bool:
    """Checked right after the run (before any retention ends it): a fork or a second run."""
    with httpx.Client(timeout=60) as c:
        h = c.get(f"{base}/threads/{thread}/history", headers=auth(key))
        runs = c.get(f"{base}/threads/{thread}/runs", headers=auth(key))
    return h.status_code != 200 or not unforked(h.json()) or len(runs.json()) != 1


def load(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    redis_proc, url = start_redis(tmp)
    procs: list[Proc] = [redis_proc]
    try:
        keys = tmp / "keys.json"
        key = add_key_to_file(keys, "alice")
        env = env_of(args, url, keys, SEEKGRAPH_WORKER="false")
        apps = [start_app(tmp, "a", env), start_app(tmp, "b", env)]
        procs += apps
        worker_env = {k: v for k, v in env.items() if k != "SEEKGRAPH_WORKER"}
        worker_env["SEEKGRAPH_WORKER_CONCURRENCY"] = args.concurrency
        procs.append(start_worker(tmp, "w", worker_env))
        client = redis.Redis.from_url(url)
        stream_run(apps[0].url, key, QUESTIONS[0])  # warm: not counted
        _wait_unlocked(client)
        start_info = snapshot(client)
        start_mem = int(client.info("memory")["used_memory"])
        samples: list[dict[str, float]] = []
        results: list[dict[str, Any]] = []
        stop = threading.Event()
        t0 = time.monotonic()
        duration = args.minutes * 60
        alive = [True, True]

        def sampler() -> None:
            while not stop.is_set():
                info = client.info("memory")
                samples.append({"t": round(time.monotonic() - t0, 1),
                                "used_memory": int(info["used_memory"]),
                                "keys": int(client.dbsize()), "runs": len(results)})  # fmt: skip
                stop.wait(args.sample)

        def client_loop(n: int) -> None:
            rng = random.Random(n)
            while time.monotonic() - t0 < duration:
                choice = [i for i in (0, 1) if alive[i]] or [1]
                base = apps[rng.choice(choice)].url
                question = rng.choice(QUESTIONS)
                try:
                    if rng.random() < 0.7:
                        result = stream_run(base, key, question)
                    else:
                        result = background_run(base, key, question)
                    if result["answer"] and rng.random() < args.check_share:
                        result["duplicated"] = duplicated_run(base, key, result["thread"])
                    results.append(result)
                except httpx.TransportError as exc:  # the instance it talked to was killed
                    results.append({"status": f"transport {type(exc).__name__}", "base": base,
                                    "answer": False, "thread": "", "seconds": 0.0,
                                    "door": "?"})  # fmt: skip

        watcher = threading.Thread(target=sampler, daemon=True)
        watcher.start()
        killed_at = None
        with ThreadPoolExecutor(args.concurrency) as pool:
            futures = [pool.submit(client_loop, n) for n in range(args.concurrency)]
            while time.monotonic() - t0 < duration / 2:
                time.sleep(0.5)
            alive[0] = False
            apps[0].kill()
            killed_at = round(time.monotonic() - t0, 1)
            apps[0] = start_app(tmp, "a2", env)
            procs.append(apps[0])
            alive[0] = True
            for f in futures:
                f.result()
        _wait_unlocked(client, timeout=120)
        end_info = snapshot(client)
        stop.set()
        watcher.join()
        samples.append({"t": round(time.monotonic() - t0, 1),
                        "used_memory": int(client.info("memory")["used_memory"]),
                        "keys": int(client.dbsize()), "runs": len(results)})  # fmt: skip
        return summarise_load(args, results, samples, start_info, end_info, start_mem, killed_at)
    finally:
        for proc in reversed(procs):
            proc.stop()


def summarise_load(
    args: argparse.Namespace,
    results: list[dict[str, Any]],
    samples: list[dict[str, float]],
    start_info: dict[str, Any],
    end_info: dict[str, Any],
    start_mem: int,
    killed_at: float | None,
) -> dict[str, Any]:
    done = [r for r in results if r["answer"]]
    transport = [r for r in results if r["status"].startswith("transport")]
    lost = [r for r in results if not r["answer"] and not r["status"].startswith("transport")]
    # duplicated: a thread whose history forked (a step ran twice), or with several runs;
    # checked right after a share of the runs (with a retention, threads go later)
    checked = sum(1 for r in results if "duplicated" in r)
    duplicated = sum(1 for r in results if r.get("duplicated"))
    retention = args.retention_minutes
    secs = sorted(r["seconds"] for r in done)
    # growth per run while nothing had expired yet (the first retention period)
    window = [s for s in samples if not retention or s["t"] <= retention * 60]
    first, last = window[0], window[-1]
    runs_in_window = max(1, int(last["runs"] - first["runs"]))
    return {
        "minutes": args.minutes,
        "concurrency": args.concurrency,
        "retention_minutes": retention,
        "runs": len(results),
        "answered": len(done),
        "lost": len(lost),
        "lost_detail": [r["status"] for r in lost][:20],
        "refused_by_the_killed_instance": len(transport),
        "duplicated": duplicated,
        "duplicate_checks": checked,
        "killed_at_s": killed_at,
        "completion_p50_s": round(statistics.median(secs), 2) if secs else None,
        "completion_p95_s": round(secs[int(0.95 * (len(secs) - 1))], 2) if secs else None,
        "used_memory_bytes_per_run_first_window": round(
            (last["used_memory"] - first["used_memory"]) / runs_in_window
        ),
        "keys_per_run_first_window": round((last["keys"] - first["keys"]) / runs_in_window, 1),
        "family_bytes_start": sum(start_info["bytes"].values()),
        "family_bytes_end": sum(end_info["bytes"].values()),
        "end_by_family": {
            f: {"keys": end_info["keys"][f], "bytes": end_info["bytes"][f]}
            for f in sorted(end_info["keys"], key=lambda f: -end_info["bytes"][f])
        },
        "used_memory_start": start_mem,
        "used_memory_end": samples[-1]["used_memory"],
        "samples": samples,
    }
