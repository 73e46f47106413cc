"""A small web on loopback: a SearxNG-compatible search engine and the pages it finds.

``GET /search?q=…&format=json`` answers as SearxNG's JSON API does (``results`` with ``url``,
``title``, ``content``, ``engines``, ``score``), ranked by BM25 over the pages; any other
format gets 403 (SearxNG's answer when JSON is not enabled). Every query received is kept:
``GET /queries`` lists them (what left the deployment, checked by the firewall tests).
``GET /res/v1/web/search?q=…&count=…`` answers the same results in Brave Search's shape
(``web.results`` with ``description``) and needs the ``X-Subscription-Token`` ``test-key``.

Pages: ``GET /p/{slug}`` is an HTML page (navigation and footer around the article, as
real sites have) with an ``ETag`` and ``304`` on ``If-None-Match``; ``/robots.txt`` disallows
``/private/``; ``/redirect/local`` and ``/redirect/metadata`` redirect to 127.0.0.1 and to
169.254.169.254; ``/slow`` trickles a byte a second; ``/huge`` streams 50 MB; ``/image`` is a
PNG; ``/doc.txt`` is plain text. ``POST /script`` ``{"fail": [500, 429]}`` makes the next
search calls answer those statuses; ``GET /calls`` counts search calls and page reads.

    python -m tests.fakes.web_server --port 9300 [--pages pages.json]

``pages.json``: ``[{"slug", "title", "text", "links": [slug, …]?}]``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import html
import json
import math
import re
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

PAGES = [
    {  # what is asked of it is past the snippet's first 240 characters
        "slug": "harbour-street-library",
        "title": "Harbour Street Library",
        "text": "The Harbour Street Library is a public lending library on the old quay. Its "
        "reading room seats sixty and its map collection covers the whole coast, from the "
        "lighthouse charts of the first harbour board to the ferry timetables of today, and "
        "volunteers run a weekly local history hour.\n\nThe library first opened its doors "
        "in 1887, funded by the harbour board.",
    },
    {
        "slug": "wireguard-handshake",
        "title": "WireGuard handshake explained",
        "text": "WireGuard completes a handshake every two minutes. The handshake uses the "
        "Noise protocol framework with Curve25519 keys.\n\nA peer that has not completed a "
        "handshake in 180 seconds is considered stale.",
        "links": ["noise-protocol"],
    },
    {
        "slug": "noise-protocol",
        "title": "Noise protocol framework",
        "text": "The Noise protocol framework was designed by Trevor Perrin. It describes "
        "handshake patterns built from Diffie-Hellman key agreement.",
    },
    {
        "slug": "expense-reports-guide",
        "title": "How to write an expense report",
        "text": "An expense report lists each cost with its receipt. Most companies ask for "
        "reports within thirty days of travel.",
    },
]

_WORD = re.compile(r"\w+")


def _terms(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


class Bm25:
    """Okapi BM25 over the pages' titles and texts."""

    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self.pages = pages
        self.docs = [Counter(_terms(f"{p['title']} {p['title']} {p['text']}")) for p in pages]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg = sum(self.lengths) / max(1, len(self.lengths))
        df: Counter[str] = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(pages)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def search(self, query: str, k: int) -> list[tuple[dict[str, Any], float]]:
        terms = set(_terms(query))
        scored = []
        for page, doc, length in zip(self.pages, self.docs, self.lengths, strict=True):
            score = 0.0
            for t in terms & doc.keys():
                tf = doc[t]
                score += self.idf[t] * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / self.avg))
            if score > 0:
                scored.append((page, score))
        scored.sort(key=lambda ps: -ps[1])
        return scored[:k]


def snippet(text: str, limit: int = 240) -> str:
    """The start of a page's text, cut at a word boundary as engines do."""
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


def page_html(page: dict[str, Any], base: str) -> str:
    """A page as a site serves it: navigation, the article, links, a footer."""
    paragraphs = "".join(f"<p>{html.escape(p)}</p>" for p in page["text"].split("\n\n"))
    links = "".join(
        f'<li><a href="{base}p/{html.escape(s)}">{html.escape(s)}</a></li>'
        for s in page.get("links", [])
    )
    return (
        f"<!doctype html><html><head><title>{html.escape(page['title'])}</title></head><body>"
        "<nav><a href='/'>Home</a> | <a href='/about'>About us</a> | Sign in</nav>"
        f"<article><h1>{html.escape(page['title'])}</h1>{paragraphs}</article>"
        f"<aside><ul>{links}</ul></aside>"
        "<footer>Copyright 2026 Example Web. Cookie settings. Privacy.</footer></body></html>"
    )


