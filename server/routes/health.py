"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from server.deps import STORE_DOWN, AppDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz", response_model=None)
async def readyz(app: AppDep) -> dict[str, str] | JSONResponse:
    """Ready to take runs: the checkpoint store answers and the graph is compiled."""
    try:
        await app.coordinator.ping()
    except STORE_DOWN:
        return JSONResponse(
            status_code=503, content={"status": "unavailable", "detail": "redis is unreachable"}
        )
    return {"status": "ready", "backend": app.backend, "instance": app.instance}
