"""What operators read: Prometheus metrics and the audit trail (the internal token's)."""

from __future__ import annotations

import dataclasses
import hmac
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from seekgraph.server.http.deps import AuditDep, FreshMetrics, SettingsDep

router = APIRouter(tags=["operations"])


async def operator(request: Request, settings: SettingsDep) -> None:
    """``Authorization: Bearer $SEEKGRAPH_INTERNAL_TOKEN``; 403 otherwise (404 unset)."""
    secret = settings.internal_token
    if secret is None:
        raise HTTPException(404, "set SEEKGRAPH_INTERNAL_TOKEN to serve operator endpoints")
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    expected = secret.get_secret_value().encode()
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        given.strip().encode("utf-8", "surrogateescape"), expected
    ):
        raise HTTPException(403, "operator endpoints take the internal token")


OperatorDep = Annotated[None, Depends(operator)]


@router.get("/metrics", include_in_schema=False)
async def metrics(_: OperatorDep, measured: FreshMetrics) -> Response:
    """The ``seekgraph_*`` series in Prometheus text format."""
    return Response(generate_latest(measured.registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/admin/audit")
async def audit(
    log: AuditDep,
    _: OperatorDep,
    user: Annotated[str | None, Query(max_length=256)] = None,
    doc: Annotated[str | None, Query(max_length=1000)] = None,
    since: Annotated[float | None, Query(description="epoch seconds")] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> list[dict[str, Any]]:
    """Audit entries, oldest first: who was shown which documents, when, by which door."""
    entries = await log.query(user=user, doc=doc, since=since, limit=limit)
    return [dataclasses.asdict(e) for e in entries]
