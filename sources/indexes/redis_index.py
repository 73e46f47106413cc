"""The same index on Redis (search and JSON modules): for scale and for several instances.

Chunks are JSON documents under ``{prefix}chunk:`` indexed by RediSearch (BM25 on title,
heading and segmented text; a FLAT cosine vector field; tag fields for source and ACL), so
permissions are applied inside the query. Documents are JSON under ``{prefix}doc:``, and
passage embeddings are cached by content hash in a hash per model. Scores are fused exactly
as in the embedded index.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Callable, Iterable
from typing import Any, cast

import numpy as np
import redis
from redis.commands.search.field import Field, NumericField, TagField, TextField, VectorField
from redis.commands.search.index_definition import IndexDefinition, IndexType
from redis.commands.search.query import Query

from seekgraph.providers.embeddings import Embedder, calibrate_cosine
from seekgraph.providers.terms import segmented
from seekgraph.sources.base import User
from seekgraph.sources.indexes.index_source import (
    IndexedDocument,
    context_chunks,
    passage_texts,
    with_message_context,
)
from seekgraph.sources.indexes.scoring import (
    FIELD_WEIGHTS,
    fuse,
    lexical_terms,
)
from seekgraph.state.models import Chunk, Document, Hit, hit_of

log = logging.getLogger(__name__)
_TAG_SPECIAL = re.compile(r"([,.<>{}\[\]\"':;!@#$%^&*()\-+=~|/\\ ])")


def content_key(text: str) -> str:
    """A passage's key in the vector cache (its text's SHA-256)."""
    return hashlib.sha256(text.encode()).hexdigest()


def tag(value: str) -> str:
    """A value escaped for a RediSearch tag or text query."""
    return _TAG_SPECIAL.sub(r"\\\1", value)


#: Renew a lease its owner holds (compare and set, atomically).
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
#: Delete a lease only when its owner gives it back.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisIndex:
    """Documents, chunks, ACLs and vectors in Redis, searched with RediSearch."""

    def __init__(self, url: str, embedder: Embedder, prefix: str = "seekgraph:index:") -> None:
        self.r = redis.Redis.from_url(url)
        self.embedder = embedder
        self.prefix = prefix
        self.name = f"{prefix}idx"
        # hands missing vectors to the workers (set by a server that has them)
        self.workers: Callable[[RedisIndex, list[str]], None] | None = None
        self._ensure()

    def schema(self) -> list[Field]:
        """The search index's fields; ``preceding`` (the last) is added to an older index."""
        return [
            TagField("$.source", as_name="source"),
            TagField("$.acl[*]", as_name="acl"),
            TagField("$.doc_id", as_name="doc_id"),
            TextField("$.title", as_name="title", weight=FIELD_WEIGHTS["title"]),
            TextField("$.heading_seg", as_name="heading", weight=FIELD_WEIGHTS["heading"]),
            TextField("$.text_seg", as_name="text", weight=FIELD_WEIGHTS["text"]),
            NumericField("$.ord", as_name="ord"),
            VectorField(
                "$.vector",
                "FLAT",
                {"TYPE": "FLOAT32", "DIM": self.embedder.dim, "DISTANCE_METRIC": "COSINE"},
                as_name="vector",
            ),
            TextField("$.preceding_seg", as_name="preceding", weight=FIELD_WEIGHTS["preceding"]),
        ]

    def _ensure(self) -> None:
        try:
            info = self.r.ft(self.name).info()  # type: ignore[no-untyped-call]
        except redis.ResponseError:
            kind = IndexDefinition(prefix=[f"{self.prefix}chunk:"], index_type=IndexType.JSON)  # type: ignore[no-untyped-call]
            try:
                self.r.ft(self.name).create_index(self.schema(), definition=kind)
            except redis.ResponseError as exc:  # another instance, starting too, made it
                if "already exists" not in str(exc).lower():
                    raise
            return
        if "preceding" not in str(info.get("attributes")):  # written by an older version
            self.r.ft(self.name).alter_schema_add([self.schema()[-1]])
            self._wait_indexed()

    def _wait_indexed(self, timeout: float = 60.0) -> None:
        """Wait while RediSearch re-reads stored chunks (after a field is added to the index)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = self.r.ft(self.name).info()  # type: ignore[no-untyped-call]
            if str(info.get("indexing", "0")) == "0":
                return
            time.sleep(0.05)
        log.warning(
            "RediSearch is still indexing %s after %.0f s; searches may miss", self.name, timeout
        )

    def close(self) -> None:
        """Close the connection pool."""
        self.r.close()

    def _json(self, key: str) -> Any:
        """A JSON document (``None`` when missing)."""
        return self.r.json().get(key)

    # -- writing -------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A stored metadata value."""
        value = self.r.hget(f"{self.prefix}meta", key)
        return None if value is None else value.decode()  # type: ignore[union-attr]

    def set_meta(self, key: str, value: str) -> None:
        """Store a metadata value."""
        self.r.hset(f"{self.prefix}meta", key, value)

    def claim(self, key: str, owner: str, seconds: float) -> bool:
        """Take (or renew) a lease every instance on this Redis sees; False while another has it."""
        name, ms = f"{self.prefix}lease:{key}", int(seconds * 1000)
        if self.r.set(name, owner, nx=True, px=ms):
            return True
        return bool(self.r.eval(_RENEW, 1, name, owner, ms))

    def release(self, key: str, owner: str) -> None:
        """Give a lease back (only its owner can)."""
        self.r.eval(_RELEASE, 1, f"{self.prefix}lease:{key}", owner)

    def document_hashes(self, source: str) -> dict[str, str]:
        """doc_id → content hash for every document of ``source``."""
        raw = self.r.hgetall(f"{self.prefix}hashes:{source}")
        return {k.decode(): v.decode() for k, v in raw.items()}  # type: ignore[union-attr]

    def passage_vectors(
        self,
        texts: list[str],
        store: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[np.ndarray]:
        """Vectors by content hash from the cache; only the missing ones are computed.

        ``progress(done, total)`` follows each batch computed, as on the SQLite index. With
        ``workers`` set (``ingest_jobs.WorkerEmbedding``), the missing ones are first handed
        to the workers and read back from the cache; what they leave is computed here.
        """
        if store and self.workers is not None and (absent := self.missing_texts(texts)):
            self.workers(self, absent)
        hashes = [content_key(t) for t in texts]
        found = self._cached(hashes)
        missing = [t for h, t in dict(zip(hashes, texts, strict=True)).items() if h not in found]
        found.update(self._compute(missing, store, progress))
        return [found[h] for h in hashes]

    def _compute(
        self, texts: list[str], store: bool, progress: Callable[[int, int], None] | None = None
    ) -> dict[str, np.ndarray]:
        out = {}
        for start in range(0, len(texts), 64):
            part = [(content_key(t), t) for t in texts[start : start + 64]]
            vecs = self.embedder.embed_passages([t for _, t in part])
            if progress is not None:
                progress(start + len(part), len(texts))
            for (h, _), v in zip(part, vecs, strict=True):
                out[h] = v.astype(np.float32)
            if store:
                self.r.hset(self._cache_key, mapping={h: out[h].tobytes() for h, _ in part})
        return out

    @property
    def _cache_key(self) -> str:
        return f"{self.prefix}emb:{self.embedder.name}"

    def _cached(self, hashes: list[str]) -> dict[str, np.ndarray]:
        cached = self.r.hmget(self._cache_key, hashes) if hashes else []
        return {
            h: np.frombuffer(bytes(v), dtype=np.float32)  # type: ignore[arg-type]
            for h, v in zip(hashes, cached, strict=True)
            if v is not None
        }

    def missing_texts(self, texts: list[str]) -> list[str]:
        """The texts (once each) whose vectors are not in the cache yet."""
        unique = {content_key(t): t for t in texts}
        found = self._cached(list(unique))
        return [t for h, t in unique.items() if h not in found]

    def store_vectors(self, texts: list[str]) -> int:
        """Compute and cache the vectors of ``texts`` not cached yet; how many were computed."""
        missing = self.missing_texts(texts)
        self._compute(missing, store=True)
        return len(missing)

    def upsert(
        self, docs: Iterable[IndexedDocument], progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Write documents (replacing older versions); returns the number of chunks written.

        A document id given twice is written once (the last one): ids are the primary key.
        """
        docs = list({d.doc_id: d for d in docs}.values())
        pairs = [(d, c) for d in docs for c in d.chunks]
        # a message indexed with its previous one: its own vector too, for the reranker
        vectors = self.passage_vectors(passage_texts(docs), progress=progress)[: len(pairs)]
        self.delete(d.doc_id for d in docs)
        pipe = self.r.pipeline(transaction=False)
        for d in docs:
            pipe.json().set(
                f"{self.prefix}doc:{d.doc_id}",
                "$",
                cast(
                    Any,
                    {
                        "doc_id": d.doc_id,
                        "source": d.source,
                        "kind": d.kind,
                        "title": d.title,
                        "text": d.text,
                        "url": d.url,
                        "updated_at": d.updated_at,
                        "version": d.version,
                        "deprecated": d.deprecated,
                        "superseded_by": d.superseded_by,
                        "acl": sorted(set(d.acl)),
                        "chunks": [c["chunk_id"] for c in d.chunks],
                    },
                ),
            )
            pipe.hset(f"{self.prefix}hashes:{d.source}", d.doc_id, d.content_hash)
        for n, ((d, c), vec) in enumerate(zip(pairs, vectors, strict=True)):
            pipe.json().set(
                f"{self.prefix}chunk:{c['chunk_id']}",
                "$",
                cast(
                    Any,
                    {
                        "chunk_id": c["chunk_id"],
                        "doc_id": d.doc_id,
                        "source": d.source,
                        "acl": sorted(set(d.acl)),
                        "title": d.title,
                        "heading": c.get("heading", ""),
                        "heading_seg": segmented(c.get("heading", "")),
                        "text": c["text"],
                        "text_seg": segmented(c["text"]),
                        "preceding_seg": segmented(c.get("preceding", "")),
                        "ord": n,
                        "vector": vec.tolist(),
                    },
                ),
            )
        pipe.execute()
        return len(pairs)

    def delete(self, doc_ids: Iterable[str]) -> None:
        """Remove documents and their chunks."""
        for doc_id in list(doc_ids):
            doc = self._json(f"{self.prefix}doc:{doc_id}")
            if not doc:
                continue
            keys = [f"{self.prefix}chunk:{c}" for c in doc["chunks"]]
            self.r.delete(f"{self.prefix}doc:{doc_id}", *keys)
            self.r.hdel(f"{self.prefix}hashes:{doc['source']}", doc_id)

    # -- reading -------------------------------------------------------------------------

    def _filter(self, source: str, user: User) -> str:
        principals = "|".join(tag(p) for p in sorted(user.principals))
        return f"@source:{{{tag(source)}}} @acl:{{{principals}}}"

    def search(
        self, source: str, query: str, user: User, k: int, mode: str = "hybrid"
    ) -> list[tuple[str, float]]:
        """(chunk key, score) of the best ``k`` chunks ``user`` may read."""
        where = self._filter(source, user)
        depth = max(100, k * 10)
        lexical: dict[str, float] = {}
        words = lexical_terms(query)
        if words:
            text = "|".join(tag(w) for w in words)
            q = (
                Query(f"(@title|heading|text|preceding:({text})) {where}")
                .scorer("BM25STD")
                .with_scores()
                .no_content()
                .paging(0, depth)
                .dialect(2)
            )
            for doc in self.r.ft(self.name).search(q).docs:
                lexical[doc.id] = float(doc.score)
        if mode == "bm25":
            best = sorted(lexical.items(), key=lambda kv: -kv[1])[:k]
            top = best[0][1] if best else 1.0
            return [(key, round(score / top, 4)) for key, score in best]
        vec = self.embedder.embed_queries([query])[0].astype(np.float32).tobytes()
        q = (
            Query(f"({where})=>[KNN {depth} @vector $vec AS dist]")
            .sort_by("dist")
            .return_fields("dist")
            .paging(0, depth)
            .dialect(2)
        )
        docs = self.r.ft(self.name).search(q, query_params={"vec": vec}).docs
        cosines = {d.id: 1.0 - float(d.dist) for d in docs}
        if mode == "dense":
            best = sorted(cosines.items(), key=lambda kv: -kv[1])[:k]
            return [(key, round(score, 4)) for key, score in best]
        cal = calibrate_cosine(
            np.array(list(cosines.values()), dtype=np.float32),
            self.embedder.cosine_low,
            self.embedder.cosine_high,
        )
        dense = {key: float(c) for key, c in zip(cosines, cal, strict=True)}
        return fuse(lexical, dense, k)

    def chunk_hits(self, rows: list[tuple[str, float]], query: str, authority: int) -> list[Hit]:
        """Hits for (chunk key, score) pairs."""
        hits: list[Hit] = []
        for key, score in rows:
            chunk = self._json(key)
            doc = chunk and self._json(f"{self.prefix}doc:{chunk['doc_id']}")
            if not chunk or not doc:
                continue
            hit = hit_of(doc, chunk, authority=authority, score=score, query=query)
            hits.append(with_message_context(hit, doc["text"]))
        return hits

    def read(self, source: str, doc_id: str, user: User) -> Document | None:
        """The whole document, when it belongs to ``source`` and ``user`` may read it."""
        doc = self._json(f"{self.prefix}doc:{doc_id}")
        if not doc or doc["source"] != source or not user.may_read(doc["acl"]):
            return None
        chunks: list[Chunk] = []
        for chunk_id in doc["chunks"]:
            chunk = self._json(f"{self.prefix}chunk:{chunk_id}")
            if chunk:
                chunks.append(
                    {
                        "chunk_id": chunk_id,
                        "heading": chunk.get("heading", ""),
                        "text": chunk["text"],
                    }
                )
        chunks += context_chunks(doc_id, doc["kind"], doc["text"], len(chunks))
        document: Document = {
            "doc_id": doc_id,
            "source": source,
            "kind": doc["kind"],
            "title": doc["title"],
            "text": doc["text"],
            "url": doc["url"],
            "updated_at": doc["updated_at"],
            "version": doc["version"],
            "deprecated": bool(doc["deprecated"]),
            "superseded_by": doc["superseded_by"],
            "chunks": chunks,
        }
        return document

    def count(self, source: str | None = None) -> tuple[int, int]:
        """(documents, chunks) in the index, or in one source."""
        sources = (
            [source]
            if source
            else [k.decode().rsplit(":", 1)[1] for k in self.r.scan_iter(f"{self.prefix}hashes:*")]
        )
        docs = chunks = 0
        for name in sources:
            for doc_id in self.document_hashes(name):
                doc = self._json(f"{self.prefix}doc:{doc_id}")
                docs += 1
                chunks += len(doc["chunks"]) if doc else 0
        return docs, chunks
