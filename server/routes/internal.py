"""Instance-to-instance forwarding of a live run's stream (shared-secret protected)."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException
from fastapi.responses import StreamingResponse

from server.deps import AppDep
from server.sse import handle_frames
from server.streams import INTERNAL_HEADER, sse

router = APIRouter(prefix="/internal", include_in_schema=False)


@router.get("/threads/{thread_id}/stream")
async def internal_stream(
    app: AppDep,
    thread_id: str,
    token: Annotated[str | None, Header(alias=INTERNAL_HEADER)] = None,
) -> StreamingResponse:
    """The live run's snapshot and events, for the instance the client reconnected to."""
    secret = app.settings.internal_token
    expected = None if secret is None else secret.get_secret_value().encode()
    given = None if token is None else token.encode("utf-8", "surrogateescape")
    if expected is None or given is None or not hmac.compare_digest(given, expected):
        raise HTTPException(403, "forbidden")
    handle = app.runs.live(thread_id)
    if handle is None or handle.done:
        raise HTTPException(404, "no live run here")
    return sse(app, handle_frames(handle, snapshot=True), handle.run_id)
