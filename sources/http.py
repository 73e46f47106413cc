"""A source backed by an existing search service over HTTP.

Protocol (JSON): ``POST {search_url}`` with ``{"query", "k", "user": {"name", "groups"}}``
answers ``{"hits": [{"doc_id", "title", "snippet", "score", "acl"?, "url"?, "updated_at"?,
"version"?, "deprecated"?, "superseded_by"?, "chunk_id"?}]}``; ``POST {read_url}`` with
``{"doc_id", "user"}`` answers a document (``{"doc_id", "title", "text", "acl"?, ...}``) or 404.

Each request has a timeout; 5xx answers and connection failures are retried with backoff
(tenacity); after repeated failures a circuit breaker stops calling the service for a while,
so a dead service costs nothing. Permissions fail closed: a hit or document without an
``acl`` the user matches is dropped, unless the service is declared to enforce ACLs itself.
"""

from __future__ import annotations

from typing import Any

import httpx
from circuitbreaker import CircuitBreaker, CircuitBreakerError
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from sources.base import User, hide_unseen_links, link_url
from state.models import AUTHORITY_BY_KIND, Document, Hit


class SourceUnavailableError(ConnectionError):
    """The search service failed (5xx, timeout, connection) or its circuit is open."""


class SourceRequestError(ValueError):
    """The search service refused the request (4xx) or answered something unusable."""


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
        self.headers = headers or {}
        self.timeout = timeout
        self.retries = retries
        self.remote_enforces_acl = remote_enforces_acl
        self.client = client or httpx.AsyncClient()
        self.breaker = CircuitBreaker(
            failure_threshold=failure_threshold,
            recovery_timeout=recovery_timeout,
            expected_exception=SourceUnavailableError,
            name=f"source {name}",
        )
        self._post = self.breaker(self._post_with_retries)

    async def _post_once(self, url: str, payload: dict[str, Any]) -> httpx.Response:
        try:
            response = await self.client.post(
                url, json=payload, headers=self.headers, timeout=self.timeout
            )
        except httpx.TimeoutException as exc:
            raise SourceUnavailableError(f"{self.name}: timed out after {self.timeout} s") from exc
        except httpx.TransportError as exc:
            raise SourceUnavailableError(f"{self.name}: {type(exc).__name__}") from exc
        if response.status_code >= 500:
            raise SourceUnavailableError(f"{self.name}: service answered {response.status_code}")
        return response

    async def _post_with_retries(self, url: str, payload: dict[str, Any]) -> httpx.Response:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type(SourceUnavailableError),
            stop=stop_after_attempt(self.retries + 1),
            wait=wait_exponential(multiplier=0.1, max=2.0),
            reraise=True,
        ):
            with attempt:
                return await self._post_once(url, payload)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _call(self, url: str, payload: dict[str, Any]) -> httpx.Response:
        try:
            response: httpx.Response = await self._post(url, payload)
        except CircuitBreakerError:
            raise SourceUnavailableError(
                f"{self.name}: circuit open after repeated failures; not calling it for now"
            ) from None
        return response

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
        await hide_unseen_links(hits, lambda doc_id: self._visible(doc_id, user))
        return hits

    async def _visible(self, doc_id: str, user: User) -> bool:
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
            await hide_unseen_links([document], lambda target: self._visible(target, user))
        return document

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.aclose()
