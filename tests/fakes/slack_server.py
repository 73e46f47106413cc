"""Slack's Web API on loopback, for the Slack connector through the real ``slack_sdk``.

Serves the documented methods the connector calls — ``users.list``, ``conversations.list``,
``conversations.members``, ``conversations.history``, ``conversations.replies`` — with their
documented payloads: ``{"ok": true, <items>, "response_metadata": {"next_cursor"}}``, pages of
``limit`` items, ``{"ok": false, "error": …}`` for a bad token, and ``429`` with ``Retry-After``.

The world (``POST /world``): ``users``, ``channels`` with ``members`` and ``is_member``,
``messages`` by channel id; a token no longer accepted gets ``token_expired``. Scripted
failures and call counts: ``scripted.py``.

    python -m tests.fakes.slack_server --port 9400
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from tests.fakes.scripted import Scripted, failed, serve


def create_app() -> FastAPI:
    """The test Slack."""
    app = FastAPI()
    state = Scripted(app, "xoxb-test", {"users": [], "channels": [], "messages": {}})

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
        status = state.count(method)
        if status:
            return failed(status, {"ok": False, "error": "ratelimited"})
        auth = request.headers.get("authorization", "")
        if auth != f"Bearer {state.token}":
            error = "token_expired" if auth.startswith("Bearer xoxb") else "not_authed"
            return JSONResponse({"ok": False, "error": error})
        world = state.world
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

    return app


if __name__ == "__main__":
    serve(create_app())
