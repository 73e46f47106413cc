"""The research flow's own orchestration cost, beside a bare LangGraph graph of its shape.

Sub-questions are answered by a zero-latency fake search graph, so what is measured is the
flow: plan checks, review, batches of ``Send``, the scheduler, the report and its checks,
and Redis checkpoints (``durability="sync"``). Two plans: a chain of 5 and a wide DAG of 15
(5 roots, 10 depending on them). The bare graph has the same batches and checkpoints, each
node returning a constant update.

    python -m bench.research_overhead --redis-url redis://127.0.0.1:6390/0 --runs 30
"""

from __future__ import annotations

import argparse
import operator
import statistics
import time
import uuid
from typing import Annotated, Any

from langgraph.checkpoint.redis.aio import AsyncRedisSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from typing_extensions import TypedDict

from bench.graph_overhead import fake_services, overhead_main
from seekgraph.graph.context import Context
from seekgraph.graph.research import build_research_graph
from seekgraph.graph.run import run, run_config


class FakeSearch(TypedDict, total=False):
    question: str
    turns: list[Any]
    answer: str
    evidence: list[Any]
    citations: list[Any]
    unanswered: list[str]


def fake_search() -> Any:
    """A search graph that answers at once (with a citation: no gap round follows)."""

    async def answer(state: FakeSearch) -> dict[str, Any]:
        cited = [{"id": "d#0"}]
        return {"answer": "- found [src:d#0]", "evidence": [], "citations": cited, "unanswered": []}

    b = StateGraph(FakeSearch)
    b.add_node("answer", answer)
    b.add_edge(START, "answer")
    b.add_edge("answer", END)
    return b.compile(name="search")


def chain(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"q{i}", "question": f"step {i}", "depends_on": [f"q{i - 1}"] if i > 1 else []}
        for i in range(1, n + 1)
    ]


def wide(roots: int, leaves: int) -> list[dict[str, Any]]:
    plan = [{"id": f"r{i}", "question": f"root {i}", "depends_on": []} for i in range(roots)]
    plan += [
        {"id": f"l{i}", "question": f"leaf {i}", "depends_on": [f"r{i % roots}"]}
        for i in range(leaves)
    ]
    return plan


class BareState(TypedDict, total=False):
    question: str
    plan: list[dict[str, Any]]
    done: Annotated[list[str], operator.add]
    answer: str


def bare_graph() -> Any:
    """Plan → schedule ⟲ Send(worker) per ready step → report, each node a constant."""

    async def step(state: BareState) -> dict[str, Any]:
        return {}

    async def worker(state: dict[str, Any]) -> dict[str, Any]:
        return {"done": [state["id"]]}

    async def report(state: BareState) -> dict[str, Any]:
        return {"answer": "a"}

    def batch(state: BareState) -> Any:
        done = set(state.get("done", []))
        ready = [
            Send("worker", {"id": s["id"]})
            for s in state["plan"]
            if s["id"] not in done and set(s["depends_on"]) <= done
        ]
        return ready or "report"

    b = StateGraph(BareState)
    for name in ("plan", "review", "schedule"):
        b.add_node(name, step)
    b.add_node("worker", worker)
    b.add_node("report", report)
    b.add_node("check", step)
    b.add_edge(START, "plan")
    b.add_edge("plan", "review")
    b.add_edge("review", "schedule")
    b.add_conditional_edges("schedule", batch, ["worker", "report"])
    b.add_edge("worker", "schedule")
    b.add_edge("report", "check")
    b.add_edge("check", END)
    return b


async def time_runs(graph: Any, plan: list[dict[str, Any]], runs: int, ctx: Any) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        await run(graph, {"question": "r", "plan": plan}, run_config(uuid.uuid4().hex), ctx)
        out.append((time.perf_counter() - start) * 1000)
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    async with AsyncRedisSaver.from_conn_string(args.redis_url) as saver:
        research = build_research_graph(fake_services(1), fake_search()).compile(checkpointer=saver)
        bare = bare_graph().compile(checkpointer=saver)
        ctx = Context(user="u")
        for name, plan in (("chain_5", chain(5)), ("wide_15", wide(5, 10))):
            await time_runs(research, plan, 2, ctx)
            await time_runs(bare, plan, 2, None)
            r_ms: list[float] = []
            b_ms: list[float] = []
            for _ in range(args.runs // 5):
                r_ms += await time_runs(research, plan, 5, ctx)
                b_ms += await time_runs(bare, plan, 5, None)
            r, b = statistics.median(r_ms), statistics.median(b_ms)
            results[name] = {
                "research_median_ms": round(r, 1),
                "bare_median_ms": round(b, 1),
                "overhead_ms": round(r - b, 1),
                "runs": len(r_ms),
            }
    return results


def main() -> None:
    target = "overhead ≤ 50 ms at 5 sub-questions, ≤ 150 ms at 15"
    overhead_main("bench.research_overhead", __doc__ or "", main_async, 30, target)


if __name__ == "__main__":
    main()
