"""An existing knowledge platform's search API, for tests of ``HttpSource``.

``POST /search`` and ``POST /read`` over three documents; ``POST /script`` with
``{"fail": [500, 503]}`` makes the next calls answer those statuses, ``{"sleep": 2}`` slows
every call; ``GET /calls`` counts calls.

    python -m tests.fakes.search_server --port 9200
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

DOCS = [
    {
        "doc_id": "wiki/vpn",
        "title": "VPN on the wiki",
        "acl": ["group:everyone"],
        "text": "Connect with WireGuard.\n\nThe gateway is vpn2.example.",
    },
    {
        "doc_id": "wiki/salaries",
        "title": "Salary bands",
        "acl": ["group:hr"],
        "text": "Band 3 pays 70k to 90k.",
    },
    {"doc_id": "wiki/no-acl", "title": "Unlabelled page", "text": "WireGuard tips."},
]


def create_app() -> FastAPI:
    """The test search service."""
    app = FastAPI()
    state: dict[str, Any] = {"calls": 0, "fail": [], "sleep": 0.0}

    @app.post("/script")
    async def script(request: Request) -> dict[str, bool]:
        body = await request.json()
        state["fail"] = list(body.get("fail", []))
        state["sleep"] = float(body.get("sleep", 0.0))
        return {"ok": True}

    @app.get("/calls")
    async def calls() -> dict[str, int]:
        return {"calls": state["calls"]}

    async def gate() -> JSONResponse | None:
        state["calls"] += 1
        if state["sleep"]:
            await asyncio.sleep(state["sleep"])
        if state["fail"]:
            return JSONResponse(status_code=state["fail"].pop(0), content={"error": "scripted"})
        return None

    @app.post("/search", response_model=None)
    async def search(request: Request) -> JSONResponse:
        failed = await gate()
        if failed is not None:
            return failed
        body = await request.json()
        words = set(body["query"].lower().split())
        hits = []
        for doc in DOCS:  # the service returns everything; the client must filter by ACL
            score = len(words & set(doc["text"].lower().replace(".", " ").split())) / max(
                1, len(words)
            )
            if score:
                hit = {
                    "doc_id": doc["doc_id"],
                    "title": doc["title"],
                    "snippet": doc["text"][:200],
                    "score": score,
                }
                if "acl" in doc:
                    hit["acl"] = doc["acl"]
                hits.append(hit)
        return JSONResponse({"hits": hits[: body["k"]]})

    @app.post("/read", response_model=None)
    async def read(request: Request) -> JSONResponse:
        failed = await gate()
        if failed is not None:
            return failed
        body = await request.json()
        for doc in DOCS:
            if doc["doc_id"] == body["doc_id"]:
                return JSONResponse(doc)
        return JSONResponse(status_code=404, content={"error": "not found"})

    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(create_app(), host="127.0.0.1", port=args.port, log_level="warning")
