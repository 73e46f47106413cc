"""Typed dependencies: each route declares only what it uses (``Annotated`` aliases).

The app's ``AppState`` (built once at start-up, ``server.app_state``) is the container they
are taken from; no route takes the container itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Request
from fastapi.responses import StreamingResponse

from seekgraph.graph.api import User
from seekgraph.server.app_state import AppState, measure
from seekgraph.server.audit import AuditLog
from seekgraph.server.caller import door_of
from seekgraph.server.observe import Metrics
from seekgraph.server.service.run_service import RunService
from seekgraph.server.service.sse import with_heartbeats
from seekgraph.server.settings import Settings

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _root(request: Request) -> AppState:
    state: AppState = request.app.state.seekgraph
    return state


def run_service(request: Request) -> RunService:
    """Threads and runs: the one implementation every door translates to."""
    return _root(request).service


def settings(request: Request) -> Settings:
    """The process's settings."""
    return _root(request).settings


def metrics(request: Request) -> Metrics:
    """The process's metrics."""
    return _root(request).metrics


def audit_log(request: Request) -> AuditLog:
    """Who was shown which documents."""
    return _root(request).audit


@dataclass(frozen=True)
class Instance:
    """What readiness reports of this process."""

    backend: str
    name: str
    unsynced: set[str]
    """Live connectors whose first sync since start has not ended."""


def instance(request: Request) -> Instance:
    """The process: its store's backend, its name, the connectors not synced yet."""
    state = _root(request)
    return Instance(state.backend, state.instance, state.unsynced)


async def fresh_metrics(request: Request) -> Metrics:
    """The metrics with their gauges measured now (index sizes, syncs, queue, store)."""
    state = _root(request)
    await measure(state)
    return state.metrics


Runs = Annotated[RunService, Depends(run_service)]
SettingsDep = Annotated[Settings, Depends(settings)]
MetricsDep = Annotated[Metrics, Depends(metrics)]
AuditDep = Annotated[AuditLog, Depends(audit_log)]
InstanceDep = Annotated[Instance, Depends(instance)]
FreshMetrics = Annotated[Metrics, Depends(fresh_metrics)]


class SseResponses:
    """SSE responses with heartbeats, counted as open streams."""

    def __init__(self, metrics: Metrics, heartbeat_seconds: float) -> None:
        self.metrics = metrics
        self.heartbeat_seconds = heartbeat_seconds

    def __call__(
        self, frames: AsyncIterator[bytes], run_id: str | None = None
    ) -> StreamingResponse:
        """An SSE response of ``frames`` (``X-Run-Id`` names the run)."""
        headers = dict(SSE_HEADERS)
        if run_id:
            headers["X-Run-Id"] = run_id

        async def counted() -> AsyncIterator[bytes]:
            self.metrics.sse_open.inc()
            try:
                async for raw in with_heartbeats(frames, self.heartbeat_seconds):
                    yield raw
            finally:
                self.metrics.sse_open.dec()

        return StreamingResponse(counted(), media_type="text/event-stream", headers=headers)


def sse_responses(metrics: MetricsDep, settings: SettingsDep) -> SseResponses:
    """How a door answers with a run's event stream."""
    return SseResponses(metrics, settings.heartbeat_seconds)


Sse = Annotated[SseResponses, Depends(sse_responses)]


async def current_user(request: Request, runs: Runs) -> User:
    """The user of the bearer API key; 401 without a valid one."""
    header = request.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise HTTPException(
            401,
            "send an API key: Authorization: Bearer <key>",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return await runs.user_for_key(key.strip(), door_of(request.url.path))


UserDep = Annotated[User, Depends(current_user)]


async def owned_thread(runs: Runs, user: UserDep, thread_id: Annotated[str, Path()]) -> str:
    """The canonical thread id, when the caller owns it; 404 otherwise (exists or not)."""
    return await runs.own_thread(user, thread_id)


ThreadDep = Annotated[str, Depends(owned_thread)]
