"""The thread's state read back as its person may see it now (``nodes.plumbing.visibility``).

A route that shows a thread (its state, its history, a reconnect's snapshot) reads it through
:class:`VisibleGraph`; runs read and write the real checkpoints.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, cast

from seekgraph.graph.inspect import Graph
from seekgraph.nodes.plumbing.visibility import WITHHELD, revoked, visible_values, without
from seekgraph.sources.registry import SourceRegistry


class VisibleGraph:
    """A compiled graph whose state reads show what the thread's person may read now.

    Everything but ``aget_state`` and ``aget_state_history`` is the graph's own; a run is
    never driven through this (it reads and writes the real checkpoints).
    """

    def __init__(self, graph: Any, registry: SourceRegistry, user_name: str) -> None:
        self._graph, self._registry, self._user = graph, registry, user_name
        self._seen: dict[tuple[str, str], bool] = {}  # each document checked once per read

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)

    async def _shown(self, snap: Any) -> Any:
        """The snapshot's values and what its interrupts ask the person (a review's evidence)."""
        held = {
            "values": snap.values or {},
            "asked": [{"v": i.value} for i in snap.interrupts],
            "tasks": [[{"v": i.value} for i in t.interrupts] for t in snap.tasks],
        }
        shown = await visible_values(self._registry, self._user, held, self._seen)
        if not shown:  # a person the workspace no longer knows sees nothing
            tasks = tuple(t._replace(interrupts=()) for t in snap.tasks)
            return snap._replace(values={}, interrupts=(), tasks=tasks)

        def asked(interrupts: Any, values: list[dict[str, Any]]) -> tuple[Any, ...]:
            return tuple(replace(i, value=v["v"]) for i, v in zip(interrupts, values, strict=True))

        tasks = tuple(
            t._replace(interrupts=asked(t.interrupts, vs))
            for t, vs in zip(snap.tasks, shown["tasks"], strict=True)
        )
        return snap._replace(
            values=shown["values"], interrupts=asked(snap.interrupts, shown["asked"]), tasks=tasks
        )

    async def aget_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        """The checkpoint, as the person may see it."""
        return await self._shown(await self._graph.aget_state(config, subgraphs=subgraphs))

    async def aget_state_history(self, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """The checkpoints, as the person may see them."""
        async for snap in self._graph.aget_state_history(config, **kwargs):
            yield await self._shown(snap)


def visible_graph(graph: Any, registry: SourceRegistry, user_name: str) -> Graph:
    """``graph`` read as ``user_name`` may see it now (a :class:`VisibleGraph`)."""
    return cast(Graph, VisibleGraph(graph, registry, user_name))


__all__ = ["WITHHELD", "VisibleGraph", "revoked", "visible_graph", "without"]
