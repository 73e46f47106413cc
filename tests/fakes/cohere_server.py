"""A Cohere-compatible rerank server for tests: ``POST /v2/rerank`` scores by shared words.

``POST /script`` with ``{"status": 500}`` or ``{"sleep": 5}`` makes the following calls fail;
``GET /calls`` counts calls.

    python -m tests.fakes.cohere_server --port 9100
"""

from __future__ import annotations

import argparse
import asyncio
import re
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse


def create_app() -> FastAPI:
    """The test Cohere server."""
    app = FastAPI()
    state: dict[str, Any] = {"calls": 0, "fail": {}}

    @app.post("/script")
    async def script(request: Request) -> dict[str, bool]:
        state["fail"] = await request.json()
        return {"ok": True}

    @app.get("/calls")
    async def calls() -> dict[str, int]:
        return {"calls": state["calls"]}

    @app.post("/v2/rerank", response_model=None)
    async def rerank(request: Request) -> JSONResponse:
        state["calls"] += 1
        fail = state["fail"]
        if "sleep" in fail:
            await asyncio.sleep(fail["sleep"])
        if "status" in fail:
            return JSONResponse(status_code=fail["status"], content={"message": "scripted"})
        body = await request.json()
        words = set(re.findall(r"\w+", body["query"].lower()))
        results = []
        for i, doc in enumerate(body["documents"]):
            text = doc if isinstance(doc, str) else doc.get("text", "")
            shared = words & set(re.findall(r"\w+", text.lower()))
            results.append(
                {"index": i, "relevance_score": min(1.0, len(shared) / max(1, len(words)) + 0.05)}
            )
        results.sort(key=lambda r: -r["relevance_score"])
        return JSONResponse(
            {"id": "rerank-test", "results": results, "meta": {"api_version": {"version": "2"}}}
        )

    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(create_app(), host="127.0.0.1", port=args.port, log_level="warning")
