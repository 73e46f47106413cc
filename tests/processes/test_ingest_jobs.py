"""Ingestion as jobs: ``seekgraph index --detach`` and scheduled syncs embed on the workers.

Real Redis, real ``seekgraph worker`` processes, the real embedder; the workspace is a copy
of the demo (its own index prefix) so nothing is shared with other modules.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seekgraph.providers.embeddings import Embedder
from seekgraph.server.runs.ingest import ingest_jobs
from seekgraph.sources.base import User
from seekgraph.sources.connectors.connector import Snapshot, sync_connector
from seekgraph.sources.indexes.index_source import EmbeddedSource, IndexedDocument
from seekgraph.sources.indexes.redis_index import RedisIndex
from seekgraph.sources.ingestion.ingest_jobs import IngestTask, WorkerEmbedding
from seekgraph.sources.ingestion.workspace import demo_workspace
from seekgraph.state.models import Chunk
from tests.support import BIN
from tests.support.processes import Proc, start_worker
from tests.support.waiting import WaitTimeout, wait_until

ALICE = User("alice", frozenset({"everyone", "engineering"}))


def write_corpus(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        (folder / f"p{n}.md").write_text(
            f"# Project {n} handbook\n\nThe code word for project {n} is KESTREL{n * 7 + 3}. "
            f"Project {n} reports to the board every {n % 5 + 2} weeks.\n\n## Budget\n\n"
            f"Project {n} may spend {n * 1000 + 500} euros a quarter without approval.\n"
        )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("ingest-jobs")
    workspace = tmp / "workspace"
    shutil.copytree(demo_workspace(), workspace)
    env = {
        "SEEKGRAPH_REDIS_URL": redis_url,
        "SEEKGRAPH_INDEX_BACKEND": "redis",
        "SEEKGRAPH_WORKSPACE": str(workspace),
        "SEEKGRAPH_QUEUE": f"test-ingest-runs-{uuid.uuid4().hex[:8]}",
        "SEEKGRAPH_INGEST_QUEUE": f"test-ingestq-{uuid.uuid4().hex[:8]}",
        "SEEKGRAPH_CLAIM_IDLE_SECONDS": "2",
        "SEEKGRAPH_SHUTDOWN_GRACE_SECONDS": "1",
    }
    world: dict[str, Any] = {"tmp": tmp, "env": env, "workers": []}
    try:
        yield world
    finally:
        for p in world["workers"]:
            p.stop()


def seekgraph(world: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEEKGRAPH_DATA_DIR": str(world["tmp"] / "cli-data"), **world["env"]}
    env.pop("SEEKGRAPH_LLM_MODEL", None)
    return subprocess.run(
        [str(BIN / "seekgraph"), *args], capture_output=True, text=True, env=env, timeout=180
    )


def job_of(out: str) -> str:
    return out.split("ingest job ")[1].split()[0]


def wait_done(world: dict[str, Any], job_id: str, timeout: float = 180) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        shown = seekgraph(world, "ingest", "show", job_id)
        job: dict[str, Any] = json.loads(shown.stdout) if shown.stdout else {}
        return job if job.get("status") in ("done", "failed") else None

    try:
        return wait_until(ended, timeout=timeout, what=f"ingest job {job_id}", interval=0.5)
    except WaitTimeout as e:
        raise AssertionError([str(e), *(w.tail() for w in world["workers"])]) from None


def test_detach_without_redis_says_what_to_set(tmp_path: Path) -> None:
    write_corpus(tmp_path / "docs", 1)
    env = {**os.environ, "SEEKGRAPH_DATA_DIR": str(tmp_path / "data")}
    env.pop("SEEKGRAPH_REDIS_URL", None)
    done = subprocess.run(
        [str(BIN / "seekgraph"), "index", str(tmp_path / "docs"), "--source", "h", "--kind",
         "docs", "--acl", "group:everyone", "--detach"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "SEEKGRAPH_REDIS_URL" in done.stderr and "SEEKGRAPH_INDEX_BACKEND=redis" in done.stderr


def test_a_detached_index_is_embedded_by_the_workers_and_then_searchable(
    world: dict[str, Any],
) -> None:
    corpus = world["tmp"] / "handbook"
    write_corpus(corpus, 80)
    queued = seekgraph(world, "index", str(corpus), "--source", "handbook", "--kind", "docs",
                       "--acl", "group:everyone", "--detach")  # fmt: skip
    assert queued.returncode == 0, queued.stderr
    job_id = job_of(queued.stdout)
    batches = int(queued.stdout.split("(")[1].split()[0])
    assert batches >= 3, queued.stdout

    # nothing is half-written while no worker has taken it
    waiting = json.loads(seekgraph(world, "ingest", "show", job_id).stdout)
    assert waiting["status"] == "queued" and waiting["done"] == 0
    assert "handbook" not in seekgraph(world, "sources", "list").stdout

    world["workers"] += [start_worker(world["tmp"], f"iw{i}", world["env"]) for i in (1, 2)]
    job = wait_done(world, job_id)
    assert job["status"] == "done", job
    assert job["done"] == batches and sum(job["by"].values()) == batches
    assert set(job["by"]) <= {w.url for w in world["workers"]}
    assert (job["indexed"], job["removed"]) == (80, 0)
    assert "handbook\tdocs\tadded from" in seekgraph(world, "sources", "list").stdout

    asked = seekgraph(world, "ask", "What is the code word for project 37?", "--user", "alice")
    assert asked.returncode == 0, asked.stderr
    assert "KESTREL262" in asked.stdout and "handbook/p37" in asked.stdout, asked.stdout

    # a second run re-embeds only what changed, and removes what is gone
    (corpus / "p5.md").write_text(
        "# Project 5 handbook\n\nThe code word for project 5 is OSPREY.\n"
    )
    (corpus / "p6.md").unlink()
    again = seekgraph(world, "index", str(corpus), "--source", "handbook", "--kind", "docs",
                      "--acl", "group:everyone", "--detach")  # fmt: skip
    assert "(1 embedding batches" in again.stdout, again.stdout
    job = wait_done(world, job_of(again.stdout))
    assert (job["indexed"], job["unchanged"], job["removed"]) == (1, 78, 1), job
    asked = seekgraph(world, "ask", "What is the code word for project 5?", "--user", "alice")
    assert "OSPREY" in asked.stdout, asked.stdout


class Counting:
    """The real embedder, counting the passages this process embeds itself."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.passages = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_passages(self, texts: list[str]) -> Any:
        self.passages += len(texts)
        return self.inner.embed_passages(texts)


