"""Instance-to-instance forwarding of a live run's stream (shared-secret protected)."""

from __future__ import annotations

import hmac
from typing import Annotated, Literal

from fastapi import APIRouter, Header, HTTPException, Query
from fastapi.responses import StreamingResponse

from seekgraph.server.http.deps import Runs, SettingsDep, Sse
from seekgraph.server.service.resume import INTERNAL_HEADER
from seekgraph.server.service.run_service import thread_id_of

router = APIRouter(prefix="/internal", include_in_schema=False)


@router.get("/threads/{thread_id}/stream")
async def internal_stream(
    runs: Runs,
    sse: Sse,
    settings: SettingsDep,
    thread_id: str,
    token: Annotated[str | None, Header(alias=INTERNAL_HEADER)] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    channel: Literal["native", "protocol"] = "native",
    run_id: Annotated[str, Query(max_length=64)] = "",
    owner: Annotated[str, Query(max_length=256)] = "",
) -> StreamingResponse:
    """The live run's snapshot and events, for the instance the client reconnected to.

    Served only when this instance's live run on the thread is ``run_id`` of ``owner``: the
    run and the user the forwarding instance authorised, not merely whoever holds the token.
    """
    secret = settings.internal_token
    expected = None if secret is None else secret.get_secret_value().encode()
    given = None if token is None else token.encode("utf-8", "surrogateescape")
    if expected is None or given is None or not hmac.compare_digest(given, expected):
        raise HTTPException(403, "forbidden")
    thread_id = thread_id_of(thread_id)
    frames, live_run = runs.origin_frames(thread_id, run_id, owner, last_event_id, channel)
    return sse(frames, live_run)
