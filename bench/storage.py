"""Where a run's bytes go in Redis, and whether Redis stops growing under load.

1. **anatomy**: one ``seekgraph serve`` on its own Redis (extractive mode, the demo), ``--runs``
   search runs one after another through the native door, each on a new thread. Bytes
   (``MEMORY USAGE``) and keys per run by key family; the checkpoints' bytes by channel and
   namespace, the writes' by channel; how many copies of each passage the store holds.
2. **load**: two ``seekgraph serve`` instances (API only) and a ``seekgraph worker`` on one
   Redis, ``--concurrency`` clients for ``--minutes`` — 70 % streaming runs (native door),
   30 % background runs (LangGraph door, waited for) — one instance SIGKILLed at half time
   and restarted. Redis memory and key count every ``--sample`` seconds; bytes and keys per
   run; runs lost (no answer) and duplicated (a thread whose history forked, or with more
   runs than were asked); completion p50/p95. ``--retention-minutes`` is given to the
   servers as ``SEEKGRAPH_RETENTION_MINUTES``.

``--code DIR`` runs the servers from another checkout (its modules first on ``PYTHONPATH``):
how the "before" numbers were taken on the previous commit with this same client.

    python -m bench.storage anatomy --runs 10 --json bench/results/storage_anatomy.json
    python -m bench.storage load --minutes 4 --retention-minutes 2 --json …
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import redis

from bench.report import command_line, write
from seekgraph.server.auth import add_key_to_file
from seekgraph.server.runs.compact import unpack
from seekgraph.server.runs.storage import family_of
from tests.support.processes import (
    Proc,
    auth,
    new_thread,
    start_app,
    start_redis,
)
from tests.support.sse_client import read

QUESTIONS = [
    "How do I connect to the VPN from a new laptop?",
    "What is the on-call escalation policy?",
    "How do I rotate my SSH keys?",
    "Which laptop models does IT support?",
]


def snapshot(client: redis.Redis) -> dict[str, Any]:
    """Keys and bytes per family, now."""
    keys: Counter[str] = Counter()
    size: Counter[str] = Counter()
    for raw in client.scan_iter(count=1000):
        key = raw.decode()
        fam = family_of(key)
        keys[fam] += 1
        size[fam] += int(client.memory_usage(key, samples=0) or 0)
    return {"keys": dict(keys), "bytes": dict(size)}


def _walk_passages(value: Any, seen: Counter[str], sizes: dict[str, int]) -> None:
    if isinstance(value, dict):
        if "source_id" in value and isinstance(value.get("snippet"), str):
            seen[value["source_id"]] += 1
            sizes[value["source_id"]] = len(value["snippet"].encode())
        for item in value.values():
            _walk_passages(item, seen, sizes)
    elif isinstance(value, list):
        for item in value:
            _walk_passages(item, seen, sizes)


def checkpoint_anatomy(client: redis.Redis) -> dict[str, Any]:
    """Checkpoint bytes by channel and namespace, write bytes by channel, passage copies."""
    by_channel: Counter[str] = Counter()
    by_ns: Counter[str] = Counter()
    writes: Counter[str] = Counter()
    writes_n: Counter[str] = Counter()
    copies: Counter[str] = Counter()
    sizes: dict[str, int] = {}
    checkpoints = 0
    for raw in client.scan_iter(match="checkpoint:*", count=1000):
        doc = client.json().get(raw.decode())
        if not isinstance(doc, dict):
            continue
        checkpoints += 1
        ns = "search" if doc.get("checkpoint_ns") else "flow"
        values = (doc.get("checkpoint") or {}).get("channel_values") or {}
        values = unpack(values)  # stored packed (``CompactRedisSaver._dump_checkpoint``)
        if isinstance(values, dict) and isinstance(values.get("channel_versions"), dict):
            values = values.get("channel_values") or {}  # the parts packed together
        for channel, value in values.items():
            n = len(json.dumps(value, ensure_ascii=False).encode())
            by_channel[channel] += n
            by_ns[ns] += n
        _walk_passages(values, copies, sizes)
        rest = dict(doc)
        rest["checkpoint"] = {k: v for k, v in doc["checkpoint"].items() if k != "channel_values"}
        by_channel["(checkpoint bookkeeping and metadata)"] += len(json.dumps(rest).encode())
    for raw in client.scan_iter(match="checkpoint_write:*", count=1000):
        doc = client.json().get(raw.decode())
        if not isinstance(doc, dict):
            continue
        writes[doc["channel"]] += len(json.dumps(doc).encode())
        writes_n[doc["channel"]] += 1
        if doc.get("type") == "json" and doc.get("blob"):
            with contextlib.suppress(ValueError):
                _walk_passages(json.loads(base64.b64decode(doc["blob"])), copies, sizes)
    return {
        "checkpoints": checkpoints,
        "checkpoint_json_bytes_by_channel": dict(by_channel.most_common()),
        "checkpoint_json_bytes_by_namespace": dict(by_ns),
        "write_json_bytes_by_channel": dict(writes.most_common()),
        "writes_by_channel": dict(writes_n.most_common()),
        "passages_distinct": len(copies),
        "passage_copies": sum(copies.values()),
        "passage_bytes_once": sum(sizes.values()),
        "passage_bytes_all_copies": sum(sizes[k] * n for k, n in copies.items()),
    }


def diff(before: dict[str, Any], after: dict[str, Any], runs: int) -> dict[str, Any]:
    """Per run, by family."""
    fams = sorted(set(after["bytes"]) | set(before["bytes"]))
    out = {
        f: {
            "bytes": round((after["bytes"].get(f, 0) - before["bytes"].get(f, 0)) / runs),
            "keys": round((after["keys"].get(f, 0) - before["keys"].get(f, 0)) / runs, 1),
        }
        for f in fams
    }
    return {k: v for k, v in sorted(out.items(), key=lambda kv: -kv[1]["bytes"]) if v["keys"]}


def env_of(args: argparse.Namespace, redis_url: str, keys: Path, **extra: Any) -> dict[str, Any]:
    env: dict[str, Any] = {
        "SEEKGRAPH_REDIS_URL": redis_url,
        "SEEKGRAPH_API_KEYS_FILE": keys,
        "SEEKGRAPH_INTERNAL_TOKEN": "bench-internal-secret",
        "SEEKGRAPH_MAX_LIVE_RUNS_PER_KEY": 64,
        "SEEKGRAPH_RATE_LIMIT_PER_MINUTE": 100_000,
        **extra,
    }
    if args.code:
        env["PYTHONPATH"] = str(Path(args.code).resolve())
    if args.retention_minutes is not None:
        env["SEEKGRAPH_RETENTION_MINUTES"] = args.retention_minutes
    return env


#: A research run of three dependent sub-questions (``--flow research``).
RESEARCH = {
    "question": "The VPN, travel and sign-on",
    "flow": "research",
    "plan": [
        {"id": "vpn", "question": "How do I connect to the VPN from a new laptop?"},
        {"id": "meals", "question": "What is the daily meal allowance?", "depends_on": ["vpn"]},
        {"id": "sso", "question": "How do I set up single sign-on?", "depends_on": ["meals"]},
    ],
}


def stream_run(base: str, key: str, question: str, flow: str = "search") -> dict[str, Any]:
    """One streamed run on a new thread (native door): its end status and seconds."""
    body = RESEARCH if flow == "research" else {"question": question}
    with httpx.Client(timeout=300) as c:
        thread = new_thread(c, base, key)
        start = time.monotonic()
        s = read(c, "POST", f"{base}/threads/{thread}/runs", json=body,
                 headers=auth(key))  # fmt: skip
        ends = s.of("end")
        status = str(ends[-1].data.get("status")) if ends else f"no end ({s.status})"
        answer = any(f.event == "answer" for f in s.frames)
        return {"thread": thread, "status": status, "answer": answer, "base": base,
                "seconds": time.monotonic() - start, "door": "stream"}  # fmt: skip


def anatomy(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    redis_proc, url = start_redis(tmp)
    procs: list[Proc] = [redis_proc]
    try:
        keys = tmp / "keys.json"
        key = add_key_to_file(keys, "alice")
        app = start_app(tmp, "anatomy", env_of(args, url, keys))
        procs.append(app)
        client = redis.Redis.from_url(url)
        stream_run(app.url, key, QUESTIONS[0], args.flow)  # warms caches; not counted
        before = snapshot(client)
        client.execute_command("SELECT", 0)
        runs = []
        for i in range(args.runs):
            runs.append(stream_run(app.url, key, QUESTIONS[i % len(QUESTIONS)], args.flow))
        _wait_unlocked(client)
        after = snapshot(client)
        # the checkpoint anatomy of the counted runs only: a Redis of their keys alone
        per_run = diff(before, after, args.runs)
        return {
            "runs": args.runs,
            "statuses": dict(Counter(r["status"] for r in runs)),
            "answered": sum(r["answer"] for r in runs),
            "bytes_per_run": round(
                (sum(after["bytes"].values()) - sum(before["bytes"].values())) / args.runs
            ),
            "keys_per_run": round(
                (sum(after["keys"].values()) - sum(before["keys"].values())) / args.runs, 1
            ),
            "used_memory_after": int(client.info("memory")["used_memory"]),
            "by_family_per_run": per_run,
            "checkpoints_all_runs": checkpoint_anatomy(client),
            "ttl_keys_without_expiry": _without_expiry(client),
        }
    finally:
        for proc in reversed(procs):
            proc.stop()


def _without_expiry(client: redis.Redis) -> dict[str, int]:
    out: Counter[str] = Counter()
    for raw in client.scan_iter(count=1000):
        if client.ttl(raw) == -1:
            out[family_of(raw.decode())] += 1
    return dict(out)


def _wait_unlocked(client: redis.Redis, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while any(True for _ in client.scan_iter(match="seekgraph:lock:*")):
        assert time.monotonic() < deadline, "runs still hold their locks"
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["anatomy", "load"])
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=10, help="anatomy: runs counted")
    parser.add_argument("--flow", default="search", choices=["search", "research"])
    parser.add_argument("--minutes", type=float, default=4.0, help="load: how long")
    parser.add_argument("--concurrency", type=int, default=8, help="load: clients at once")
    parser.add_argument("--sample", type=float, default=5.0, help="load: seconds per sample")
    parser.add_argument(
        "--check-share", type=float, default=0.25, help="load: share of runs checked for forks"
    )
    parser.add_argument("--retention-minutes", type=float, default=None)
    parser.add_argument("--code", help="run the servers from this checkout (before/after)")
    args = parser.parse_args()
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        if args.part == "anatomy":
            out = anatomy(args, Path(tmp))
        else:
            from bench.storage_load import load

            out = load(args, Path(tmp))
    out["command"] = command_line("bench.storage", args).replace(f"--part {args.part}", args.part)
    os.makedirs(args.json.parent, exist_ok=True)
    write(args.json, out, started)


if __name__ == "__main__":
    main()
