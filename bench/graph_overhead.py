"""The search graph's own overhead per run, beside a bare LangGraph graph of the same shape.

Both use the Redis checkpointer with ``durability="sync"``; every node of the real graph runs
with zero-latency fakes (in-memory sources, a hashing embedder, a constant reranker), so what
is measured is the orchestration: state, reducers, routers, checkpoints. The bare graph has
the same nodes, fan-out and checkpoints, each node returning a constant update. The served
flow (the thread around the search as a subgraph: two more steps and the subgraph's own
checkpoints) is measured beside a bare flow of the same shape (``flow_ratio``).

    python -m bench.graph_overhead --redis-url redis://127.0.0.1:6391 --runs 50
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import operator
import os
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from langgraph.checkpoint.redis.aio import AsyncRedisSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from typing_extensions import TypedDict

from bench.report import command_line, write
from seekgraph.graph.context import Context, FilteringKnobs, SearchKnobs
from seekgraph.graph.run import run, run_config
from seekgraph.graph.search import build_search_graph, search_flow
from seekgraph.nodes.plumbing.services import Services
from seekgraph.sources.base import User
from seekgraph.sources.indexes.memory import InMemorySource, MemoryDocument
from seekgraph.sources.registry import SourceRegistry


class HashEmbedder:
    """Zero-latency embedder: a vector from the text's hash (deterministic, normalised)."""

    name = "hash"
    dim = 16
    cosine_low = 0.0
    cosine_high = 1.0
    paraphrase_cosine = 0.99

    def _vec(self, texts: list[str]) -> Any:
        rows = []
        for t in texts:
            digest = hashlib.sha256(t.encode()).digest()[:16]
            v = np.frombuffer(digest, dtype=np.uint8).astype(np.float32) + 1
            rows.append(v / np.linalg.norm(v))
        return np.array(rows, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_queries(self, texts: list[str]) -> Any:
        return self._vec(texts)

    def embed_passages(self, texts: list[str]) -> Any:
        return self._vec(texts)


class ConstantReranker:
    name = "constant"

    async def rerank(self, query: str, passages: list[str]) -> list[float]:
        return [0.9] * len(passages)


def fake_services(branches: int) -> Services:
    doc = MemoryDocument("d", "VPN", "Connect to the VPN with WireGuard.", acl=["group:all"])
    sources = [InMemorySource(f"s{i}", "kb", [doc]) for i in range(branches)]
    registry = SourceRegistry(sources, [User("u", frozenset({"all"}))])
    embedder = HashEmbedder()
    return Services(registry=registry, embedder=embedder, reranker=ConstantReranker())


class BareState(TypedDict):
    question: str
    hits: Annotated[list[str], operator.add]
    answer: str


def bare_graph(branches: int) -> StateGraph[Any, Any, Any, Any]:
    async def step(state: BareState) -> dict[str, Any]:
        return {}

    async def search(state: dict[str, Any]) -> dict[str, Any]:
        return {"hits": ["h"]}

    async def answer(state: BareState) -> dict[str, Any]:
        return {"answer": "a"}

    def fan(state: BareState) -> list[Send]:
        return [Send("search_source", {"i": i}) for i in range(branches)]

    b = StateGraph(BareState)
    for name in ("prepare", "expand_query", "filter_results", "evaluate", "check_answer"):
        b.add_node(name, step)
    b.add_node("search_source", search)
    b.add_node("integrate", answer)
    b.add_edge(START, "prepare")
    b.add_edge("prepare", "expand_query")
    b.add_conditional_edges("expand_query", fan, ["search_source"])
    b.add_edge("search_source", "filter_results")
    b.add_edge("filter_results", "evaluate")
    b.add_edge("evaluate", "integrate")
    b.add_edge("integrate", "check_answer")
    b.add_edge("check_answer", END)
    return b


class BareThread(TypedDict):
    question: str
    answer: str
    turns: Annotated[list[str], operator.add]


def bare_flow(branches: int) -> StateGraph[Any, Any, Any, Any]:
    """The bare graph as a subgraph inside a thread that keeps turns (the flow's shape)."""

    async def remember(state: BareThread) -> dict[str, Any]:
        return {"turns": [state["question"]]}

    b = StateGraph(BareThread)
    b.add_node("search", bare_graph(branches).compile())
    b.add_node("remember", remember)
    b.add_edge(START, "search")
    b.add_edge("search", "remember")
    b.add_edge("remember", END)
    return b


QUESTION = "How do I connect to the VPN?"


async def time_runs(graph: Any, runs: int, context: Any = None) -> list[float]:
    """Each run driven as every caller drives one (``graph.run``: streamed, then its state)."""
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        await run(graph, {"question": QUESTION}, run_config(uuid.uuid4().hex), context)
        out.append((time.perf_counter() - start) * 1000)
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    async with AsyncRedisSaver.from_conn_string(args.redis_url) as saver:
        for branches in (4, 16):
            services = fake_services(branches)
            real = build_search_graph(services).compile(checkpointer=saver)
            flow = search_flow(services, saver)  # the thread around it, as served
            bare = bare_graph(branches).compile(checkpointer=saver)
            bare_thread = bare_flow(branches).compile(checkpointer=saver)
            ctx = Context(
                user="u",
                search=SearchKnobs(max_variants=1),
                max_rounds=1,
                filtering=FilteringKnobs(fastpass_enabled=False),
            )
            # warm up all three, then interleave blocks so machine noise hits them alike
            await time_runs(real, 3, context=ctx)
            await time_runs(flow, 3, context=ctx)
            await time_runs(bare, 3)
            await time_runs(bare_thread, 3)
            real_ms: list[float] = []
            flow_ms: list[float] = []
            bare_ms: list[float] = []
            bare_flow_ms: list[float] = []
            for _ in range(args.runs // 10):
                real_ms += await time_runs(real, 10, context=ctx)
                flow_ms += await time_runs(flow, 10, context=ctx)
                bare_ms += await time_runs(bare, 10)
                bare_flow_ms += await time_runs(bare_thread, 10)
            r, f, b, bf = (statistics.median(x) for x in (real_ms, flow_ms, bare_ms, bare_flow_ms))

            def p95(ms: list[float]) -> float:
                return round(sorted(ms)[int(len(ms) * 0.95) - 1], 2)

            results[f"{branches}_branches"] = {
                "seekgraph_median_ms": round(r, 2),
                "seekgraph_flow_median_ms": round(f, 2),
                "bare_langgraph_median_ms": round(b, 2),
                "bare_flow_median_ms": round(bf, 2),
                "ratio": round(r / b, 2),
                "flow_ratio": round(f / bf, 2),
                "seekgraph_p95_ms": p95(real_ms),
                "seekgraph_flow_p95_ms": p95(flow_ms),
                "bare_p95_ms": p95(bare_ms),
                "runs": len(real_ms),
            }
    return results


def overhead_main(
    module: str,
    doc: str,
    measure: Callable[[argparse.Namespace], Awaitable[Any]],
    runs: int,
    target: str,
) -> None:
    """The command line of an overhead benchmark: Redis, runs, where the JSON goes."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("SEEKGRAPH_TEST_REDIS_URL", "redis://127.0.0.1:6391/0"),
    )
    parser.add_argument("--runs", type=int, default=runs)
    name = module.split(".")[-1]
    parser.add_argument("--json", type=Path, default=Path(f"bench/results/{name}.json"))
    args = parser.parse_args()
    started = time.time()
    results = asyncio.run(measure(args))
    out = {
        "command": command_line(module, args),
        "checkpointer": "AsyncRedisSaver, durability=sync, Redis 8.2 on loopback",
        "results": results,
        "target": target,
    }
    write(args.json, out, started)


def main() -> None:
    target = "seekgraph within 1.5x of the bare graph"
    overhead_main("bench.graph_overhead", __doc__ or "", main_async, 50, target)


if __name__ == "__main__":
    main()
