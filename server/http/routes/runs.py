"""The native API's runs: start one (streamed as SSE), attach, get, list, join, cancel.

A translation of ``RunService`` to the native API's shapes; the paths a reconnect takes (same
instance, forwarded, taken over) are in ``server.service.streams``.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, Header, Query
from fastapi.responses import JSONResponse, StreamingResponse

from seekgraph.graph.run import jsonable
from seekgraph.server.http.api_models import (
    ContinueRequest,
    JoinOut,
    Problem,
    ResumeRequest,
    RunOut,
    RunRequest,
)
from seekgraph.server.http.deps import Runs, Sse, SseResponses, ThreadDep, UserDep
from seekgraph.server.service.run_service import RunService, Started

router = APIRouter(prefix="/threads", tags=["runs"])


async def streamed(
    runs: RunService,
    sse: SseResponses,
    owner: str,
    starting: Awaitable[Started],
    stream: bool = True,
) -> StreamingResponse | JSONResponse:
    """The run ``starting`` starts, streamed, or 202 for a background run.

    A 409 names the live run if one holds the thread.
    """
    started = await starting  # busy: 409 naming the live run (server.http.errors)
    if not stream:
        record = await runs.record_of(started.thread_id, started.run_id)
        location = f"/threads/{quote(started.thread_id, safe='')}/runs/{started.run_id}"
        return JSONResponse(record.public(), 202, headers={"Location": location})
    return sse(runs.started_frames(started, owner), started.run_id)


@router.post(
    "/{thread_id}/runs",
    responses={409: {"model": Problem}, 422: {"model": Problem}, 503: {"model": Problem}},
    response_class=StreamingResponse,
    response_model=None,
)
async def create_run(
    runs: Runs, sse: Sse, user: UserDep, thread_id: ThreadDep, body: RunRequest
) -> StreamingResponse | JSONResponse:
    """Start a run and stream its events (``text/event-stream``).

    With ``"stream": false`` it is queued as a background run: 202 with its record.
    """
    starting = runs.start_run(user, thread_id, body)
    return await streamed(runs, sse, user.name, starting, body.stream)


@router.post(
    "/{thread_id}/resume",
    responses={409: {"model": Problem}, 422: {"model": Problem}, 503: {"model": Problem}},
    response_class=StreamingResponse,
    response_model=None,
)
async def resume(
    runs: Runs, sse: Sse, user: UserDep, thread_id: ThreadDep, body: ResumeRequest
) -> StreamingResponse | JSONResponse:
    """Resume a run that waits for a person (``waiting``) and stream the rest of it.

    An edited plan is checked first: one that cannot run is a 422 naming the problem, and
    the run keeps waiting.
    """
    return await streamed(runs, sse, user.name, runs.resume_run(user, thread_id, body.resume))


@router.post(
    "/{thread_id}/continue",
    responses={409: {"model": Problem}, 422: {"model": Problem}, 503: {"model": Problem}},
    response_class=StreamingResponse,
    response_model=None,
)
async def continue_(
    runs: Runs, sse: Sse, user: UserDep, thread_id: ThreadDep, body: ContinueRequest
) -> StreamingResponse | JSONResponse:
    """Continue a run that stopped half-way from its last saved step.

    A run cancelled with ``interrupt``, or stopped by a failure, goes on: what it finished
    (a research run's answered sub-questions) is not done again.
    """
    starting = runs.continue_run(user, thread_id, background=not body.stream)
    return await streamed(runs, sse, user.name, starting, body.stream)


@router.get("/{thread_id}/stream", response_class=StreamingResponse)
async def attach(
    runs: Runs,
    sse: Sse,
    user: UserDep,
    thread_id: ThreadDep,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    last_event: Annotated[
        str | None, Query(description="Last-Event-ID for EventSource-less clients")
    ] = None,
) -> StreamingResponse:
    """Attach to the thread's current or last run (honours ``Last-Event-ID``)."""
    frames, run_id = await runs.attach_frames(user.name, thread_id, last_event_id or last_event)
    return sse(frames, run_id)


@router.get("/{thread_id}/runs", response_model=list[RunOut])
async def list_runs(
    runs: Runs,
    thread_id: ThreadDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    status: str | None = None,
) -> list[dict[str, object]]:
    """The thread's runs, newest first (``status`` keeps only the runs in that status)."""
    listed = await runs.list_runs(thread_id, limit)
    return [r.public() for r in listed if status is None or r.status == status]


@router.get(
    "/{thread_id}/runs/{run_id}", response_model=RunOut, responses={404: {"model": Problem}}
)
async def get_run(runs: Runs, thread_id: ThreadDep, run_id: str) -> dict[str, object]:
    """One run: its status, when it began and last changed, who runs it."""
    return (await runs.record_of(thread_id, run_id)).public()


@router.post(
    "/{thread_id}/runs/{run_id}/join", response_model=JoinOut, responses={404: {"model": Problem}}
)
async def join_run(
    runs: Runs,
    thread_id: ThreadDep,
    run_id: str,
    timeout: Annotated[float, Query(gt=0, le=3600)] = 300.0,
) -> dict[str, object]:
    """Wait for the run to end (up to ``timeout`` seconds) and return it with the thread's state.

    A run still going after ``timeout`` comes back as it is (its status says so).
    """
    record = await runs.finished(thread_id, run_id, timeout)
    snap = await runs.state_of(thread_id)
    return {"run": record.public(), "values": jsonable(snap.values or {})}


@router.post(
    "/{thread_id}/runs/{run_id}/cancel",
    response_model=RunOut,
    status_code=202,
    responses={404: {"model": Problem}, 409: {"model": Problem}},
)
async def cancel(
    runs: Runs,
    thread_id: ThreadDep,
    run_id: str,
    action: Literal["interrupt", "rollback"] = "interrupt",
    wait: bool = False,
) -> dict[str, object]:
    """Stop the run wherever it runs: at its next step, within about a second.

    ``interrupt`` keeps what it saved (a research run keeps its finished sub-questions and
    can be continued); ``rollback`` puts the thread back where the run found it. ``wait``:
    answer once it has stopped. A run that already ended is a 409.
    """
    return (await runs.stop_run(thread_id, run_id, action, wait)).public()
