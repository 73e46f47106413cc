"""What every index backend shares: the document it stores, and the source that reads it.

``IndexedDocument`` is what ingestion writes (to the embedded SQLite index or to Redis);
``SearchIndex`` is what a backend offers; ``EmbeddedSource`` exposes one named source of
either backend as a ``Source`` (permissions enforced by the index, links to documents the
user cannot see hidden).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from seekgraph.sources.base import User, hide_unseen_links
from seekgraph.sources.indexes.scoring import chunk_embed_text, plain_embed_texts
from seekgraph.state.models import AUTHORITY_BY_KIND, Chunk, Document, Hit


@dataclass
class IndexedDocument:
    """A document ready to be written to the index, with its chunks and ACL."""

    doc_id: str
    source: str
    kind: str
    title: str
    text: str
    chunks: list[Chunk]
    acl: list[str]
    url: str | None = None
    updated_at: str | None = None
    version: str | None = None
    deprecated: bool = False
    superseded_by: str | None = None
    origin: str | None = None

    @property
    def content_hash(self) -> str:
        """Hash of everything that is indexed, so unchanged documents are skipped."""
        payload = json.dumps(
            [
                self.title,
                self.text,
                sorted(self.acl),
                self.url,
                self.updated_at,
                self.version,
                self.deprecated,
                self.superseded_by,
                [dict(c) for c in self.chunks],
            ],
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()


def context_chunks(doc_id: str, kind: str, text: str, indexed: int) -> list[Chunk]:
    """A message's neighbours (kept in its text at ingestion) as readable, citable passages."""
    if kind != "messages":
        return []
    parts = [p for p in text.split("\n\n") if p.strip()][indexed:]
    return [
        {"chunk_id": f"{doc_id}#ctx{i}", "heading": "context", "text": p}
        for i, p in enumerate(parts, start=1)
    ]


def with_message_context(hit: Hit, document_text: str | None) -> Hit:
    """A chat message's hit carries its neighbours (from its document's text) as ``context``."""
    if hit["kind"] == "messages" and document_text:
        around = context_chunks(hit["doc_id"], "messages", document_text, 1)
        if around:
            hit["context"] = "\n\n".join(c["text"] for c in around)
    return hit


class SearchIndex(Protocol):
    """What a ``EmbeddedSource`` needs of an index (SQLite here, Redis in ``redis_index``)."""

    def search(
        self, source: str, query: str, user: User, k: int, mode: str = "hybrid"
    ) -> list[tuple[Any, float]]:
        """(chunk key, score) of the best ``k`` chunks ``user`` may read."""
        ...

    def chunk_hits(self, rows: list[tuple[Any, float]], query: str, authority: int) -> list[Hit]:
        """Hits for search results."""
        ...

    def read(self, source: str, doc_id: str, user: User) -> Document | None:
        """A whole document, permission-checked."""
        ...


class EmbeddedSource:
    """One named source inside an index (the embedded SQLite one or the Redis one)."""

    def __init__(self, index: SearchIndex, name: str, kind: str) -> None:
        self.index = index
        self.name = name
        self.kind = kind
        self.authority = AUTHORITY_BY_KIND.get(kind, 1)

    async def search(self, query: str, user: User, k: int) -> list[Hit]:
        """Hybrid BM25 + dense search over the chunks ``user`` may read."""
        rows = await asyncio.to_thread(self.index.search, self.name, query, user, k)
        hits = await asyncio.to_thread(self.index.chunk_hits, rows, query, self.authority)
        await hide_unseen_links(hits, lambda doc_id: self.visible(doc_id, user))
        return hits

    async def read(self, doc_id: str, user: User) -> Document | None:
        """The whole document, permission-checked."""
        document = await asyncio.to_thread(self.index.read, self.name, doc_id, user)
        if document is not None:
            await hide_unseen_links([document], lambda target: self.visible(target, user))
        return document

    async def visible(self, doc_id: str, user: User) -> bool:
        """Whether ``user`` may read ``doc_id`` now (the index checks its ACL)."""
        return await asyncio.to_thread(self.index.read, self.name, doc_id, user) is not None


def passage_texts(docs: list[IndexedDocument]) -> list[str]:
    """What an index embeds for ``docs``: each chunk in context, then each message alone.

    A message indexed with its previous one gets its own vector too, for the reranker; the
    first ``sum(len(d.chunks))`` vectors are the chunks', in order.
    """
    pairs = [(d, c) for d in docs for c in d.chunks]
    texts = [chunk_embed_text(d.title, c) for d, c in pairs]
    return texts + [t for d, c in pairs for t in plain_embed_texts(d.title, c)]


def id_prefixes(doc_id: str) -> list[str]:
    """``a/b/c`` → ``a/b``, ``a/b/c`` (the ids a document may be kept under)."""
    parts = doc_id.split("/")
    return ["/".join(parts[:i]) for i in range(2, len(parts) + 1)]


def apply_documents(
    index: Any,
    source: str,
    documents: list[IndexedDocument],
    progress: Callable[[int, int], None] | None = None,
    kept: set[str] | None = None,
) -> tuple[int, int, int]:
    """Make the index hold exactly ``documents`` for ``source``: (re-indexed, deleted, chunks).

    Changed documents (by content hash) are re-indexed, unchanged ones kept, missing ones
    deleted — what a folder sync and a connector sync both do. ``kept``: documents not read
    again because their source says they did not change (ids without the source, or a prefix
    ``id/`` of several), left as they are.
    """
    known = index.document_hashes(source)
    changed = [d for d in documents if known.get(d.doc_id) != d.content_hash]
    chunks = int(index.upsert(changed, progress=progress) or 0)
    held = {f"{source}/{k}" for k in kept or ()}
    gone = {
        d
        for d in set(known) - {d.doc_id for d in documents}
        if not held.intersection(id_prefixes(d))
    }
    index.delete(gone)
    return len(changed), len(gone), chunks
