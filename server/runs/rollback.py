"""Where a run began, and putting a thread back there (a cancel with ``rollback``)."""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph


async def checkpoint_id(
    graph: CompiledStateGraph[Any, Any, Any, Any], thread_id: str
) -> str | None:
    """The id of the thread's latest checkpoint (None: the thread has none yet)."""
    snap = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    found = (snap.config or {}).get("configurable", {}).get("checkpoint_id")
    return str(found) if found and snap.created_at else None


async def roll_back(
    graph: CompiledStateGraph[Any, Any, Any, Any], thread_id: str, before: str | None
) -> None:
    """Put the thread back where a run found it: its checkpoint then is the latest again.

    A copy of that checkpoint is written as the newest, so the cancelled run's steps are
    left on a branch the thread no longer continues (its history and state follow the
    latest checkpoint's line); a thread that had none is emptied.
    """
    if before is None:
        assert graph.checkpointer is not None and not isinstance(graph.checkpointer, bool)
        await graph.checkpointer.adelete_thread(thread_id)
        return
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_id": before}}
    await graph.aupdate_state(config, None, as_node="__copy__")
