"""The embedded index: SQLite with FTS5 (BM25) and dense vectors, fused into one score.

One file holds documents, chunks, per-document ACLs, vectors and an embedding cache keyed
by content hash. ``sources.indexes.index_source.EmbeddedSource`` exposes one named source of it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from seekgraph.providers.embeddings import Embedder, calibrate_cosine, text_hash
from seekgraph.providers.terms import segmented
from seekgraph.sources.base import User
from seekgraph.sources.indexes.embedded_schema import claim_lease, migrate, release_lease
from seekgraph.sources.indexes.index_source import (
    IndexedDocument,
    context_chunks,
    passage_texts,
    with_message_context,
)
from seekgraph.sources.indexes.scoring import (
    FIELD_WEIGHTS,
    chunk_embed_text,
    fuse,
    lexical_terms,
)
from seekgraph.state.models import Chunk, Document, Hit, hit_of


def fts_query(query: str) -> str | None:
    """The FTS5 match expression of a query: its content words, quoted, any of them."""
    tokens = [t for t in (w.replace('"', "") for w in lexical_terms(query)) if t]
    if not tokens:
        return None
    return " OR ".join(f'"{t}"' for t in tokens)


#: The ``documents`` columns a hit is made from, in the order ``chunk_hits`` selects them
#: (``text`` only for messages: it holds their neighbours).
DOC_FIELDS = (
    "doc_id",
    "source",
    "kind",
    "title",
    "url",
    "updated_at",
    "version",
    "deprecated",
    "superseded_by",
    "text",
)


class EmbeddedIndex:
    """A SQLite file holding documents, chunks, ACLs and vectors for several sources."""

    def __init__(self, path: str | Path, embedder: Embedder) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False)
        migrate(self._conn)
        self._matrices: dict[str, tuple[np.ndarray, list[int], list[str]]] = {}
        if self.get_meta("embedding_model") != embedder.name:
            self._reembed()

    def _reembed(self) -> None:
        """Give every chunk a vector from the current embedding model (after a model change).

        Vectors already computed by this model come from the cache; the others are computed.
        """
        with self._lock:
            rows = self._conn.execute(
                "SELECT c.id, d.title, c.heading, c.text, c.preceding FROM chunks c"
                " JOIN documents d ON d.doc_id = c.doc_id ORDER BY c.id"
            ).fetchall()
        texts = [
            chunk_embed_text(t, {"chunk_id": "", "heading": h, "text": x, "preceding": p})
            for _, t, h, x, p in rows
        ]
        vectors = self._embed_cached(texts)
        with self._lock, self._conn:
            self._conn.executemany(
                "UPDATE chunks SET vector = ? WHERE id = ?",
                [
                    (v.astype(np.float32).tobytes(), r[0])
                    for r, v in zip(rows, vectors, strict=True)
                ],
            )
            self._conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('embedding_model', ?)", (self.embedder.name,)
            )

    def close(self) -> None:
        """Close the database file."""
        with self._lock:
            self._conn.close()

    # -- writing ---------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A stored metadata value."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Store a metadata value."""
        with self._lock, self._conn:
            self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def claim(self, key: str, owner: str, seconds: float) -> bool:
        """Take (or renew) a lease all processes on this index see; False while another has it."""
        with self._lock, self._conn:
            return claim_lease(self._conn, key, owner, seconds)

    def release(self, key: str, owner: str) -> None:
        """Give a lease back (only its owner can)."""
        with self._lock, self._conn:
            release_lease(self._conn, key, owner)

    def document_hashes(self, source: str) -> dict[str, str]:
        """doc_id → content hash for every document of ``source``."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT doc_id, content_hash FROM documents WHERE source = ?", (source,)
            ).fetchall()
        return {r[0]: r[1] for r in rows}

    def upsert(
        self, docs: Iterable[IndexedDocument], progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Write documents (replacing older versions); returns the number of chunks written.

        A document id given twice is written once (the last one): ids are the primary key.
        """
        docs = list({d.doc_id: d for d in docs}.values())
        all_chunks = [(d, c) for d in docs for c in d.chunks]
        vectors = self._embed_cached(passage_texts(docs), progress=progress)[: len(all_chunks)]
        written = 0
        with self._lock, self._conn:
            for d in docs:
                self._delete_doc(d.doc_id)
                self._conn.execute(
                    "INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        d.doc_id,
                        d.source,
                        d.kind,
                        d.title,
                        d.text,
                        d.url,
                        d.updated_at,
                        d.version,
                        int(d.deprecated),
                        d.superseded_by,
                        d.content_hash,
                        d.origin,
                    ),
                )
                self._conn.executemany(
                    "INSERT INTO acl VALUES (?, ?)", [(d.doc_id, p) for p in sorted(set(d.acl))]
                )
            for (d, c), vec in zip(all_chunks, vectors, strict=True):
                cur = self._conn.execute(
                    "INSERT INTO chunks (chunk_id, doc_id, ord, heading, text, vector, preceding)"
                    " VALUES (?,?,?,?,?,?,?)",
                    (
                        c["chunk_id"],
                        d.doc_id,
                        written,
                        c.get("heading", ""),
                        c["text"],
                        vec.astype(np.float32).tobytes(),
                        c.get("preceding", ""),
                    ),
                )
                self._conn.execute(
                    "INSERT INTO chunks_fts (rowid, title, heading, text, preceding)"
                    " VALUES (?,?,?,?,?)",
                    (
                        cur.lastrowid,
                        segmented(d.title),
                        segmented(c.get("heading", "")),
                        segmented(c["text"]),
                        segmented(c.get("preceding", "")),
                    ),
                )
                written += 1
        self._matrices.clear()
        return written

    def delete(self, doc_ids: Iterable[str]) -> None:
        """Remove documents, their chunks, vectors and ACL entries."""
        with self._lock, self._conn:
            for doc_id in doc_ids:
                self._delete_doc(doc_id)
        self._matrices.clear()

    def _delete_doc(self, doc_id: str) -> None:
        rows = self._conn.execute("SELECT id FROM chunks WHERE doc_id = ?", (doc_id,)).fetchall()
        self._conn.executemany("DELETE FROM chunks_fts WHERE rowid = ?", rows)
        self._conn.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
        self._conn.execute("DELETE FROM acl WHERE doc_id = ?", (doc_id,))
        self._conn.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))

    def passage_vectors(self, texts: list[str], store: bool = True) -> list[np.ndarray]:
        """Passage vectors from the cache (by content hash), computing only what is missing."""
        return self._embed_cached(texts, store)

    def _embed_cached(
        self,
        texts: list[str],
        store: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[np.ndarray]:
        """Vectors of ``texts``, computing only the missing ones.

        ``progress(done, total)`` follows each batch computed, so indexing a big file moves.
        """
        hashes = [text_hash(t) for t in texts]
        model = self.embedder.name
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for h in set(hashes):
                row = self._conn.execute(
                    "SELECT vector FROM embedding_cache WHERE content_hash = ? AND model = ?",
                    (h, model),
                ).fetchone()
                if row is not None:
                    found[h] = np.frombuffer(row[0], dtype=np.float32)
        missing = [
            (h, t) for h, t in dict(zip(hashes, texts, strict=True)).items() if h not in found
        ]
        batch = 64  # the embedder batches by length inside this; progress follows each
        for start in range(0, len(missing), batch):
            part = missing[start : start + batch]
            vecs = self.embedder.embed_passages([t for _, t in part])
            if progress is not None:
                progress(start + len(part), len(missing))
            if not store:
                found.update({h: v for (h, _), v in zip(part, vecs, strict=True)})
                continue
            with self._lock, self._conn:
                for (h, _), v in zip(part, vecs, strict=True):
                    found[h] = v
                    self._conn.execute(
                        "INSERT OR REPLACE INTO embedding_cache VALUES (?,?,?)",
                        (h, model, v.astype(np.float32).tobytes()),
                    )
        return [found[h] for h in hashes]

    # -- reading ---------------------------------------------------------------------------

    def _matrix(self, source: str) -> tuple[np.ndarray, list[int], list[str]]:
        if source not in self._matrices:
            rows = self._conn.execute(
                "SELECT c.id, c.doc_id, c.vector FROM chunks c JOIN documents d"
                " ON d.doc_id = c.doc_id WHERE d.source = ? ORDER BY c.id",
                (source,),
            ).fetchall()
            dim = self.embedder.dim
            matrix = (
                np.vstack([np.frombuffer(r[2], dtype=np.float32) for r in rows])
                if rows
                else np.zeros((0, dim), dtype=np.float32)
            )
            self._matrices[source] = (matrix, [r[0] for r in rows], [r[1] for r in rows])
        return self._matrices[source]

    def _allowed_docs(self, source: str, user: User) -> set[str]:
        principals = sorted(user.principals)
        marks = ",".join("?" * len(principals))
        rows = self._conn.execute(
            f"SELECT DISTINCT a.doc_id FROM acl a JOIN documents d ON d.doc_id = a.doc_id"
            f" WHERE d.source = ? AND a.principal IN ({marks})",
            (source, *principals),
        ).fetchall()
        return {r[0] for r in rows}

    def search(
        self, source: str, query: str, user: User, k: int, mode: str = "hybrid"
    ) -> list[tuple[int, float]]:
        """(chunk row id, score) of the best ``k`` chunks ``user`` may read.

        ``mode``: ``hybrid`` (the default: BM25 and dense fused), ``bm25`` or ``dense`` alone
        (baselines for benchmarks).
        """
        with self._lock:
            allowed = self._allowed_docs(source, user)
            if not allowed:
                return []
            lexical: dict[int, float] = {}
            fts = fts_query(query)
            weights = ", ".join(str(w) for w in FIELD_WEIGHTS.values())
            if fts:
                rows = self._conn.execute(
                    f"SELECT f.rowid, -bm25(chunks_fts, {weights}) AS s, c.doc_id"
                    " FROM chunks_fts f JOIN chunks c ON c.id = f.rowid"
                    " JOIN documents d ON d.doc_id = c.doc_id"
                    " WHERE chunks_fts MATCH ? AND d.source = ? ORDER BY s DESC LIMIT ?",
                    (fts, source, max(100, k * 10)),
                ).fetchall()
                lexical = {r[0]: float(r[1]) for r in rows if r[2] in allowed}
            if mode == "bm25":
                best = sorted(lexical.items(), key=lambda kv: -kv[1])[:k]
                top = best[0][1] if best else 1.0
                return [(rowid, round(score / top, 4)) for rowid, score in best]
            matrix, ids, doc_ids = self._matrix(source)
        dense: dict[int, float] = {}
        if mode == "dense" and len(ids):
            qv = self.embedder.embed_queries([query])[0]
            cos = matrix @ qv
            ranked = [int(i) for i in np.argsort(-cos) if doc_ids[i] in allowed][:k]
            return [(ids[i], round(float(cos[i]), 4)) for i in ranked]
        if len(ids):
            qv = self.embedder.embed_queries([query])[0]
            cos = matrix @ qv
            cal = calibrate_cosine(cos, self.embedder.cosine_low, self.embedder.cosine_high)
            order = np.argsort(-cos)[: max(100, k * 10)]
            dense = {ids[i]: float(cal[i]) for i in order if doc_ids[i] in allowed}
        return fuse(lexical, dense, k)

    def chunk_hits(self, rows: list[tuple[int, float]], query: str, authority: int) -> list[Hit]:
        """Turn (chunk row id, score) pairs into hits."""
        hits: list[Hit] = []
        with self._lock:
            for rowid, score in rows:
                r = self._conn.execute(
                    "SELECT c.chunk_id, c.heading, c.text, d.doc_id, d.source, d.kind, d.title,"
                    " d.url, d.updated_at, d.version, d.deprecated, d.superseded_by,"
                    " CASE WHEN d.kind = 'messages' THEN d.text END"  # neighbours, messages only
                    " FROM chunks c JOIN documents d ON d.doc_id = c.doc_id WHERE c.id = ?",
                    (rowid,),
                ).fetchone()
                if r is None:
                    continue
                chunk: Chunk = {"chunk_id": r[0], "heading": r[1], "text": r[2]}
                doc = dict(zip(DOC_FIELDS, r[3:], strict=True))
                hit = hit_of(doc, chunk, authority=authority, score=score, query=query)
                hits.append(with_message_context(hit, doc["text"]))
        return hits

    def read(self, source: str, doc_id: str, user: User) -> Document | None:
        """The whole document, when it belongs to ``source`` and ``user`` may read it."""
        with self._lock:
            r = self._conn.execute(
                "SELECT doc_id, source, kind, title, text, url, updated_at, version, deprecated,"
                " superseded_by FROM documents WHERE doc_id = ? AND source = ?",
                (doc_id, source),
            ).fetchone()
            if r is None:
                return None
            acl = {
                a[0]
                for a in self._conn.execute("SELECT principal FROM acl WHERE doc_id = ?", (doc_id,))
            }
            if not user.may_read(acl):
                return None
            chunks = self._conn.execute(
                "SELECT chunk_id, heading, text FROM chunks WHERE doc_id = ? ORDER BY ord, id",
                (doc_id,),
            ).fetchall()
        stored: list[Chunk] = [{"chunk_id": c[0], "heading": c[1], "text": c[2]} for c in chunks]
        document: Document = {
            "doc_id": r[0],
            "source": r[1],
            "kind": r[2],
            "title": r[3],
            "text": r[4],
            "url": r[5],
            "updated_at": r[6],
            "version": r[7],
            "deprecated": bool(r[8]),
            "superseded_by": r[9],
            "chunks": stored + context_chunks(r[0], r[2], r[4], len(stored)),
        }
        return document

    def count(self, source: str | None = None) -> tuple[int, int]:
        """(documents, chunks) in the index, or in one source."""
        with self._lock:
            if source is None:
                d = self._conn.execute("SELECT count(*) FROM documents").fetchone()[0]
                c = self._conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            else:
                d = self._conn.execute(
                    "SELECT count(*) FROM documents WHERE source = ?", (source,)
                ).fetchone()[0]
                c = self._conn.execute(
                    "SELECT count(*) FROM chunks c JOIN documents d ON d.doc_id = c.doc_id"
                    " WHERE d.source = ?",
                    (source,),
                ).fetchone()[0]
        return int(d), int(c)
