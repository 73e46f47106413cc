"""Slack's Web API on loopback, for the Slack connector through the real ``slack_sdk``.

Serves the documented methods the connector calls — ``users.list``, ``conversations.list``,
``conversations.members``, ``conversations.history``, ``conversations.replies`` — with their
documented payloads: ``{"ok": true, <items>, "response_metadata": {"next_cursor"}}``, pages of
``limit`` items, ``{"ok": false, "error": …}`` for a bad token, and ``429`` with ``Retry-After``.

``POST /world`` replaces the workspace (``users``, ``channels`` with ``members`` and
``is_member``, ``messages`` by channel id); ``POST /script`` with ``{"fail": [429]}`` makes the
next calls answer those statuses, ``{"token": "xoxb-new"}`` changes the valid token (the old
one then gets ``token_expired``). ``GET /calls`` counts calls by method.

    python -m tests.fakes.slack_server --port 9400
"""

from __future__ import annotations

import argparse
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response


def create_app() -> FastAPI:
    """The test Slack."""
    app = FastAPI()
    state: dict[str, Any] = {
        "world": {"users": [], "channels": [], "messages": {}},
        "fail": [],
        "token": "xoxb-test",
        "calls": {},
    }

    def page(items: list[Any], key: str, q: dict[str, Any]) -> JSONResponse:
        limit = int(q.get("limit") or 100)
        start = int(q.get("cursor") or 0)
        chunk = items[start : start + limit]
        following = str(start + limit) if start + limit < len(items) else ""
        return JSONResponse(
            {"ok": True, key: chunk, "response_metadata": {"next_cursor": following}}
        )

    @app.api_route("/api/{method}", methods=["GET", "POST"], response_model=None)
    async def api(method: str, request: Request) -> Response:
        state["calls"][method] = state["calls"].get(method, 0) + 1
        if state["fail"]:
            status = state["fail"].pop(0)
            return JSONResponse({"ok": False, "error": "ratelimited"}, status_code=status,
                                headers={"Retry-After": "1"} if status == 429 else {})  # fmt: skip
        auth = request.headers.get("authorization", "")
        if auth != f"Bearer {state['token']}":
            error = "token_expired" if auth.startswith("Bearer xoxb") else "not_authed"
            return JSONResponse({"ok": False, "error": error})
        world = state["world"]
        q = {**request.query_params, **(await request.form())}  # Slack takes either
        if method == "users.list":
            return page(world["users"], "members", q)
        if method == "conversations.list":
            return page(world["channels"], "channels", q)
        channel = next((c for c in world["channels"] if c["id"] == q.get("channel")), None)
        if channel is None:
            return JSONResponse({"ok": False, "error": "channel_not_found"})
        if method == "conversations.members":
            return page(channel["members"], "members", q)
        messages = world["messages"].get(channel["id"], [])
        if method == "conversations.history":  # top-level messages, newest first
            top = [m for m in messages if m.get("thread_ts") in (None, m["ts"])]
            return page(sorted(top, key=lambda m: m["ts"], reverse=True), "messages", q)
        if method == "conversations.replies":
            thread = [m for m in messages if m.get("thread_ts") == q.get("ts")]
            return page(sorted(thread, key=lambda m: m["ts"]), "messages", q)
        return JSONResponse({"ok": False, "error": "unknown_method"})

    @app.post("/world")
    async def world(request: Request) -> JSONResponse:
        state["world"] = await request.json()
        return JSONResponse({"ok": True})

    @app.post("/script")
    async def script(request: Request) -> JSONResponse:
        body = await request.json()
        state["fail"] = list(body.get("fail", []))
        state["token"] = body.get("token", state["token"])
        return JSONResponse({"ok": True})

    @app.get("/calls")
    async def calls() -> JSONResponse:
        return JSONResponse(state["calls"])

    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(create_app(), host="127.0.0.1", port=args.port, log_level="warning")