class Wiki:
    """A connector's system (the remote edge): a fixed set of pages."""

    name, kind = "wiki", "kb"

    def __init__(self, pages: int) -> None:
        self.pages = pages

    def snapshot(self, cursor: str | None) -> Snapshot:
        docs = []
        for n in range(self.pages):
            text = f"Wiki page {n}: the on-call rota for team {n} starts on day {n % 7 + 1}."
            chunk = Chunk(chunk_id=f"wiki/{n}#0", text=text)
            docs.append(IndexedDocument(f"wiki/{n}", "wiki", "kb", f"Page {n}", text, [chunk],
                                        ["group:everyone"]))  # fmt: skip
        return Snapshot(docs)


def test_a_scheduled_sync_hands_its_embedding_to_the_workers(
    world: dict[str, Any], embedder: Embedder, redis_url: str
) -> None:
    if not world["workers"]:
        world["workers"] += [start_worker(world["tmp"], "iw3", world["env"])]
    counting = Counting(embedder)
    index = RedisIndex(redis_url, counting, prefix=f"test:sync:{uuid.uuid4().hex[:8]}:")
    index.workers = WorkerEmbedding(ingest_jobs(index.r, world["env"]["SEEKGRAPH_INGEST_QUEUE"]))
    done = sync_connector(index, Wiki(150))
    assert done.error is None and done.indexed == 150
    assert counting.passages == 0  # every vector came from the workers
    hits = EmbeddedSource(index, "wiki", "kb")
    found = asyncio.run(hits.search("on-call rota of team 42", ALICE, 3))
    assert found and found[0]["source_id"] == "wiki/42#0"

    # no worker reads this queue: the sync waits its patience, then embeds itself
    lonely = RedisIndex(redis_url, counting, prefix=f"test:sync:{uuid.uuid4().hex[:8]}:")
    lonely.workers = WorkerEmbedding(ingest_jobs(lonely.r, f"nobody-{uuid.uuid4().hex}"), 1.0)
    started = time.monotonic()
    done = sync_connector(lonely, Wiki(20))
    assert done.error is None and done.indexed == 20
    assert counting.passages == 20 and time.monotonic() - started < 30
    for i in (index, lonely):
        i.close()


def test_a_batch_left_by_a_killed_worker_is_done_by_another(world: dict[str, Any]) -> None:
    corpus = world["tmp"] / "big"
    write_corpus(corpus, 250)
    if not world["workers"]:
        world["workers"].append(start_worker(world["tmp"], "victim", world["env"]))
    for w in world["workers"][1:]:  # one worker left: it takes every batch
        w.stop()
    victim: Proc = world["workers"][0]
    world["workers"][1:] = []
    queued = seekgraph(world, "index", str(corpus), "--source", "big", "--kind", "docs",
                       "--acl", "group:everyone", "--detach")  # fmt: skip
    job_id = job_of(queued.stdout)
    wait_until(
        lambda: json.loads(seekgraph(world, "ingest", "show", job_id).stdout)["done"] >= 1,
        timeout=120,
        what="the first batch done",
        interval=0.2,
    )
    victim.kill()  # mid-way: one batch in its hands, the rest waiting
    world["workers"][:] = [start_worker(world["tmp"], "heir", world["env"])]
    job = wait_done(world, job_id)
    assert job["status"] == "done" and job["indexed"] == 250, job
    assert job["done"] == job["batches"]
    assert world["workers"][-1].url in job["by"]


def test_ingest_task_from_a_newer_version_is_read() -> None:
    raw = json.dumps({"job_id": "j", "step": "finish", "later_field": 1})
    assert IngestTask.loads(raw).step == "finish"


def test_a_running_registry_follows_sources_added_and_removed_elsewhere(
    tmp_path: Path, embedder: Embedder
) -> None:
    from seekgraph.sources.indexes.embedded import EmbeddedIndex
    from seekgraph.sources.ingestion.workspace import (
        open_workspace,
        register_source,
        sync_source,
        unregister_source,
    )

    registry, _ = open_workspace(demo_workspace(), tmp_path / "idx.sqlite", embedder)
    registry.refresh_seconds = 0.0
    assert "handbook" not in registry.names()
    other = EmbeddedIndex(tmp_path / "idx.sqlite", embedder)  # as `seekgraph index` would
    write_corpus(tmp_path / "docs", 3)
    sync_source(other, tmp_path / "docs", "handbook", "docs", ["group:everyone"])
    register_source(other, {"name": "handbook", "kind": "docs", "path": "", "acl": []})
    assert "handbook" in registry.names()  # no restart
    hits = asyncio.run(registry.get("handbook").search("code word for project 2", ALICE, 3))
    assert hits and hits[0]["doc_id"] == "handbook/p2"
    unregister_source(other, "handbook")
    assert "handbook" not in registry.names() and "kb" in registry.names()
    other.close()
