"""A run cannot outlive its wall-clock budget, whatever its branches are waiting on."""

from __future__ import annotations

import asyncio
import time
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from seekgraph.graph.context import BudgetKnobs, Context
from seekgraph.server.runs.local_coordination import LocalCoordinator
from seekgraph.server.runs.manager import RunManager


class Waits(TypedDict, total=False):
    question: str
    answer: str


async def hang(state: Waits) -> dict[str, Any]:
    """A step that never finishes on its own (a source that neither answers nor times out)."""
    await asyncio.sleep(3600)  # the scenario: a step that hangs, not a wait on a condition
    return {"answer": "never"}


async def test_a_run_past_its_time_budget_ends_in_error_and_frees_its_thread() -> None:
    builder = StateGraph(Waits, context_schema=Context)
    builder.add_node("hang", hang)
    builder.add_edge(START, "hang")
    builder.add_edge("hang", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    coordinator = LocalCoordinator()
    await coordinator.create_thread("t1", "alice")
    runs = RunManager(coordinator, "local", lock_ttl_ms=3000, overrun_grace_s=0.2)
    assert await runs.try_lock("t1", "r1")
    started = time.monotonic()
    handle = runs.start(
        "t1",
        "alice",
        {"question": "vpn?"},
        Context(user="alice", budget=BudgetKnobs(max_seconds=0.3)),
        "r1",
        graph=graph,
        flow="search",
    )
    assert handle.task is not None
    await asyncio.wait_for(handle.task, 10)
    assert time.monotonic() - started < 3
    assert handle.status == "error"
    message = next(e.data["message"] for e in handle.events if e.type == "error")
    assert "time budget (0.3 s)" in message
    assert await coordinator.holder("t1") is None  # the thread takes a new run
