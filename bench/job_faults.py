"""The jobs benchmark's fault trials: a worker killed or stopped, or Redis restarted, mid-run.

Part of ``python -m bench.jobs`` (``--fault-trials N``): N runs whose worker gets SIGKILL and
N whose worker gets SIGTERM (with no drain grace, so it hands the run back), each at a
different point of the run; then (``--restart-runs M``) Redis killed and restarted from its
append-only file while one run streams and M wait or run in the background.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from bench.jobs import PLAN, spawn_worker

#: Seconds a source sleeps per search in the fault trials: every fault lands mid-run.
FAULT_SLEEP_S = 1.0


def frames_of(response: httpx.Response, until_events: int | None = None) -> list[dict[str, Any]]:
    """SSE frames (id, event, data) read from ``response``, up to ``until_events`` of them."""
    out: list[dict[str, Any]] = []
    frame: dict[str, Any] = {}
    for line in response.iter_lines():
        if not line:
            if "event" in frame:
                out.append(frame)
                if frame["event"] == "end" or (until_events and len(out) >= until_events):
                    break
            frame = {}
        elif line.startswith(("id: ", "event: ", "data: ")):
            key, _, value = line.partition(": ")
            frame[key] = json.loads(value) if key == "data" else value
    return out


def faults(
    apis: list[str], key: str, url: str, queue: str, tmp: Path, trials: int
) -> dict[str, Any]:
    """Kill (SIGKILL) or stop (SIGTERM) the worker of a streamed run at different points.

    Each trial reads the run on one instance up to its k-th event, takes its worker down,
    then follows it on the other instance from the last event id; a trial passes when the
    run ends ``done`` on another worker with every event exactly once and one unforked
    history.
    """
    from tests.support.processes import unforked

    headers = {"Authorization": f"Bearer {key}"}
    body = {"question": "VPN, SSO and meals", "flow": "research", "plan": PLAN}
    # slower sources (1 s a search), no drain grace: every fault lands mid-run, and a
    # stopped worker hands its run back rather than finishing it
    timing = (FAULT_SLEEP_S, 0.0)
    pool = [spawn_worker(url, queue, 2, tmp / f"fault-w{i}.log", *timing) for i in range(2)]
    results: dict[str, list[bool]] = {"sigkill": [], "sigterm": []}
    problems: list[str] = []
    try:
        with httpx.Client(timeout=120, headers=headers) as client:
            for trial in range(2 * trials):
                how = "sigkill" if trial < trials else "sigterm"
                point = 2 + (trial % trials) * 3  # events read before the worker goes
                a, b = apis[trial % 2], apis[(trial + 1) % 2]
                thread = client.post(f"{a}/threads").json()["thread_id"]
                with client.stream("POST", f"{a}/threads/{thread}/runs", json=body) as r:
                    first = frames_of(r, point)
                run = first[0]["id"].split(":")[0]
                record = client.get(f"{a}/threads/{thread}/runs/{run}").json()
                victim = next((w for w in pool if f":{w.popen.pid}" in record["executor"]), None)
                if victim is not None and first[-1]["event"] != "end":
                    if how == "sigkill":
                        victim.kill()
                    else:
                        victim.stop()
                    pool.remove(victim)
                    replacement = tmp / f"fault-r{trial}.log"
                    pool.append(spawn_worker(url, queue, 2, replacement, *timing))
                last = first[-1]["id"]
                with client.stream("GET", f"{b}/threads/{thread}/stream",
                                   headers={"Last-Event-ID": last}) as r:  # fmt: skip
                    second = frames_of(r)
                history = client.get(f"{b}/threads/{thread}/history").json()
                done = client.get(f"{b}/threads/{thread}/runs/{run}").json()

                def seq(f: dict[str, Any]) -> int:
                    return int(f["id"].split(":")[1])

                # what was read, then the snapshot of everything since, then each event once
                read_first = [seq(f) for f in first] == list(range(1, len(first) + 1))
                rest = [seq(f) for f in second[1:]]
                snap = seq(second[0]) if second[0]["event"] == "snapshot" else -1
                ok = (
                    read_first
                    and snap >= seq(first[-1])
                    and rest == list(range(snap + 1, snap + 1 + len(rest)))
                    and second[-1]["event"] == "end"
                    and second[-1]["data"]["status"] == "done"
                    and victim is not None
                    and done["executor"] != record["executor"]
                    and unforked(history)
                )
                results[how].append(ok)
                if not ok:
                    problems.append(f"{how} at event {point}: {second[-1]} {done['executor']}")
    finally:
        for w in pool:
            w.stop()
    return {
        how: f"{sum(oks)}/{len(oks)} completed on another worker, no gap or duplicate, unforked"
        for how, oks in results.items()
    } | {"problems": problems}


def redis_restart(
    apis: list[str], key: str, redis_proc: Any, port: int, tmp: Path, runs: int, down_s: float
) -> tuple[dict[str, Any], Any]:
    """Redis killed (SIGKILL) and restarted from its AOF while runs stream and wait in the queue.

    One run is streamed on one instance up to its 4th event; ``runs`` more are submitted in
    the background; then Redis dies and comes back ``down_s`` later on the same port. Passes
    when the streamed run is followed to ``done`` on the other instance with every event
    once, and every background run ends ``success`` with one unforked history. Returns the
    new Redis process.
    """
    from tests.support.processes import start_redis, unforked

    headers = {"Authorization": f"Bearer {key}"}
    body = {"question": "VPN, SSO and meals", "flow": "research", "plan": PLAN}
    problems: list[str] = []
    with httpx.Client(timeout=180, headers=headers) as client:
        a, b = apis
        thread = client.post(f"{a}/threads").json()["thread_id"]
        with client.stream("POST", f"{a}/threads/{thread}/runs", json=body) as r:
            first = frames_of(r, 4)
        background = []
        for i in range(runs):
            t = client.post(f"{apis[i % 2]}/threads").json()["thread_id"]
            made = client.post(f"{apis[i % 2]}/threads/{t}/runs", json={**body, "stream": False})
            background.append((t, made.json()["run_id"]))
        redis_proc.kill()
        down = time.monotonic()
        time.sleep(down_s)
        redis_proc, _ = start_redis(tmp, port, persist=True)
        back = time.monotonic() - down
        with client.stream("GET", f"{b}/threads/{thread}/stream",
                           headers={"Last-Event-ID": first[-1]["id"]}) as r:  # fmt: skip
            second = frames_of(r)

        def seq(f: dict[str, Any]) -> int:
            return int(f["id"].split(":")[1])

        rest = [seq(f) for f in second[1:]]
        snap = seq(second[0]) if second[0]["event"] == "snapshot" else -1
        streamed = (
            snap >= seq(first[-1])
            and rest == list(range(snap + 1, snap + 1 + len(rest)))
            and second[-1]["event"] == "end"
            and second[-1]["data"]["status"] == "done"
            and unforked(client.get(f"{b}/threads/{thread}/history").json())
        )
        if not streamed:
            problems.append(f"streamed run: {second[-1]}")
        ended = 0
        deadline = time.monotonic() + 180
        for t, run in background:
            while time.monotonic() < deadline:
                record = client.get(f"{a}/threads/{t}/runs/{run}").json()
                if record.get("status") in ("success", "error", "cancelled"):
                    break
                time.sleep(0.25)
            history = client.get(f"{a}/threads/{t}/history").json()
            if record.get("status") == "success" and unforked(history):
                ended += 1
            else:
                problems.append(f"background {run}: {record.get('status')} {record.get('error')}")
    return {
        "redis_back_after_s": round(back, 2),
        "streamed_run": "done, no gap or duplicate" if streamed else "FAILED",
        "background_runs": f"{ended}/{runs} ended success, unforked",
        "problems": problems,
    }, redis_proc
