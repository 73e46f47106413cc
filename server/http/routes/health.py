"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from server.http.deps import STORE_DOWN, AppDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz", response_model=None)
async def readyz(app: AppDep) -> dict[str, str] | JSONResponse:
    """Ready to take runs: the checkpoint store answers and the graph is compiled."""
    try:
        indexes = await app.store_ready()
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
    return {"status": "ready", "backend": app.backend, "instance": app.instance}
