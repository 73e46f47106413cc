"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from seekgraph.server.http.deps import InstanceDep, Runs
from seekgraph.server.service.stores import STORE_DOWN

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz", response_model=None)
async def readyz(runs: Runs, instance: InstanceDep) -> dict[str, str] | JSONResponse:
    """Ready to take runs: the store answers, the graph is compiled, live sources synced once."""
    try:
        indexes = await runs.store_ready()
    except STORE_DOWN:
        return JSONResponse(
            status_code=503, content={"status": "unavailable", "detail": "redis is unreachable"}
        )
    if not indexes:
        return JSONResponse(
            status_code=503,
            content={
                "status": "unavailable",
                "detail": "the checkpoint store has no search indexes (redis restarted empty?) "
                "and they could not be recreated yet",
            },
        )
    if instance.unsynced:  # a source that was never synced would answer "found nothing"
        return JSONResponse(
            status_code=503,
            content={
                "status": "unavailable",
                "detail": f"first sync not finished: {', '.join(sorted(instance.unsynced))}",
            },
        )
    return {"status": "ready", "backend": instance.backend, "instance": instance.name}
