"""The limits campaign: one valid key against two instances on one Redis, each attack seconds.

The seven findings of the second security review (issue 46), replayed as they were found,
each measured by what another client or the operator sees:

1. **body before key**: 48 MiB of ``[{},{},…]`` with an unknown key, again and again for 5 s —
   seconds to each answer, the server's memory growth, another client's ``/healthz`` p95 (and
   the same body with a valid key, which passes the key's check);
2. **continue past the limit**: 14 runs stopped half-way, then 14 streamed ``continue`` at once —
   accepted, and the most runs of the key running at one time, against the limit (8);
3. **queue flood**: one run and 10 enqueued behind it on one thread — accepted, and another
   user's background run's latency (submit to success);
4. **image bomb**: 6 × a small PNG of 13,000 × 13,000 RGBA in one request, again and again
   for 5 s — statuses, seconds, memory growth, another client's ``/healthz`` p95;
5. **trickle**: 3 connections without a key and 3 with one, a byte every 2 s — how many are
   still open 16 s later;
6. **docx bomb**: 30 KB that expands to 20 MB of empty paragraphs, read by the indexer —
   seconds and peak memory;
7. **start together**: the checkpoint indexes dropped, three instances started at once (and
   three savers set up at once in one process) — how many came up.

    python -m bench.limits_probe --label after --redis-url redis://127.0.0.1:6392/0

``--label before`` on the code before the fixes gives the other column.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import redis

from bench.probe_watch import Watch, repeated
from bench.report import command_line, write
from seekgraph.server.auth import add_key_to_file
from tests.processes.test_limits import png
from tests.processes.test_server import QUESTION
from tests.support.processes import (
    Proc,
    auth,
    llm_server_env,
    new_thread,
    start_app,
    start_model_server,
    start_redis,
)
from tests.support.sse_client import read

BACKGROUND = {**QUESTION, "stream": False}


def body_before_key(w: dict[str, Any]) -> dict[str, Any]:
    body = b"[" + b"{}," * 16_000_000 + b"{}]"  # 48 MB, under the 48 MiB cap
    headers = {**auth("sg_not_a_real_key"), "Content-Type": "application/json"}
    with Watch(w["a"]) as watch, httpx.Client(timeout=120) as c:
        statuses, took = repeated(
            lambda: (
                c.post(f"{w['a'].url}/threads/abc/runs", content=body, headers=headers).status_code
            )
        )
    return {"statuses": sorted(set(statuses)), "requests": len(statuses),
            "seconds_each": round(max(took), 2), **watch.numbers()}  # fmt: skip


def body_with_a_key(w: dict[str, Any]) -> dict[str, Any]:
    """The same 48 MB body with a valid key (the auth check passes: it must not be parsed)."""
    key = add_key_to_file(w["keys"], "alice")
    body = b"[" + b"{}," * 16_000_000 + b"{}]"
    headers = {**auth(key), "Content-Type": "application/json"}
    with httpx.Client(timeout=120) as c:
        thread = new_thread(c, w["a"].url, key)
        with Watch(w["a"]) as watch:
            statuses, took = repeated(
                lambda: (
                    c.post(
                        f"{w['a'].url}/threads/{thread}/runs", content=body, headers=headers
                    ).status_code
                )  # fmt: skip
            )
    return {"statuses": sorted(set(statuses)), "requests": len(statuses),
            "seconds_each": round(max(took), 2), **watch.numbers()}  # fmt: skip


def stopped_thread(c: httpx.Client, base: str, key: str) -> str:
    """A thread whose run was stopped half-way (``interrupt``): it can be continued."""
    thread = new_thread(c, base, key)
    first = read(c, "POST", f"{base}/threads/{thread}/runs", json=QUESTION, headers=auth(key),
                 until="node")  # fmt: skip
    run = first.frames[0].id.split(":")[0]
    c.post(f"{base}/threads/{thread}/runs/{run}/cancel", params={"wait": True},
           headers=auth(key))  # fmt: skip
    return thread


def running_of(c: httpx.Client, base: str, key: str, threads: list[str]) -> int:
    """How many of ``threads`` have a run running now."""
    latest = [
        c.get(f"{base}/threads/{t}/runs", params={"limit": 1}, headers=auth(key)).json()
        for t in threads
    ]
    return sum(
        1 for runs in latest if isinstance(runs, list) and runs and runs[0]["status"] == "running"
    )


def continue_past_limit(w: dict[str, Any], n: int = 14) -> dict[str, Any]:
    """``n`` streamed continues at once, half on each instance (they run where they arrive)."""
    key, a, b = add_key_to_file(w["keys"], "alice"), w["a"].url, w["b"].url
    statuses: list[int] = []
    with httpx.Client(timeout=120) as c:
        threads = [stopped_thread(c, a, key) for _ in range(n)]

        def go(i: int) -> None:
            with httpx.Client(timeout=120) as own:
                base = (a, b)[i % 2]
                got = read(own, "POST", f"{base}/threads/{threads[i]}/continue", json={},
                           headers=auth(key))  # fmt: skip
                statuses.append(got.status)

        streams = [threading.Thread(target=go, args=(i,)) for i in range(n)]
        for t in streams:
            t.start()
        # polled with keys of their own (the attacker's key's rate is not spent on counting)
        pollers, most, polls = [add_key_to_file(w["keys"], "alice") for _ in range(3)], 0, 0
        while any(t.is_alive() for t in streams):
            most = max(most, running_of(c, a, pollers[polls % 3], threads))
            polls += 1
            time.sleep(0.75)
        for t in streams:
            t.join()
    return {
        "accepted": statuses.count(200),
        "refused_429": statuses.count(429),
        "most_running": most,
        "limit": 8,
    }


def queue_flood(w: dict[str, Any]) -> dict[str, Any]:
    key, other = add_key_to_file(w["keys"], "alice"), add_key_to_file(w["keys"], "bob")
    a, b = w["a"].url, w["b"].url
    with httpx.Client(timeout=120) as c:
        thread = new_thread(c, a, key)
        first = c.post(f"{a}/threads/{thread}/runs", json=BACKGROUND, headers=auth(key)).json()
        queued = [
            c.post(f"{(a, b)[i % 2]}/threads/{thread}/runs",
                   json={**BACKGROUND, "multitask_strategy": "enqueue"}, headers=auth(key))
            for i in range(10)
        ]  # fmt: skip
        bobs_thread = new_thread(c, b, other)
        started = time.monotonic()
        bobs = c.post(f"{b}/threads/{bobs_thread}/runs", json=BACKGROUND, headers=auth(other))
        done = c.post(f"{b}/threads/{bobs_thread}/runs/{bobs.json()['run_id']}/join",
                      headers=auth(other), params={"timeout": 120}).json()  # fmt: skip
        latency = time.monotonic() - started
        for r in [first, *[q.json() for q in queued if q.status_code == 202]]:
            c.post(f"{a}/threads/{thread}/runs/{r['run_id']}/cancel", headers=auth(key))
    return {
        "accepted": 1 + sum(1 for q in queued if q.status_code == 202),
        "refused_429": sum(1 for q in queued if q.status_code == 429),
        "other_users_run_seconds": round(latency, 1),
        "other_users_run_status": done["run"]["status"],
    }


def image_bomb(w: dict[str, Any]) -> dict[str, Any]:
    image = base64.b64encode(png(13_000, 13_000)).decode()
    key = add_key_to_file(w["keys"], "alice")
    with httpx.Client(timeout=120) as c:
        threads = [new_thread(c, w["a"].url, key) for _ in range(30)]

        def attack() -> int:
            thread = threads.pop()
            r = c.post(f"{w['a'].url}/threads/{thread}/runs", headers=auth(key),
                       json={**BACKGROUND, "images": [image] * 6})  # fmt: skip
            if r.status_code == 202:  # (accepted: stopped, so that runs do not pile up)
                c.post(f"{w['a'].url}/threads/{thread}/runs/{r.json()['run_id']}/cancel",
                       headers=auth(key))  # fmt: skip
            return r.status_code

        with Watch(w["a"]) as watch:
            statuses, took = repeated(attack)
    return {"statuses": sorted(set(statuses)), "requests": len(statuses),
            "seconds_each": round(max(took), 2), "png_kb": round(len(image) * 3 / 4 / 1024),
            **watch.numbers()}  # fmt: skip


def trickle(w: dict[str, Any], seconds: float = 16.0) -> dict[str, Any]:
    import socket

    key = add_key_to_file(w["keys"], "alice")
    host, port = w["a"].url.removeprefix("http://").rsplit(":", 1)
    with httpx.Client(timeout=30) as c:
        thread = new_thread(c, w["a"].url, key)
    socks: dict[str, list[socket.socket]] = {"no_key": [], "valid_key": []}
    for kind, header in (("no_key", ""), ("valid_key", f"Authorization: Bearer {key}\r\n")):
        for _ in range(3):
            s = socket.create_connection((host, int(port)), timeout=5)
            head = (
                f"POST /threads/{thread}/runs HTTP/1.1\r\nHost: x\r\n{header}"
                "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            )
            s.sendall(head.encode())
            socks[kind].append(s)
    open_ = {kind: set(range(3)) for kind in socks}
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        for kind, group in socks.items():
            for i, s in enumerate(group):
                if i not in open_[kind]:
                    continue
                try:
                    s.sendall(b" ")
                    s.settimeout(0.01)
                    if s.recv(4096) == b"":
                        open_[kind].discard(i)
                except TimeoutError:
                    pass
                except OSError:
                    open_[kind].discard(i)
        time.sleep(2.0)  # the attacker's pace: a byte every 2 s on each connection
    for group in socks.values():
        for s in group:
            s.close()
    return {f"{kind}_open_after_{seconds:g}s": f"{len(v)}/3" for kind, v in open_.items()}


def docx_bomb(tmp: Path) -> dict[str, Any]:
    """Through the indexer's reader, in a process of its own (its peak memory is its own)."""
    import zipfile

    import docx

    folder = tmp / "bomb"
    folder.mkdir()
    docx.Document().save(tmp / "plain.docx")
    with zipfile.ZipFile(tmp / "plain.docx") as plain:
        parts = {n: plain.read(n) for n in plain.namelist()}
    body = parts["word/document.xml"]
    start = body.index(b"<w:body>") + len(b"<w:body>")
    parts["word/document.xml"] = body[:start] + b"<w:p/>" * (20 * 2**20 // 6) + body[start:]
    with zipfile.ZipFile(folder / "bomb.docx", "w", zipfile.ZIP_DEFLATED) as bomb:
        for name, data in parts.items():
            bomb.writestr(name, data)
    code = (
        "import json, resource, sys, time\n"
        "from pathlib import Path\n"
        "from seekgraph.sources.ingestion.ingest import read_folder\n"
        "t = time.monotonic()\n"
        "r = read_folder(Path(sys.argv[1]), 'f', 'docs', ['group:everyone'])\n"
        "print(json.dumps({'seconds': round(time.monotonic() - t, 2), 'peak_mb': "
        "round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), 'documents': "
        "len(r.documents), 'problems': r.problems}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True,
                         text=True, timeout=600, check=True)  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["zip_kb"] = round((folder / "bomb.docx").stat().st_size / 1024)
    result["problems"] = [p.split("/")[-1] for p in result["problems"]]
    return result


def drop_checkpoint_indexes(url: str) -> None:
    client = redis.Redis.from_url(url)
    for name in client.execute_command("FT._LIST"):
        if name.decode().startswith("checkpoint"):
            client.execute_command("FT.DROPINDEX", name)
    client.close()


async def savers_together(url: str) -> int:
    """Three savers set up at once on a Redis without their indexes: how many failed."""
    import redis.asyncio as aioredis

    from seekgraph.server.runs.fencing import FencedRedisSaver

    drop_checkpoint_indexes(url)
    clients = [aioredis.from_url(url) for _ in range(3)]
    try:
        results = await asyncio.gather(
            *(FencedRedisSaver(redis_client=c).asetup() for c in clients), return_exceptions=True
        )
    finally:
        for c in clients:
            await c.aclose()
    return sum(1 for r in results if isinstance(r, BaseException))


def start_together(tmp: Path, env: dict[str, Any], names: list[str]) -> dict[str, Proc | str]:
    """Start every instance at the same moment; each one's process, or why it did not start."""
    out: dict[str, Proc | str] = {}
    gate = threading.Barrier(len(names))

    def start(name: str) -> None:
        gate.wait()
        try:
            out[name] = start_app(tmp, name, env)
        except AssertionError as exc:
            out[name] = str(exc)[-300:]

    threads = [threading.Thread(target=start, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="after", help="before | after (the output's name)")
    parser.add_argument("--redis-url", default=None, help="a Redis 8 with search and JSON")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    path = args.json or Path(f"bench/results/limits_probe_{args.label}.json")
    began = time.time()
    procs: list[Proc] = []
    with tempfile.TemporaryDirectory(prefix="seekgraph-limits-") as folder:
        tmp = Path(folder)
        try:
            url = args.redis_url
            if url is None:
                proc, url = start_redis(tmp)
                procs.append(proc)
            model = start_model_server(tmp, delay=0.05, tokens=60, first_delay=1.0)
            procs.append(model)
            keys = tmp / "keys.json"
            env = llm_server_env(url, model, keys, SEEKGRAPH_QUEUE=f"probe-{uuid.uuid4().hex[:8]}",
                                 SEEKGRAPH_REQUEST_TIMEOUT_SECONDS=10)  # fmt: skip
            findings: dict[str, dict[str, Any]] = {}
            failed = asyncio.run(savers_together(url))
            drop_checkpoint_indexes(url)
            started = start_together(tmp, env, ["a", "b", "c"])
            procs += [p for p in started.values() if isinstance(p, Proc)]
            findings["7 start together"] = {
                "instances_up": f"{sum(isinstance(p, Proc) for p in started.values())}/3",
                "savers_set_up_at_once_failed": f"{failed}/3",
            }
            up = [p for p in started.values() if isinstance(p, Proc)]
            while len(up) < 2:  # one died at start (the finding): the attacks need two
                up.append(start_app(tmp, f"again{len(up)}", env))
                procs.append(up[-1])
            w = {"a": up[0], "b": up[1], "keys": keys}
            for extra in up[2:]:
                extra.stop()
            steps = [
                ("1 body before key", lambda: body_before_key(w)),
                ("1b the same body with a valid key", lambda: body_with_a_key(w)),
                ("2 continue past the limit", lambda: continue_past_limit(w)),
                ("3 queue flood", lambda: queue_flood(w)),
                ("4 image bomb", lambda: image_bomb(w)),
                ("5 trickle", lambda: trickle(w)),
                ("6 docx bomb", lambda: docx_bomb(tmp)),
            ]
            for name, step in steps:
                print(f"{name} …", file=sys.stderr)
                findings[name] = step()
        finally:
            for p in reversed(procs):
                p.stop()
    out = {
        "command": command_line("bench.limits_probe", args),
        "label": args.label,
        "findings": dict(sorted(findings.items())),
        "note": "each finding's numbers; healthz is another client's, on the attacked instance",
    }
    write(path, out, began)


if __name__ == "__main__":
    main()