def create_app(pages: list[dict[str, Any]]) -> FastAPI:
    """The test web."""
    app = FastAPI()
    index = Bm25(pages)
    by_slug = {p["slug"]: p for p in pages}
    state: dict[str, Any] = {"calls": 0, "reads": 0, "fail": [], "queries": []}

    def results(request: Request, q: str, k: int) -> list[dict[str, Any]]:
        base = str(request.base_url)
        return [
            {
                "url": f"{base}p/{page['slug']}",
                "title": page["title"],
                "content": snippet(page["text"]),
                "engines": ["bm25"],
                "score": round(score, 3),
            }
            for page, score in index.search(q, k)
        ]

    def scripted() -> Response | None:
        state["calls"] += 1
        if state["fail"]:
            status = state["fail"].pop(0)
            headers = {"Retry-After": "0"} if status == 429 else {}
            return JSONResponse(status_code=status, content={"error": "scripted"}, headers=headers)
        return None

    @app.get("/search", response_model=None)
    async def search(request: Request, q: str = "", format: str = "html") -> Response:
        state["queries"].append(q)
        failed = scripted()
        if failed is not None:
            return failed
        if format != "json":
            return PlainTextResponse("format not allowed", status_code=403)
        return JSONResponse({"query": q, "results": results(request, q, 10)})

    @app.get("/res/v1/web/search", response_model=None)
    async def brave(request: Request, q: str = "", count: int = 10) -> Response:
        state["queries"].append(q)
        if request.headers.get("x-subscription-token") != "test-key":
            return JSONResponse(status_code=401, content={"error": "bad token"})
        failed = scripted()
        if failed is not None:
            return failed
        found = results(request, q, count)
        web = [{"title": r["title"], "url": r["url"], "description": r["content"]} for r in found]
        return JSONResponse({"type": "search", "web": {"results": web}})

    @app.get("/queries")
    async def queries() -> JSONResponse:
        return JSONResponse(state["queries"])

    @app.get("/calls")
    async def calls() -> JSONResponse:
        return JSONResponse({"calls": state["calls"], "reads": state["reads"]})

    @app.post("/script")
    async def script(request: Request) -> JSONResponse:
        body = await request.json()
        state["fail"] = list(body.get("fail", []))
        if body.get("reset"):
            state.update(calls=0, reads=0, queries=[])
        return JSONResponse({"ok": True})

    @app.get("/robots.txt", response_class=PlainTextResponse)
    async def robots() -> str:
        return "User-agent: *\nDisallow: /private/\n"

    @app.get("/p/{slug}", response_model=None)
    async def page(slug: str, request: Request) -> Response:
        found = by_slug.get(slug)
        if found is None:
            return PlainTextResponse("not found", status_code=404)
        state["reads"] += 1
        body = page_html(found, str(request.base_url))
        etag = '"' + hashlib.sha256(body.encode()).hexdigest()[:16] + '"'
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={"ETag": etag})
        return Response(body, media_type="text/html; charset=utf-8", headers={"ETag": etag})

    @app.get("/private/{rest:path}", response_class=PlainTextResponse)
    async def private(rest: str) -> str:
        state["reads"] += 1
        return "robots.txt asks crawlers not to read this"

    @app.get("/redirect/local", response_model=None)
    async def to_local(request: Request) -> Response:
        port = request.url.port
        return Response(status_code=302, headers={"Location": f"http://127.0.0.1:{port}/p/x"})

    @app.get("/redirect/metadata", response_model=None)
    async def to_metadata() -> Response:
        target = "http://169.254.169.254/latest/meta-data/"
        return Response(status_code=302, headers={"Location": target})

    @app.get("/slow", response_model=None)
    async def slow() -> StreamingResponse:
        async def trickle() -> AsyncIterator[bytes]:
            yield b"<html><body><article><p>The first paragraph arrives at once.</p>"
            for _ in range(60):
                await asyncio.sleep(1.0)
                yield b"<p>more</p>"

        return StreamingResponse(trickle(), media_type="text/html")

    @app.get("/huge", response_model=None)
    async def huge() -> StreamingResponse:
        async def flood() -> AsyncIterator[bytes]:
            line = b"This sentence repeats to make a very large page. " * 20 + b"\n"
            for _ in range(50_000):
                yield line

        return StreamingResponse(flood(), media_type="text/plain")

    @app.get("/image", response_model=None)
    async def image() -> Response:
        return Response(b"\x89PNG\r\n\x1a\n" + b"\0" * 64, media_type="image/png")

    @app.get("/doc.txt", response_class=PlainTextResponse)
    async def text() -> str:
        return "A plain text page.\n\nIt has two paragraphs."

    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pages", type=Path, default=None)
    args = parser.parse_args()
    pages = json.loads(args.pages.read_text(encoding="utf-8")) if args.pages else PAGES
    uvicorn.run(create_app(pages), host="127.0.0.1", port=args.port, log_level="warning")
