"""What operators read: Prometheus metrics and the audit trail (the internal token's)."""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import json
import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from seekgraph.graph.api import connector_state
from seekgraph.server.http.deps import AppDep

router = APIRouter(tags=["operations"])

#: The store's sizes walk every key: measured at most this often, whatever the scrapes.
STORE_EVERY_S = 30.0


async def operator(request: Request, app: AppDep) -> None:
    """``Authorization: Bearer $SEEKGRAPH_INTERNAL_TOKEN``; 403 otherwise (404 unset)."""
    secret = app.settings.internal_token
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
async def metrics(app: AppDep, _: OperatorDep) -> Response:
    """The ``seekgraph_*`` series in Prometheus text format."""
    await app.services.registry.refresh_sources()
    for source in app.services.registry.select():
        index, name = getattr(source, "index", None), getattr(source, "name", "")
        if index is not None and hasattr(index, "count"):
            documents, chunks = await asyncio.to_thread(index.count, name)
            app.metrics.index_documents.labels(name).set(documents)
            app.metrics.index_chunks.labels(name).set(chunks)
            synced = await asyncio.to_thread(index.get_meta, f"synced:{name}")
            if synced:
                state = json.loads(synced)
                app.metrics.synced_at.labels(name).set(state["at"])
                app.metrics.sync_problems.labels(name).set(state["problems"])
    for connector, index in app.services.registry.connectors:
        kept = await asyncio.to_thread(connector_state, index, connector.name)
        if kept.get("at"):
            app.metrics.synced_at.labels(connector.name).set(kept["at"])
        app.metrics.sync_problems.labels(connector.name).set(len(kept.get("problems") or []))
        app.metrics.connector_failing.labels(connector.name).set(1 if kept.get("error") else 0)
    for state, count in (await app.queue.depth()).items():
        app.metrics.queue_runs.labels(state).set(count)
    stale = time.monotonic() - app.metrics.store_measured_at > STORE_EVERY_S
    if app.redis is not None and app.retention is not None and stale:
        from seekgraph.server.runs.retention import threads_past_half
        from seekgraph.server.runs.storage import FAMILIES, family_sizes

        sizes = await family_sizes(app.redis)
        for family in [name for name, _ in FAMILIES] + ["other"]:
            app.metrics.store_bytes.labels(family).set(sizes.bytes[family])
            app.metrics.store_keys.labels(family).set(sizes.keys[family])
        past, unmanaged = await threads_past_half(app.redis, app.retention.ttl_s)
        app.metrics.threads_past_half.set(past)
        app.metrics.threads_unmanaged.set(unmanaged)
        app.metrics.store_measured_at = time.monotonic()
    return Response(generate_latest(app.metrics.registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/admin/audit")
async def audit(
    app: AppDep,
    _: OperatorDep,
    user: Annotated[str | None, Query(max_length=256)] = None,
    doc: Annotated[str | None, Query(max_length=1000)] = None,
    since: Annotated[float | None, Query(description="epoch seconds")] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> list[dict[str, Any]]:
    """Audit entries, oldest first: who was shown which documents, when, by which door."""
    entries = await app.audit.query(user=user, doc=doc, since=since, limit=limit)
    return [dataclasses.asdict(e) for e in entries]
