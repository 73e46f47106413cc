"""The LangGraph protocol's background runs: create, get, list, join, wait and cancel.

``runs.stream`` and ``join_stream`` are in ``langgraph_api``. A background run is queued
like the native API's ``"stream": false`` run; its record is shown as the protocol's ``Run``.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from seekgraph.graph.api import User
from seekgraph.graph.run import jsonable
from seekgraph.server.http.deps import Runs
from seekgraph.server.http.routes.langgraph_api import ProtocolUser, RunCreate, start_protocol_run
from seekgraph.server.runs.records import RunRecord
from seekgraph.server.service.run_service import RunService, Started

router = APIRouter(prefix="/langgraph", tags=["langgraph"])

#: Record statuses as the protocol names them (a cancelled run is "interrupted" there, with
#: its reason; a run stopped by a failure at a saved step is an error that can be continued).
STATUS = {"cancelled": "interrupted", "waiting": "interrupted", "interrupted": "error"}


class BackgroundRunCreate(RunCreate):
    """``runs.create`` and ``runs.wait``: a run and what to do if the thread is busy."""

    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] = "reject"


def iso(epoch: float) -> str:
    """Epoch seconds as ISO 8601 in UTC."""
    return dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat()


def run_json(record: RunRecord) -> dict[str, Any]:
    """A record as the protocol's ``Run``."""
    return {
        "run_id": record.run_id,
        "thread_id": record.thread_id,
        "assistant_id": record.flow,
        "created_at": iso(record.created_at),
        "updated_at": iso(record.updated_at),
        "status": STATUS.get(record.status, record.status),
        "metadata": {"executor": record.executor, "background": record.background},
        "multitask_strategy": record.multitask_strategy,
        "cancel_reason": record.cancel or None,
        "kwargs": {},
    }


async def create(
    runs: RunService, user: User, thread_id: str, body: BackgroundRunCreate
) -> Started:
    """Queue the run the body asks for."""
    strategy = body.multitask_strategy
    return await start_protocol_run(runs, user, thread_id, body, True, strategy)


async def values_of(runs: RunService, thread_id: str) -> dict[str, Any]:
    """The thread's state values as its person may see them now."""
    snap = await runs.state_of(thread_id)
    return dict(jsonable(snap.values or {}))


@router.post("/threads/{thread_id}/runs", response_model=None)
async def create_run(
    runs: Runs, user: ProtocolUser, thread_id: str, body: BackgroundRunCreate
) -> dict[str, Any]:
    """``runs.create``: queue a background run; its ``Run`` comes back at once."""
    thread_id = await runs.own_thread(user, thread_id)
    started = await create(runs, user, thread_id, body)  # busy: 409 naming the live run
    return run_json(await runs.record_of(thread_id, started.run_id))


@router.post("/threads/{thread_id}/runs/wait", response_model=None)
async def wait_run(
    runs: Runs, user: ProtocolUser, thread_id: str, body: BackgroundRunCreate
) -> dict[str, Any]:
    """``runs.wait``: queue a run and answer with the thread's values once it has ended."""
    thread_id = await runs.own_thread(user, thread_id)
    started = await create(runs, user, thread_id, body)
    await runs.finished(thread_id, started.run_id, 3600.0)
    return await values_of(runs, thread_id)


@router.get("/threads/{thread_id}/runs")
async def list_runs(
    runs: Runs,
    user: ProtocolUser,
    thread_id: str,
    limit: Annotated[int, Query(ge=1, le=200)] = 10,
    offset: Annotated[int, Query(ge=0)] = 0,
    status: str | None = None,
) -> list[dict[str, Any]]:
    """``runs.list``: the thread's runs, newest first."""
    thread_id = await runs.own_thread(user, thread_id)
    shown = [run_json(r) for r in await runs.list_runs(thread_id, offset + limit)]
    return [r for r in shown if status is None or r["status"] == status][offset:]


@router.get("/threads/{thread_id}/runs/{run_id}")
async def get_run(runs: Runs, user: ProtocolUser, thread_id: str, run_id: str) -> dict[str, Any]:
    """``runs.get``: the run."""
    thread_id = await runs.own_thread(user, thread_id)
    return run_json(await runs.record_of(thread_id, run_id))


@router.get("/threads/{thread_id}/runs/{run_id}/join")
async def join_run(runs: Runs, user: ProtocolUser, thread_id: str, run_id: str) -> dict[str, Any]:
    """``runs.join``: wait for the run to end; the thread's values after it."""
    thread_id = await runs.own_thread(user, thread_id)
    await runs.finished(thread_id, run_id, 3600.0)
    return await values_of(runs, thread_id)


@router.post("/threads/{thread_id}/runs/{run_id}/cancel", status_code=202, response_model=None)
async def cancel(
    runs: Runs,
    user: ProtocolUser,
    thread_id: str,
    run_id: str,
    wait: bool = False,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> dict[str, Any]:
    """``runs.cancel``: stop the run at its next step (``wait``: answer once it stopped)."""
    thread_id = await runs.own_thread(user, thread_id)
    return run_json(await runs.stop_run(thread_id, run_id, action, wait))
