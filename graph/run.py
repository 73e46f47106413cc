"""One way to run a graph: stream its typed events, end with its output.

The CLI, the server's ``RunManager``, the benchmarks and the tests all drive a compiled graph
through ``stream_run``: it yields the nodes' own events (``node``, ``sources``, ``token``,
``error``), a ``node_start`` when a node begins, and last an ``answer`` (the output) or a
``waiting`` (the run paused at an ``interrupt()``). ``RunResult`` keeps the final state for
callers that need more than the answer (the evidence, the budget).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from seekgraph.providers.chat import AnswerInterruptedError, ModelClientError
from seekgraph.state.events import EVENT_TYPES, StreamEvent, answer_event

RUN_ERRORS = (ValueError, ModelClientError, AnswerInterruptedError)
"""Errors a run stops with whose message tells the person what to fix (bad input, a refused
model request) or what happened (``AnswerInterruptedError``: resumable); others are bugs."""
RESUMABLE_ERRORS = (AnswerInterruptedError,)


@dataclass
class RunResult:
    """What a finished (or paused) run left: its final state, output and interrupts."""

    values: dict[str, Any] = field(default_factory=dict)
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    events: list[StreamEvent] = field(default_factory=list)
    """Every event ``run`` saw (``stream_run`` leaves this empty: its caller sees them)."""

    @property
    def waiting(self) -> bool:
        """The run paused for a person."""
        return bool(self.interrupts)


def jsonable(value: Any) -> Any:
    """State and updates as JSON: interrupts become ``{"id", "value"}``, the rest as is."""
    return json.loads(json.dumps(value, default=_plain))


def _plain(value: Any) -> Any:
    if hasattr(value, "value") and hasattr(value, "id"):  # langgraph.types.Interrupt
        return {"id": value.id, "value": value.value}
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    return str(value)


def run_config(thread_id: str, **metadata: Any) -> dict[str, Any]:
    """The config of a run on ``thread_id`` (metadata is stored with its checkpoints)."""
    return {"configurable": {"thread_id": thread_id}, "metadata": metadata}


async def stream_run(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    graph_input: dict[str, Any] | Command[Any] | None,
    config: dict[str, Any],
    context: Any,
    result: RunResult | None = None,
    on_chunk: Callable[[str, Any], None] | None = None,
    values: bool = False,
    starts: bool = True,
    on_task: Callable[[tuple[str, ...], dict[str, Any]], None] | None = None,
) -> AsyncIterator[StreamEvent]:
    """Drive ``graph`` and yield its events; ``graph_input=None`` continues a checkpoint.

    ``on_chunk(mode, chunk)`` sees the flow's own ``values`` chunks when ``values`` asks for
    them (a whole state after every step: only a door that relays them should), and
    every ``updates`` and ``custom`` one, the search's nodes' included, as they come (the
    server's LangGraph-protocol door relays them). Events of subgraphs (the search inside a
    flow) stream like the flow's own. ``starts=False`` leaves out ``node_start`` events
    (LangGraph then streams no task payloads); with ``starts``, ``on_task(namespace, chunk)``
    sees every task's start and result (what traces and latency metrics are made of).
    Errors raised by a node propagate; what was saved before them stays in the checkpoint.
    """
    result = result if result is not None else RunResult()
    async for namespace, mode, chunk in graph.astream(  # type: ignore[call-overload]
        graph_input,
        config,
        context=context,
        stream_mode=[
            "custom",
            "updates",
            *(["tasks"] if starts else []),
            *(["values"] if values else []),
        ],
        durability="sync",
        subgraphs=True,
    ):
        if on_chunk is not None and (
            mode in ("custom", "updates") or (mode == "values" and not namespace)
        ):
            on_chunk(mode, chunk)
        if on_task is not None and mode == "tasks":
            on_task(namespace, chunk)
        if mode == "updates" and "__interrupt__" in chunk:
            result.interrupts = jsonable(chunk["__interrupt__"])
        elif mode == "tasks" and "input" in chunk and not chunk["name"].startswith("__"):
            yield {"event": "node_start", "node": chunk["name"]}
        elif mode == "custom" and isinstance(chunk, dict) and chunk.get("event") in EVENT_TYPES:
            yield chunk  # type: ignore[misc]
    result.values = dict((await graph.aget_state(config)).values)  # type: ignore[arg-type]
    if result.interrupts:
        yield {"event": "waiting", "interrupts": result.interrupts}
    else:
        yield answer_event(result.values)


async def run(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    graph_input: dict[str, Any] | Command[Any] | None,
    config: dict[str, Any],
    context: Any,
) -> RunResult:
    """Drive ``graph`` to its end (or its pause) and keep every event."""
    result = RunResult()
    async for event in stream_run(graph, graph_input, config, context, result):
        result.events.append(event)
    return result


__all__ = [
    "RESUMABLE_ERRORS",
    "RUN_ERRORS",
    "RunResult",
    "jsonable",
    "run",
    "run_config",
    "stream_run",
]
