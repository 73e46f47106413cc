"""Reading a thread's checkpoints back: every step of a flow and of the searches inside it.

A flow runs its search as a subgraph whose checkpoints live in the same thread under their
own namespace (``search:<task id>``). These helpers put them back in order, so the history
shows what each node decided, and the latest question's whole state (budget, verdict,
evidence) can be read after it finished.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot

Graph = CompiledStateGraph[Any, Any, Any, Any]


def _config(thread_id: str, namespace: str = "") -> Any:
    configurable = {"thread_id": thread_id}
    if namespace:
        configurable["checkpoint_ns"] = namespace
    return {"configurable": configurable}


def _id(config: Any) -> str | None:
    found = (config or {}).get("configurable", {}).get("checkpoint_id")
    return str(found) if found else None


async def _history(graph: Graph, thread_id: str, namespace: str = "") -> list[StateSnapshot]:
    """The checkpoints of one namespace that lead to its latest one, oldest first.

    Filtered here: the Redis saver lists every namespace of the thread for the root's ``""``.
    Only the latest checkpoint's line of parents counts: a run that was rolled back left its
    steps on a branch that the thread no longer continues.
    """
    snaps = [
        s
        async for s in graph.aget_state_history(_config(thread_id, namespace))
        if (s.config or {}).get("configurable", {}).get("checkpoint_ns", "") == namespace
    ]
    by_id = {_id(s.config): s for s in snaps}
    line: list[StateSnapshot] = []
    snap = snaps[0] if snaps else None
    while snap is not None and len(line) < len(snaps):
        line.append(snap)
        parent = _id(snap.parent_config)
        snap = by_id.get(parent) if parent else None
    line.reverse()
    return line


def _with_writers(snaps: list[StateSnapshot]) -> list[tuple[StateSnapshot, list[str]]]:
    """A checkpoint is written by the tasks its parent had pending, so those are its writers."""
    out: list[tuple[StateSnapshot, list[str]]] = []
    previous: StateSnapshot | None = None
    for snap in snaps:
        wrote = list(dict.fromkeys(previous.next)) if previous is not None else []
        if previous is not None and not wrote and snap.metadata:
            wrote = [str(snap.metadata.get("source", ""))]
        out.append((snap, wrote))
        previous = snap
    return out


def _subgraph_runs(graph: Graph, snaps: list[StateSnapshot]) -> list[tuple[int, str]]:
    """(position of the parent checkpoint, namespace) of each subgraph run, oldest first."""
    names = {name for name, _ in graph.get_subgraphs()}
    seen: dict[str, int] = {}
    for i, snap in enumerate(snaps):
        for task in snap.tasks:
            if task.name in names:
                seen.setdefault(f"{task.name}:{task.id}", i)
    return [(i, ns) for ns, i in seen.items()]


async def steps_of(graph: Graph, thread_id: str) -> list[tuple[StateSnapshot, list[str]]]:
    """(checkpoint, nodes that wrote it) of the thread, oldest first, searches included.

    A search's steps follow the flow's checkpoint that started it.
    """
    snaps = await _history(graph, thread_id)
    runs = _subgraph_runs(graph, snaps)
    out: list[tuple[StateSnapshot, list[str]]] = []
    for i, step in enumerate(_with_writers(snaps)):
        out.append(step)
        for at, namespace in runs:
            if at == i:
                out += _with_writers(await _history(graph, thread_id, namespace))[1:]
    return out


async def flow_steps(graph: Graph, thread_id: str) -> list[tuple[StateSnapshot, list[str]]]:
    """(checkpoint, nodes that wrote it) of the flow itself, oldest first (no subgraphs)."""
    return _with_writers(await _history(graph, thread_id))


async def question_state(graph: Graph, thread_id: str) -> dict[str, Any]:
    """The latest question's whole state (its search's keys) with the thread's turns.

    For a graph without a search subgraph, its own latest state.
    """
    snaps = await _history(graph, thread_id)
    values = dict(snaps[-1].values) if snaps else {}
    runs = _subgraph_runs(graph, snaps)
    if not runs:
        return values
    latest = await graph.aget_state(_config(thread_id, runs[-1][1]))
    return {**values, **latest.values, "turns": values.get("turns", [])}


__all__ = ["flow_steps", "question_state", "steps_of"]
