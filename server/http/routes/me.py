"""The caller: who they are, which sources they may search, which flows they may run."""

from __future__ import annotations

from fastapi import APIRouter

from seekgraph.graph.flows import FLOWS
from seekgraph.server.http.api_models import FlowOut, MeOut, SourceOut
from seekgraph.server.http.deps import Runs, UserDep

router = APIRouter(tags=["me"])


@router.get("/me")
async def me(runs: Runs, user: UserDep) -> MeOut:
    """The API key's user and the sources a run may search (each enforces its own ACLs)."""
    sources = [
        SourceOut(name=s.name, kind=s.kind, authority=s.authority)
        for s in await runs.searchable_sources()
    ]
    return MeOut(user=user.name, display_name=user.display_name or user.name, sources=sources)


@router.get("/flows")
async def flows(user: UserDep) -> list[FlowOut]:
    """The flows a run may choose (``flow`` in the run request)."""
    return [FlowOut(name=name, description=flow.description) for name, flow in FLOWS.items()]
