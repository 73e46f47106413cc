"""A thread's checkpoints oldest first, each with the nodes whose step produced it."""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot


async def steps_of(
    graph: CompiledStateGraph[Any, Any, Any, Any], thread_id: str
) -> list[tuple[StateSnapshot, list[str]]]:
    """(checkpoint, nodes that wrote it), oldest first.

    A checkpoint is written by the tasks its parent had pending, so those are its writers.
    """
    snaps = [s async for s in graph.aget_state_history({"configurable": {"thread_id": thread_id}})]
    snaps.reverse()
    out: list[tuple[StateSnapshot, list[str]]] = []
    previous: StateSnapshot | None = None
    for snap in snaps:
        wrote = list(dict.fromkeys(previous.next)) if previous is not None else []
        if previous is not None and not wrote and snap.metadata:
            wrote = [str(snap.metadata.get("source", ""))]
        out.append((snap, wrote))
        previous = snap
    return out
