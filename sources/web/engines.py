"""Web search APIs: a query in, ranked results out.

**SearxNG** (self-hosted meta-search, its JSON API) and **Brave Search** (a commercial API of
the same shape), each through a ``ResilientClient`` (timeouts, retries on 5xx, a circuit
breaker, a requests-per-second limit, ``Retry-After`` honoured).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from seekgraph.sources.base import link_url
from seekgraph.sources.resilient import ResilientClient, SourceRequestError


@dataclass
class WebResult:
    """One result of a search engine."""

    url: str
    title: str
    snippet: str
    rank: int
    """1-based position in the engine's answer."""
    engines: int = 1
    """How many engines (SearxNG aggregates several) returned this URL."""
    published: str | None = None


class SearchEngine(Protocol):
    """A web search API: a query in, ranked results out."""

    name: str

    async def search(self, query: str, count: int) -> list[WebResult]:
        """At most ``count`` results for ``query``."""
        ...

    async def aclose(self) -> None:
        """Close connections."""
        ...


class SearxngEngine:
    """SearxNG's JSON API: ``GET {base}/search?q=…&format=json``.

    JSON must be enabled in its ``settings.yml``: ``search.formats: [html, json]``.
    """

    name = "searxng"

    def __init__(self, base_url: str, http: ResilientClient) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = http

    async def search(self, query: str, count: int) -> list[WebResult]:
        """The engine's results, best first."""
        response = await self.http.request(
            "GET", f"{self.base_url}/search", params={"q": query, "format": "json"}
        )
        if response.status_code == 403:
            raise SourceRequestError(
                "web: SearxNG refused the JSON format; enable it in its settings.yml "
                "(search.formats: [html, json])"
            )
        if response.status_code >= 400:
            raise SourceRequestError(f"web: SearxNG answered {response.status_code}")
        try:
            items = response.json()["results"]
        except (ValueError, KeyError, TypeError):
            raise SourceRequestError("web: SearxNG's answer has no 'results' list") from None
        out: list[WebResult] = []
        for rank, item in enumerate(items, start=1):
            if not isinstance(item, dict) or not link_url(item.get("url")):
                continue
            engines = item.get("engines")
            out.append(
                WebResult(
                    url=str(item["url"]),
                    title=str(item.get("title") or item["url"]),
                    snippet=str(item.get("content") or ""),
                    rank=rank,
                    engines=len(engines) if isinstance(engines, list) and engines else 1,
                    published=item.get("publishedDate") or None,
                )
            )
            if len(out) >= count:
                break
        return out

    async def aclose(self) -> None:
        """Close connections."""
        await self.http.aclose()


class BraveEngine:
    """Brave Search's Web Search API: ``GET {base}/res/v1/web/search?q=…&count=…``.

    The key goes in the ``X-Subscription-Token`` header.
    """

    name = "brave"

    def __init__(self, api_key: str, http: ResilientClient, base_url: str | None = None) -> None:
        self.base_url = (base_url or "https://api.search.brave.com").rstrip("/")
        self.http = http
        self.http.headers = {
            **self.http.headers,
            "X-Subscription-Token": api_key,
            "Accept": "application/json",
        }

    async def search(self, query: str, count: int) -> list[WebResult]:
        """The engine's results, best first."""
        response = await self.http.request(
            "GET",
            f"{self.base_url}/res/v1/web/search",
            params={"q": query[:400], "count": max(1, min(count, 20))},
        )
        if response.status_code in (401, 403):
            raise SourceRequestError(
                "web: Brave Search refused the key; set SEEKGRAPH_BRAVE_API_KEY to a valid "
                "subscription token"
            )
        if response.status_code >= 400:
            raise SourceRequestError(f"web: Brave Search answered {response.status_code}")
        try:
            items = response.json().get("web", {}).get("results", [])
        except (ValueError, AttributeError):
            raise SourceRequestError("web: Brave Search's answer is not JSON") from None
        out = []
        for rank, item in enumerate(items, start=1):
            if isinstance(item, dict) and link_url(item.get("url")):
                out.append(
                    WebResult(
                        url=str(item["url"]),
                        title=str(item.get("title") or item["url"]),
                        snippet=_strip_tags(str(item.get("description") or "")),
                        rank=rank,
                        published=item.get("page_age") or None,
                    )
                )
        return out[:count]

    async def aclose(self) -> None:
        """Close connections."""
        await self.http.aclose()


def _strip_tags(text: str) -> str:
    return re.sub(r"<[^>]+>", "", text)
