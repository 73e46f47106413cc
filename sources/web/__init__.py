"""The web as a source: a search engine's results, and the pages they point at.

``WebSource`` (kind ``web``, the lowest authority) asks a search engine — a self-hosted
**SearxNG** (its JSON API) or the **Brave Search** API, chosen by configuration — and reads
pages through :class:`sources.web.fetch.PageFetcher` (no private addresses, capped, robots.txt,
cached). The web is public: every hit is readable by anyone, but *using* the web is a
permission of its own (``"web": [principals]`` in ``workspace.json``).

**The privacy firewall.** A query leaving for the web may only be made of the person's own
words and of text that came from the web itself. The search loop builds web queries that
way, and this module checks it again on every outgoing request: the branch that searches
sets the public text with :func:`outgoing_from`, and :meth:`WebSource.search` refuses any
query holding a word that text does not (no public text set: nothing goes out — fail
closed). Private evidence never reaches a web query, even when it holds the answer.
"""

from __future__ import annotations

import contextvars
import math
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx

from seekgraph.sources.base import User, link_url
from seekgraph.sources.ingestion.chunking import chunk_markdown
from seekgraph.sources.resilient import ResilientClient
from seekgraph.sources.web.engines import BraveEngine, SearchEngine, SearxngEngine, WebResult
from seekgraph.sources.web.fetch import (
    FetchFailedError,
    FetchRefusedError,
    PageFetcher,
    canonical_url,
)
from seekgraph.state.models import AUTHORITY_BY_KIND, RESULT_SUFFIX, Document, Hit

__all__ = [
    "BraveEngine",
    "FetchFailedError",
    "FetchRefusedError",
    "SearxngEngine",
    "WebFirewallError",
    "WebSource",
    "outgoing_from",
    "outside_words",
]


class WebFirewallError(PermissionError):
    """A query would have carried words that are neither the person's nor the web's."""


#: The text a query leaving for the web may be built from (set per search branch).
_PUBLIC_TEXT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "seekgraph_web_public_text", default=None
)

_TOKEN = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _tokens(text: str) -> set[str]:
    """Lower-case words; a run of Chinese characters counts character by character."""
    out: set[str] = set()
    for token in _TOKEN.findall(text.lower()):
        if _CJK.search(token):
            out.update(ch for ch in token)
        else:
            out.add(token)
    return out


def outside_words(query: str, public_text: str) -> list[str]:
    """The words of ``query`` that ``public_text`` does not hold (empty: the query may go)."""
    allowed = _tokens(public_text)
    return sorted(_tokens(query) - allowed)


@contextmanager
def outgoing_from(public_text: str) -> Iterator[None]:
    """Within this block, web queries may be made of ``public_text``'s words only."""
    token = _PUBLIC_TEXT.set(public_text)
    try:
        yield
    finally:
        _PUBLIC_TEXT.reset(token)


#: Weights of :func:`url_score`'s signals (engine rank, votes, question words, path).
_RANK, _VOTES, _WORDS, _PATH = 0.45, 0.2, 0.3, 0.05


def url_score(result: WebResult, votes: int, question: str) -> float:
    """How worth reading a URL is, in [0, 1], as node-DeepResearch ranks candidate URLs.

    The engine's rank, how many results (engines, queries) point at it, the question's
    words in its title, snippet and path, and a short path (a page, not a listing).
    """
    asked = _tokens(question)
    parts = urlsplit(result.url)
    shown = _tokens(f"{result.title} {result.snippet} {parts.path.replace('-', ' ')}")
    words = len(asked & shown) / len(asked) if asked else 0.0
    depth = len([p for p in parts.path.split("/") if p])
    path = 1.0 if 1 <= depth <= 4 else 0.5
    rank = 1.0 / math.sqrt(result.rank)
    return round(
        _RANK * rank + _VOTES * min(1.0, (votes - 1) / 2) + _WORDS * words + _PATH * path, 4
    )


def domain_of(url: str) -> str:
    """The host a person recognises (``www.`` dropped)."""
    host = urlsplit(url).hostname or ""
    return host[4:] if host.startswith("www.") else host


