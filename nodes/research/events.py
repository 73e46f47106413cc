"""How the research flow's nodes tell what they did: a ``node`` event with the run's trace id."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import node_name
from seekgraph.state.events import node_event


def tell(runtime: Runtime[Context], state: Any, node: str, summary: str, **detail: Any) -> None:
    """Stream one research node's event; ``node`` is its name unless the graph renamed it."""
    trace = detail.pop("trace_id", None) or state.get("trace_id", "")
    runtime.stream_writer(node_event(node_name(node), summary, trace_id=trace, **detail))
