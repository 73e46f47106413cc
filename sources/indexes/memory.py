"""An in-memory source: the test double that ships beside the real ones.

It keeps documents in a list, scores by share of query terms, honours ACLs exactly like the
real index, and can be told to fail or stall to exercise the graph's failure paths.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from seekgraph.providers.terms import coverage, term_set, terms
from seekgraph.sources.base import User, hide_unseen_links
from seekgraph.state.models import AUTHORITY_BY_KIND, Document, Hit


@dataclass
class MemoryDocument:
    """A document held by ``InMemorySource``; each paragraph becomes a passage."""

    doc_id: str
    title: str
    text: str
    acl: list[str]
    url: str | None = None
    updated_at: str | None = None
    version: str | None = None
    deprecated: bool = False
    superseded_by: str | None = None
    paragraphs: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.paragraphs = [p.strip() for p in self.text.split("\n\n") if p.strip()]


class InMemorySource:
    """A ``Source`` over ``MemoryDocument``s; ``fail_with`` and ``delay`` simulate outages."""

    def __init__(
        self,
        name: str,
        kind: str,
        documents: list[MemoryDocument],
        *,
        fail_with: BaseException | None = None,
        delay: float = 0.0,
    ) -> None:
        self.name = name
        self.kind = kind
        self.authority = AUTHORITY_BY_KIND.get(kind, 1)
        self.documents = {d.doc_id: d for d in documents}
        self.fail_with = fail_with
        self.delay = delay
        self.searches: list[tuple[str, str]] = []
        self.reads: list[tuple[str, str]] = []

    async def search(self, query: str, user: User, k: int) -> list[Hit]:
        """Passages ranked by the share of query terms they contain."""
        self.searches.append((user.name, query))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail_with is not None:
            raise self.fail_with
        qterms = terms(query)
        scored: list[tuple[float, MemoryDocument, int]] = []
        for doc in self.documents.values():
            if not user.may_read(doc.acl):
                continue
            for i, para in enumerate(doc.paragraphs):
                score = coverage(qterms, term_set(f"{doc.title} {para}"))
                if score > 0:
                    scored.append((score, doc, i))
        scored.sort(key=lambda t: -t[0])
        hits = [self._hit(doc, i, score, query) for score, doc, i in scored[:k]]
        await hide_unseen_links(hits, lambda doc_id: self.visible(doc_id, user))
        return hits

    async def visible(self, doc_id: str, user: User) -> bool:
        """Whether ``user`` may read ``doc_id`` now."""
        doc = self.documents.get(doc_id)
        return doc is not None and user.may_read(doc.acl)

    async def read(self, doc_id: str, user: User) -> Document | None:
        """The whole document when ``user`` may read it."""
        self.reads.append((user.name, doc_id))
        doc = self.documents.get(doc_id)
        if doc is None or not user.may_read(doc.acl):
            return None
        document: Document = {
            "doc_id": doc.doc_id,
            "source": self.name,
            "kind": self.kind,
            "title": doc.title,
            "text": doc.text,
            "url": doc.url,
            "updated_at": doc.updated_at,
            "version": doc.version,
            "deprecated": doc.deprecated,
            "superseded_by": doc.superseded_by,
            "chunks": [
                {"chunk_id": f"{doc.doc_id}#{i}", "text": p} for i, p in enumerate(doc.paragraphs)
            ],
        }
        await hide_unseen_links([document], lambda target: self.visible(target, user))
        return document

    def _hit(self, doc: MemoryDocument, i: int, score: float, query: str) -> Hit:
        return {
            "source_id": f"{doc.doc_id}#{i}",
            "doc_id": doc.doc_id,
            "source": self.name,
            "kind": self.kind,
            "authority": self.authority,
            "title": doc.title,
            "snippet": doc.paragraphs[i],
            "score": round(score, 4),
            "url": doc.url,
            "updated_at": doc.updated_at,
            "version": doc.version,
            "deprecated": doc.deprecated,
            "superseded_by": doc.superseded_by,
            "query": query,
        }
