"""A source backed by an existing search service over HTTP.

Protocol (JSON): ``POST {search_url}`` with ``{"query", "k", "user": {"name", "groups"}}``
answers ``{"hits": [{"doc_id", "title", "snippet", "score", "acl"?, "url"?, "updated_at"?,
"version"?, "deprecated"?, "superseded_by"?, "chunk_id"?}]}``; ``POST {read_url}`` with
``{"doc_id", "user"}`` answers a document (``{"doc_id", "title", "text", "acl"?, ...}``) or 404.

Requests go through ``ResilientClient`` (timeouts, retries on 5xx with backoff, a circuit
breaker), so a dead service costs nothing. Permissions fail closed: a hit or document without an
``acl`` the user matches is dropped, unless the service is declared to enforce ACLs itself.
"""

from __future__ import annotations

from typing import Any

import httpx

from seekgraph.sources.base import User, hide_unseen_links, link_url
from seekgraph.sources.resilient import ResilientClient
from seekgraph.sources.resilient import SourceRequestError as SourceRequestError
from seekgraph.sources.resilient import SourceUnavailableError as SourceUnavailableError
from seekgraph.state.models import AUTHORITY_BY_KIND, Document, Hit


class HttpSource:
    """A ``Source`` that asks a remote search service."""

    def __init__(
        self,
        name: str,
        kind: str,
        search_url: str,
        *,
        read_url: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 5.0,
        retries: int = 2,
        failure_threshold: int = 5,
        recovery_timeout: float = 30.0,
        remote_enforces_acl: bool = False,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self.authority = AUTHORITY_BY_KIND.get(kind, 1)
        self.search_url = search_url
        self.read_url = read_url
        self.remote_enforces_acl = remote_enforces_acl
        self.http = ResilientClient(
            name,
            client=client,
            headers=headers,
            timeout=timeout,
            retries=retries,
            failure_threshold=failure_threshold,
            recovery_timeout=recovery_timeout,
        )
        self.breaker = self.http.breaker

    async def _call(self, url: str, payload: dict[str, Any]) -> httpx.Response:
        return await self.http.request("POST", url, json=payload)

    def _allowed(self, item: dict[str, Any], user: User) -> bool:
        if self.remote_enforces_acl:
            return True
        acl = item.get("acl")
        return isinstance(acl, list) and user.may_read([str(a) for a in acl])

    async def search(self, query: str, user: User, k: int) -> list[Hit]:
        """Ask the service; keep only well-formed hits the user may read."""
        payload = {
            "query": query,
            "k": k,
            "user": {"name": user.name, "groups": sorted(user.groups)},
        }
        response = await self._call(self.search_url, payload)
        if response.status_code >= 400:
            raise SourceRequestError(
                f"{self.name}: service refused the query ({response.status_code})"
            )
        try:
            items = response.json()["hits"]
        except (ValueError, KeyError, TypeError):
            raise SourceRequestError(f"{self.name}: answer is not {{'hits': [...]}}") from None
        hits: list[Hit] = []
        for item in items[:k]:
            if not isinstance(item, dict) or not self._allowed(item, user):
                continue
            try:
                doc_id = str(item["doc_id"])
                chunk = str(item.get("chunk_id") or f"{doc_id}#0")
                hits.append(
                    {
                        "source_id": f"{self.name}:{chunk}",
                        "doc_id": doc_id,
                        "source": self.name,
                        "kind": self.kind,
                        "authority": self.authority,
                        "title": str(item["title"]),
                        "snippet": str(item["snippet"]),
                        "score": max(0.0, min(1.0, float(item.get("score", 0.5)))),
                        "url": link_url(item.get("url")),
                        "updated_at": item.get("updated_at"),
                        "version": item.get("version"),
                        "deprecated": bool(item.get("deprecated")),
                        "superseded_by": item.get("superseded_by"),
                        "query": query,
                    }
                )
            except (KeyError, TypeError, ValueError):
                continue  # a malformed hit is dropped, the others kept
        await hide_unseen_links(hits, lambda doc_id: self.visible(doc_id, user))
        return hits

    async def visible(self, doc_id: str, user: User) -> bool:
        """Whether ``user`` may read ``doc_id``; without a read endpoint nobody can tell: no."""
        return await self.read(doc_id, user, follow_links=False) is not None

    async def read(self, doc_id: str, user: User, follow_links: bool = True) -> Document | None:
        """The whole document from the service, or None (missing, refused, or not allowed)."""
        if self.read_url is None:
            return None
        payload = {"doc_id": doc_id, "user": {"name": user.name, "groups": sorted(user.groups)}}
        response = await self._call(self.read_url, payload)
        if response.status_code in (403, 404):
            return None
        if response.status_code >= 400:
            raise SourceRequestError(
                f"{self.name}: service refused to read ({response.status_code})"
            )
        item = response.json()
        if not isinstance(item, dict) or not self._allowed(item, user):
            return None
        text = str(item.get("text", ""))
        document: Document = {
            "doc_id": doc_id,
            "source": self.name,
            "kind": self.kind,
            "title": str(item.get("title", doc_id)),
            "text": text,
            "url": link_url(item.get("url")),
            "updated_at": item.get("updated_at"),
            "version": item.get("version"),
            "deprecated": bool(item.get("deprecated")),
            "superseded_by": item.get("superseded_by"),
            "chunks": [
                {"chunk_id": f"{self.name}:{doc_id}#{i}", "text": p}
                for i, p in enumerate(t for t in text.split("\n\n") if t.strip())
            ],
        }
        if follow_links:
            await hide_unseen_links([document], lambda target: self.visible(target, user))
        return document

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.http.aclose()
