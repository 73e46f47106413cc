"""What every fake of a remote system shares: a world to serve, scripted failures, counts.

``POST /world`` replaces what the system holds; ``POST /script`` with ``{"fail": [429, 503]}``
makes the next calls answer those statuses (a 429 with ``Retry-After: 1``), and with
``{"token": "…"}`` changes the one credential accepted (the old one is then expired);
``GET /calls`` counts calls by route.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse


class Scripted:
    """The state of a fake system and the routes that drive it."""

    def __init__(self, app: FastAPI, token: str, world: dict[str, Any]) -> None:
        self.world = world
        self.token = token
        self.fail: list[int] = []
        self.calls: dict[str, int] = {}

        @app.post("/world")
        async def set_world(request: Request) -> JSONResponse:
            self.world = await request.json()
            return JSONResponse({"ok": True})

        @app.post("/script")
        async def script(request: Request) -> JSONResponse:
            body = await request.json()
            self.fail = list(body.get("fail", []))
            self.token = body.get("token", self.token)
            return JSONResponse({"ok": True})

        @app.get("/calls")
        async def calls() -> JSONResponse:
            return JSONResponse(self.calls)

    def count(self, route: str) -> int | None:
        """Count a call; the status it must fail with, when one is scripted."""
        self.calls[route] = self.calls.get(route, 0) + 1
        return self.fail.pop(0) if self.fail else None


def failed(status: int, body: dict[str, Any]) -> JSONResponse:
    """A scripted failure (a 429 says when to come back)."""
    headers = {"Retry-After": "1"} if status == 429 else {}
    return JSONResponse(body, status_code=status, headers=headers)


def serve(app: FastAPI) -> None:
    """Run a fake on loopback at ``--port`` (``python -m tests.fakes.<name> --port P``)."""
    import argparse

    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
