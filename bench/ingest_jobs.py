"""Ingestion as jobs: how indexing a corpus scales with ``seekgraph worker`` processes.

A fresh corpus per trial (its texts carry the trial's tag, so no vector is cached) is
indexed once in one process (``seekgraph index``, the baseline) and then with ``--detach``
while 1, 2, … worker processes take the embedding batches. Time runs from the command's
start to the job's ``done`` (reading, chunking, queueing, embedding, writing); the workers
are started and warm before. Real Redis, real processes, the real embedder (all-MiniLM int8).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import redis

from bench.report import command_line, write

BIN = Path(sys.executable).parent


def write_corpus(folder: Path, count: int, tag: str) -> None:
    """``count`` handbook pages of two sections each, every sentence unique to ``tag``."""
    folder.mkdir(parents=True)
    for n in range(count):
        (folder / f"p{n}.md").write_text(
            f"# {tag} project {n}\n\nThe {tag} code word for project {n} is K{n * 7 + 3}. "
            f"Project {n} of {tag} reports to the board every {n % 5 + 2} weeks, and its "
            f"owner keeps the {tag} risk register current.\n\n## Budget\n\n"
            f"Project {n} ({tag}) may spend {n * 1000 + 500} euros a quarter without approval; "
            f"more needs the {tag} finance lead.\n"
        )


def seekgraph(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(BIN / "seekgraph"), *args], capture_output=True, text=True,
                          env=env, timeout=1800)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return done


def wait_done(client: redis.Redis, queue: str, job_id: str) -> dict[str, Any]:
    from seekgraph.server.runs.ingest import ingest_jobs

    jobs = ingest_jobs(client, queue)
    while True:
        job = jobs.status(job_id)
        if job is not None and job["status"] in ("done", "failed"):
            return job
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument(
        "--embedding-threads", type=int, help="SEEKGRAPH_EMBEDDING_THREADS of every process"
    )
    args = parser.parse_args()
    from tests.support.processes import Proc, start_redis, start_worker

    started = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    redis_proc, url = start_redis(tmp)
    workers: list[Proc] = []
    try:
        workspace = tmp / "workspace"
        from seekgraph.sources.ingestion.workspace import demo_workspace

        shutil.copytree(demo_workspace(), workspace)
        queue = f"bench-ingestq-{uuid.uuid4().hex[:8]}"
        env = {
            **os.environ,
            "SEEKGRAPH_REDIS_URL": url,
            "SEEKGRAPH_INDEX_BACKEND": "redis",
            "SEEKGRAPH_WORKSPACE": str(workspace),
            "SEEKGRAPH_INGEST_QUEUE": queue,
            "SEEKGRAPH_QUEUE": f"bench-runq-{uuid.uuid4().hex[:8]}",
            "SEEKGRAPH_DATA_DIR": str(tmp / "cli-data"),
        }
        env.pop("SEEKGRAPH_LLM_MODEL", None)
        if args.embedding_threads:
            env["SEEKGRAPH_EMBEDDING_THREADS"] = str(args.embedding_threads)
        client = redis.Redis.from_url(url)
        seekgraph(env, "sources", "list")  # the demo workspace indexed once, before timing
        systems: dict[str, dict[str, Any]] = {}

        def index(label: str, detach: bool) -> dict[str, Any]:
            tag = f"t{uuid.uuid4().hex[:6]}"
            corpus = tmp / tag
            write_corpus(corpus, args.docs, tag)
            flags = ["--detach"] if detach else []
            t0 = time.monotonic()
            out = seekgraph(env, "index", str(corpus), "--source", tag, "--kind", "docs",
                            "--acl", "group:everyone", *flags)  # fmt: skip
            row: dict[str, Any] = {}
            if detach:
                job = wait_done(client, queue, out.stdout.split("ingest job ")[1].split()[0])
                assert job["status"] == "done", job
                row = {"passages": job["passages"], "batches": job["batches"],
                       "batches_by_worker": sorted(job["by"].values(), reverse=True)}  # fmt: skip
            seconds = time.monotonic() - t0
            row = {"seconds": round(seconds, 2), "documents": args.docs, **row}
            if "passages" in row:
                row["passages_per_s"] = round(row["passages"] / seconds, 1)
            systems[label] = row
            print(label, row, flush=True)
            return row

        base = index("in_process", detach=False)
        for n in [int(x) for x in args.workers.split(",")]:
            while len(workers) < n:
                workers.append(start_worker(tmp, f"w{len(workers)}", env))
            index(f"{n}_workers", detach=True)
        one = systems.get("1_workers", {}).get("seconds")
        scaling = {k: round(one / v["seconds"], 2) for k, v in systems.items() if one}
        out = {
            "command": command_line("bench.ingest_jobs", args),
            "systems": systems,
            "speedup_over_1_worker": scaling,
            "in_process_seconds": base["seconds"],
        }
        write(args.json, out, started)
    finally:
        for w in workers:
            w.stop()
        redis_proc.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
