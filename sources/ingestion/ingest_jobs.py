"""Ingestion as jobs: the embedding of a folder or a connector, split into batches any worker takes.

Embedding is what makes indexing slow; reading and chunking are not. So a job is planned
where the documents are read (``plan``): the documents to write are kept in Redis, and the
passages whose vectors are not cached yet are cut into batches, each a task on the ingest
queue. A worker embeds a batch into the index's vector cache (by content hash, so a batch
done twice costs nothing more) and marks it done; whoever marks the last batch queues the
``finish`` task, which writes the documents — every vector now comes from the cache — and
removes those gone, as ``seekgraph index`` does in one process.

A scheduled connector sync uses the same batches without a job record (``WorkerEmbedding``):
the syncing instance hands the missing vectors to the workers and waits for the cache to
fill, computing itself what nobody took within a timeout.
"""

from __future__ import annotations

import json
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import redis

from seekgraph.sources.indexes.index_source import IndexedDocument, apply_documents, passage_texts
from seekgraph.sources.indexes.redis_index import RedisIndex
from seekgraph.sources.ingestion.workspace import register_source
from seekgraph.state.models import Chunk

#: Passages per batch: one ``embed_passages`` call of the index.
BATCH = 64
#: How long a job's record and documents are kept after it was planned.
KEEP_S = 7 * 24 * 3600
PREFIX = "seekgraph:ingest:"


@dataclass
class IngestTask:
    """One entry of the ingest queue: embed one batch of a job, or finish the job."""

    job_id: str
    step: str = "embed"
    """``embed`` (``texts`` into the cache of the index at ``prefix``) or ``finish``."""
    prefix: str = ""
    model: str = ""
    batch: int = 0
    texts: list[str] = field(default_factory=list)

    def dumps(self) -> str:
        """As the stream entry's payload."""
        return json.dumps(asdict(self))

    @classmethod
    def loads(cls, raw: bytes | str) -> IngestTask:
        """From a stream entry's payload (fields of a newer version are ignored)."""
        data = json.loads(raw)
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


class IngestError(RuntimeError):
    """A job cannot go on; the message says why."""


def _pack(documents: list[IndexedDocument]) -> bytes:
    return zlib.compress(json.dumps([asdict(d) for d in documents]).encode())