class WebSource:
    """The web: search results as hits, pages read whole on request."""

    kind = "web"
    outbound = True
    """Queries to this source leave the deployment: the search loop builds them from the
    person's words only (see the module's docstring)."""

    def __init__(
        self,
        engine: SearchEngine,
        fetcher: PageFetcher,
        *,
        name: str = "web",
        users: list[str] | None = None,
        results: int = 8,
    ) -> None:
        self.name = name
        self.authority = AUTHORITY_BY_KIND["web"]
        self.engine = engine
        self.fetcher = fetcher
        self.users = None if users is None else frozenset(users)
        """Principals who may use the web; ``None``: everyone."""
        self.results = results
        self.sent: list[str] = []
        """Queries sent in this process, newest last (bounded; operators' diagnostics)."""

    def may_use(self, user: User) -> bool:
        """Whether ``user`` may search and read the web."""
        return self.users is None or user.may_read(self.users)

    async def search(self, query: str, user: User, k: int) -> list[Hit]:
        """The engine's results for ``query``, ranked for reading.

        Nothing for a user who may not use the web; nothing sent for a query that fails
        the firewall (``WebFirewallError``).
        """
        if not self.may_use(user):
            return []
        public = _PUBLIC_TEXT.get()
        if public is None:
            raise WebFirewallError(
                "web: a query may only leave inside outgoing_from(the person's words)"
            )
        outside = outside_words(query, public)
        if outside:
            raise WebFirewallError(
                f"web: the query holds {len(outside)} word(s) that are not the person's; not sent"
            )
        self.sent = [*self.sent[-99:], query]
        results = await self.engine.search(query, max(k, self.results))
        fetched = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        votes: dict[str, int] = {}
        for r in results:
            key = canonical_url(r.url)
            votes[key] = votes.get(key, 0) + r.engines
        hits: list[Hit] = []
        seen: set[str] = set()
        for r in results:
            key = canonical_url(r.url)
            if key in seen:
                continue
            seen.add(key)
            hits.append(
                {
                    "source_id": f"{self.name}:{key}{RESULT_SUFFIX}",
                    "doc_id": key,
                    "source": self.name,
                    "kind": self.kind,
                    "authority": self.authority,
                    "title": r.title,
                    "snippet": r.snippet or r.title,
                    "score": url_score(r, votes[key], query),
                    "url": link_url(r.url),
                    "updated_at": _date(r.published),
                    "version": None,
                    "deprecated": False,
                    "superseded_by": None,
                    "query": query,
                    "fetched_at": fetched,
                    "rank": r.rank,
                }
            )
        hits.sort(key=lambda h: -h["score"])
        return hits[:k]

    async def read(self, doc_id: str, user: User) -> Document | None:
        """The page at ``doc_id`` (its canonical URL).

        ``FetchRefusedError`` / ``FetchFailedError`` say why it was not read.
        """
        if not self.may_use(user):
            return None
        page = await self.fetcher.fetch(doc_id)
        if not page.text:
            raise FetchFailedError(f"{doc_id}: no readable text")
        return {
            "doc_id": doc_id,
            "source": self.name,
            "kind": self.kind,
            "title": page.title,
            "text": page.text,
            "url": link_url(page.final_url) or link_url(doc_id),
            "updated_at": _date(page.published),
            "version": None,
            "deprecated": False,
            "superseded_by": None,
            "chunks": chunk_markdown(page.text, f"{self.name}:{doc_id}"),
            "fetched_at": page.fetched_at,
            "bytes": page.bytes,
            "cut": page.cut,
        }

    async def aclose(self) -> None:
        """Close the engine's and the fetcher's connections."""
        await self.engine.aclose()
        await self.fetcher.aclose()


def _date(value: Any) -> str | None:
    """An ISO date from an engine's or a page's date, or ``None``."""
    if not isinstance(value, str) or not value.strip():
        return None
    from seekgraph.sources.ingestion.chunking import iso

    return iso(value)


def web_source(
    *,
    engine: str,
    searxng_url: str | None = None,
    brave_api_key: str | None = None,
    brave_base_url: str | None = None,
    users: list[str] | None = None,
    fetcher: PageFetcher | None = None,
    timeout: float = 8.0,
    per_second: float | None = 1.0,
    results: int = 8,
    client: httpx.AsyncClient | None = None,
) -> WebSource:
    """A web source over the configured engine (``searxng`` or ``brave``)."""
    http = ResilientClient(f"web ({engine})", client=client, timeout=timeout, per_second=per_second)
    chosen: SearchEngine
    if engine == "searxng":
        if not searxng_url:
            raise ValueError("the searxng web engine needs SEEKGRAPH_SEARXNG_URL")
        chosen = SearxngEngine(searxng_url, http)
    elif engine == "brave":
        if not brave_api_key:
            raise ValueError("the brave web engine needs SEEKGRAPH_BRAVE_API_KEY")
        chosen = BraveEngine(brave_api_key, http, brave_base_url)
    else:
        raise ValueError(f"unknown web engine {engine!r}; use searxng or brave")
    return WebSource(chosen, fetcher or PageFetcher(), users=users, results=results)
