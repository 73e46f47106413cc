"""``search_source``: one query on one source — a ``Send`` branch of its own.

Timeouts and retries are declared on the graph builder; when they are exhausted,
``record_source_failure`` turns the error into a ``SourceFailure`` and the other
branches go on.
"""

from __future__ import annotations

from typing import Any

from langgraph.errors import NodeError
from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services, user_of
from seekgraph.sources.web import outgoing_from
from seekgraph.state.events import SourcesEvent
from seekgraph.state.models import SourceFailure
from seekgraph.state.schemas import SearchBranch


async def search_source(
    state: SearchBranch, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Search one source for one query variant, as the run's user."""
    source = services.registry.get(state["source"])
    user = await user_of(services, runtime.context)
    if getattr(source, "outbound", False):
        # the query leaves the deployment: the source checks it against this public text
        with outgoing_from(state.get("public", "")):
            hits = await source.search(state["query"], user, runtime.context.search.search_k)
    else:
        hits = await source.search(state["query"], user, runtime.context.search.search_k)
    event: SourcesEvent = {
        "event": "sources",
        "source": source.name,
        "query": state["query"],
        "titles": list(dict.fromkeys(h["title"] for h in hits)),
    }
    if getattr(source, "outbound", False):
        event["outbound"] = True  # the person sees every query that went out
    runtime.stream_writer(event)
    return {"hits": hits}


def record_source_failure(state: SearchBranch, error: NodeError) -> dict[str, Any]:
    """Error handler of ``search_source``: the failure becomes data in state."""
    exc = error.error
    failure: SourceFailure = {
        "source": state["source"],
        "query": state["query"],
        "error": type(exc).__name__,
        "message": str(exc)[:300],
        "round": state["round"],
    }
    return {"source_failures": [failure]}