def _unpack(raw: bytes) -> list[IndexedDocument]:
    out = []
    for d in json.loads(zlib.decompress(raw)):
        d["chunks"] = [Chunk(**c) for c in d["chunks"]]  # type: ignore[typeddict-item]
        out.append(IndexedDocument(**d))
    return out


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class IngestJobs:
    """Job records on Redis (``{prefix}{job}`` hash, its documents, its done batches)."""

    def __init__(
        self, client: redis.Redis, enqueue: Callable[[IngestTask], None], prefix: str = PREFIX
    ) -> None:
        self.r = client
        self.enqueue = enqueue
        self.prefix = prefix

    def _key(self, job_id: str, part: str = "") -> str:
        return f"{self.prefix}{job_id}{part}"

    def plan(
        self,
        index: RedisIndex,
        spec: dict[str, Any],
        documents: list[IndexedDocument],
        problems: list[str] | None = None,
    ) -> tuple[str, int]:
        """Keep ``documents`` for source ``spec['name']`` and queue their embedding.

        Returns the job's id and its number of batches (0: every vector is cached; the
        ``finish`` task is queued at once).
        """
        known = index.document_hashes(spec["name"])
        changed = [d for d in documents if known.get(d.doc_id) != d.content_hash]
        missing = index.missing_texts(passage_texts(changed))
        batches = -(-len(missing) // BATCH)
        job_id = uuid.uuid4().hex[:16]
        record: dict[Any, Any] = {
            "job_id": job_id,
            "status": "queued",
            "source": spec["name"],
            "spec": json.dumps(spec),
            "prefix": index.prefix,
            "model": index.embedder.name,
            "documents": len(documents),
            "changed": len(changed),
            "passages": len(missing),
            "batches": batches,
            "problems": json.dumps(problems or []),
            "created_at": time.time(),
        }
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(self._key(job_id), mapping=record)
        pipe.set(self._key(job_id, ":docs"), _pack(documents))
        pipe.zadd(f"{self.prefix}jobs", {job_id: float(record["created_at"])})
        for part in ("", ":docs"):
            pipe.expire(self._key(job_id, part), KEEP_S)
        pipe.execute()
        self.queue_batches(index, job_id, missing)
        if not batches:
            self.enqueue(IngestTask(job_id, step="finish", prefix=index.prefix,
                                    model=index.embedder.name))  # fmt: skip
        return job_id, batches

    def queue_batches(self, index: RedisIndex, job_id: str, texts: list[str]) -> int:
        """Queue ``texts`` as embedding batches of job ``job_id``; how many batches."""
        for n, start in enumerate(range(0, len(texts), BATCH)):
            self.enqueue(IngestTask(job_id, prefix=index.prefix, model=index.embedder.name,
                                    batch=n, texts=texts[start : start + BATCH]))  # fmt: skip
        return -(-len(texts) // BATCH)

    def done(self, job_id: str) -> int:
        """How many of the job's batches are done."""
        return int(self.r.scard(self._key(job_id, ":done")))

    def status(self, job_id: str) -> dict[str, Any] | None:
        """The job's record with its progress (``done`` batches, ``by`` worker), or None."""
        raw: Any = self.r.hgetall(self._key(job_id))
        if not raw:
            return None
        out: dict[str, Any] = {_text(k): _text(v) for k, v in raw.items()}
        for name in ("documents", "changed", "passages", "batches"):
            out[name] = int(out.get(name, 0))
        for name in ("indexed", "unchanged", "removed", "chunks"):
            if name in out:
                out[name] = int(out[name])
        for name in ("created_at", "finished_at"):
            if name in out:
                out[name] = float(out[name])
        out["done"] = self.done(job_id)
        by: Any = self.r.hgetall(self._key(job_id, ":by"))
        out["by"] = {_text(k): int(v) for k, v in by.items()}
        out["problems"] = json.loads(out.get("problems") or "[]")
        out.pop("spec", None)
        return out

    def recent(self, limit: int = 20) -> list[dict[str, Any]]:
        """The newest jobs first."""
        ids: Any = self.r.zrevrange(f"{self.prefix}jobs", 0, limit - 1)
        return [s for s in (self.status(_text(i)) for i in ids) if s is not None]

    def embed(self, index: RedisIndex, task: IngestTask, worker: str) -> None:
        """Embed one batch into the cache; the last batch of a job queues its ``finish``."""
        job = self._key(task.job_id)
        status = self.r.hget(job, "status")
        if status is None or _text(status) in ("done", "failed"):
            return  # expired or already written: nothing to add
        index.store_vectors(task.texts)
        pipe = self.r.pipeline(transaction=True)
        pipe.sadd(self._key(task.job_id, ":done"), task.batch)
        pipe.expire(self._key(task.job_id, ":done"), KEEP_S)
        pipe.hmget(job, ["batches", "finish"])
        added, _, (batches, finish) = pipe.execute()
        if added:
            self.r.hset(job, "status", "embedding")
            self.r.hincrby(self._key(task.job_id, ":by"), worker, 1)
            self.r.expire(self._key(task.job_id, ":by"), KEEP_S)
        done = self.done(task.job_id)
        # only the worker whose batch completed the set queues the finish (a batch done
        # twice adds nothing, so at most one more finish, which writes nothing new)
        if added and done >= int(batches or 0) and finish != b"no":
            self.enqueue(IngestTask(task.job_id, step="finish", prefix=task.prefix,
                                    model=task.model))  # fmt: skip

    def finish(self, index: RedisIndex, task: IngestTask) -> dict[str, Any]:
        """Write the job's documents (vectors from the cache), remove those gone, register."""
        job = self._key(task.job_id)
        raw: Any = self.r.get(self._key(task.job_id, ":docs"))
        spec_raw = self.r.hget(job, "spec")
        if raw is None or spec_raw is None:
            status = self.r.hget(job, "status")
            if status is not None and _text(status) == "done":
                return self.status(task.job_id) or {}
            raise IngestError(f"ingest job {task.job_id}: its documents expired or were removed")
        spec = json.loads(spec_raw)
        self.r.hset(job, mapping={"status": "writing"})
        documents = _unpack(raw)
        indexed, removed, chunks = apply_documents(index, spec["name"], documents)
        register_source(index, spec)  # type: ignore[arg-type]
        now = time.time()
        problems = json.loads(_text(self.r.hget(job, "problems") or "[]"))
        index.set_meta(
            f"synced:{spec['name']}",
            json.dumps({"at": now, "indexed": indexed, "problems": len(problems)}),
        )
        self.r.hset(
            job,
            mapping={
                "status": "done",
                "indexed": indexed,
                "unchanged": len(documents) - indexed,
                "removed": removed,
                "chunks": chunks,
                "finished_at": now,
            },
        )
        self.r.delete(self._key(task.job_id, ":docs"))
        return self.status(task.job_id) or {}

    def fail(self, job_id: str, error: str) -> None:
        """The job stops; its record says why (what was indexed before stays)."""
        self.r.hset(self._key(job_id), mapping={"status": "failed", "error": error})


class WorkerEmbedding:
    """Hands an index's missing vectors to the workers and waits for the cache to fill.

    Set as ``RedisIndex.workers`` by an instance that syncs connectors on a schedule. When no
    batch completes for ``patience_s`` (no worker running, or all busy) it returns, and the
    index computes the rest itself: a sync never waits for ever.
    """

    def __init__(self, jobs: IngestJobs, patience_s: float = 60.0, poll_s: float = 0.2) -> None:
        self.jobs = jobs
        self.patience_s = patience_s
        self.poll_s = poll_s

    def __call__(self, index: RedisIndex, texts: list[str]) -> None:
        """Queue ``texts`` in batches; return when done or when the workers stop progressing."""
        job_id = uuid.uuid4().hex[:16]
        r, key = self.jobs.r, self.jobs._key(job_id)
        batches = -(-len(texts) // BATCH)
        r.hset(key, mapping={"job_id": job_id, "status": "embedding", "batches": batches,
                             "created_at": time.time(), "finish": "no"})  # fmt: skip
        r.expire(key, KEEP_S)
        self.jobs.queue_batches(index, job_id, texts)
        last, seen = time.monotonic(), 0
        try:
            while seen < batches and time.monotonic() - last < self.patience_s:
                time.sleep(self.poll_s)
                now = self.jobs.done(job_id)
                if now > seen:
                    seen, last = now, time.monotonic()
        finally:  # batches not taken yet are skipped by the workers from now on
            r.hset(key, "status", "done")
