"""Instance-to-instance forwarding of a live run's stream (shared-secret protected)."""

from __future__ import annotations

import hmac
from typing import Annotated, Literal

from fastapi import APIRouter, Header, HTTPException, Query
from fastapi.responses import StreamingResponse

from seekgraph.server.http.deps import AppDep, thread_id_of
from seekgraph.server.http.resume import INTERNAL_HEADER
from seekgraph.server.http.sse import BadEventIdError, handle_frames, parse_last_event_id
from seekgraph.server.http.streams import sse

router = APIRouter(prefix="/internal", include_in_schema=False)


@router.get("/threads/{thread_id}/stream")
async def internal_stream(
    app: AppDep,
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
    secret = app.settings.internal_token
    expected = None if secret is None else secret.get_secret_value().encode()
    given = None if token is None else token.encode("utf-8", "surrogateescape")
    if expected is None or given is None or not hmac.compare_digest(given, expected):
        raise HTTPException(403, "forbidden")
    thread_id = thread_id_of(thread_id)
    handle = app.runs.live(thread_id)
    if (
        handle is None
        or handle.done
        or handle.thread_id != thread_id
        or not hmac.compare_digest(handle.run_id.encode(), run_id.encode())
        or not hmac.compare_digest(handle.owner.encode(), owner.encode())
    ):
        raise HTTPException(404, "no such live run here")
    try:
        _, after = parse_last_event_id(last_event_id)
    except BadEventIdError as exc:
        raise HTTPException(422, str(exc)) from None
    frames = handle_frames(handle, snapshot=True, after=after, channel=channel)
    return sse(app, frames, handle.run_id)
