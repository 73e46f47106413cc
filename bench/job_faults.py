"""The jobs benchmark's fault trials: a worker killed or stopped under a streamed run.

Part of ``python -m bench.jobs`` (``--fault-trials N``): N runs whose worker gets SIGKILL and
N whose worker gets SIGTERM (with no drain grace, so it hands the run back), each at a
different point of the run.
"""

from __future__ import annotations

import json
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
    from tests.integration.processes import unforked

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
