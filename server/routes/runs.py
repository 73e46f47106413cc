"""Runs: start one (streamed as SSE) and attach to the current or last one, resuming anywhere.

The paths a reconnect takes (same instance, forwarded, taken over) are in ``server.streams``.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Query
from fastapi.responses import JSONResponse, StreamingResponse

from graph.api import PlanError, checked_plan
from server.api_models import Problem, ResumeRequest, RunRequest
from server.app_state import AppState
from server.deps import AppDep, ThreadDep, UserDep
from server.runs import RunHandle
from server.sse import handle_frames
from server.streams import RunConflictError, attach_frames, resume_run, sse, start_run

router = APIRouter(prefix="/threads", tags=["runs"])


async def streamed(
    app: AppState, starting: Awaitable[RunHandle]
) -> StreamingResponse | JSONResponse:
    """The run ``starting`` starts, streamed; a 409 naming the live run if one holds the thread."""
    try:
        handle = await starting
    except RunConflictError as exc:
        return JSONResponse(status_code=409, content={"detail": str(exc), "run_id": exc.run_id})
    return sse(app, handle_frames(handle, snapshot=False), handle.run_id)


@router.post(
    "/{thread_id}/runs",
    responses={409: {"model": Problem}, 422: {"model": Problem}, 503: {"model": Problem}},
    response_class=StreamingResponse,
    response_model=None,
)
async def create_run(
    app: AppDep, user: UserDep, thread_id: ThreadDep, body: RunRequest
) -> StreamingResponse | JSONResponse:
    """Start a run and stream its events (``text/event-stream``)."""
    return await streamed(app, start_run(app, user, thread_id, body))


@router.post(
    "/{thread_id}/resume",
    responses={409: {"model": Problem}, 422: {"model": Problem}, 503: {"model": Problem}},
    response_class=StreamingResponse,
    response_model=None,
)
async def resume(
    app: AppDep, user: UserDep, thread_id: ThreadDep, body: ResumeRequest
) -> StreamingResponse | JSONResponse:
    """Resume a run that waits for a person (``waiting``) and stream the rest of it.

    An edited plan is checked first: one that cannot run is a 422 naming the problem, and
    the run keeps waiting.
    """
    if body.resume.get("plan") is not None:
        try:
            checked_plan(body.resume["plan"])
        except PlanError as exc:
            raise HTTPException(422, f"the plan cannot run: {exc}") from None
    return await streamed(app, resume_run(app, user, thread_id, body.resume))


@router.get("/{thread_id}/stream", response_class=StreamingResponse)
async def attach(
    app: AppDep,
    user: UserDep,
    thread_id: ThreadDep,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    last_event: Annotated[
        str | None, Query(description="Last-Event-ID for EventSource-less clients")
    ] = None,
) -> StreamingResponse:
    """Attach to the thread's current or last run (honours ``Last-Event-ID``)."""
    frames, run_id = await attach_frames(app, user.name, thread_id, last_event_id or last_event)
    return sse(app, frames, run_id)
