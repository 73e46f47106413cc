"""What each front door costs beside the native SSE API: first-token latency and run time.

Starts a Redis server (PyPI packages), the test model server (streams the answer at a fixed
pace) and one seekgraph instance, then asks the same question through each door in
interleaved rounds (native SSE, OpenAI-compatible chat with the ``openai`` client, the
LangGraph protocol with ``langgraph_sdk``, MCP ``ask`` with the ``mcp`` client):

- **first token**: seconds from the request to the first piece of the answer (native
  ``token``, OpenAI content delta, LangGraph ``custom`` token event); MCP returns the answer
  whole, so its "first token" is the complete result;
- **run**: seconds from the request to the end of the stream / the tool's result.

Medians per door, and each door's overhead (median difference to native, same round).

    python -m bench.doors --runs 20 --json bench/results/doors.json
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
from langgraph_sdk import get_client
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.report import command_line, write
from seekgraph.server.auth import add_key_to_file
from tests.support.processes import Proc, start_app, start_model_server, start_redis

QUESTION = "How do I connect to the VPN from a new laptop?"


async def native(base: str, key: str) -> tuple[float, float]:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(timeout=120) as c:
        thread = (await c.post(f"{base}/threads", headers=headers)).json()["thread_id"]
        started = time.perf_counter()
        first = None
        async with c.stream(
            "POST", f"{base}/threads/{thread}/runs", json={"question": QUESTION}, headers=headers
        ) as r:
            async for line in r.aiter_lines():
                if first is None and line == "event: token":
                    first = time.perf_counter() - started
    return first or float("nan"), time.perf_counter() - started


async def openai_chat(base: str, key: str) -> tuple[float, float]:
    async with openai.AsyncOpenAI(base_url=base + "/v1", api_key=key, max_retries=0) as c:
        started = time.perf_counter()
        first = None
        stream = await c.chat.completions.create(
            model="seekgraph-search", messages=[{"role": "user", "content": QUESTION}], stream=True
        )
        async for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter() - started
    return first or float("nan"), time.perf_counter() - started


async def langgraph(base: str, key: str) -> tuple[float, float]:
    async with get_client(url=base + "/langgraph", api_key=key) as c:
        thread = (await c.threads.create())["thread_id"]
        started = time.perf_counter()
        first = None
        async for part in c.runs.stream(
            thread, "search", input={"question": QUESTION}, stream_mode=["custom"]
        ):
            if first is None and part.event == "custom" and part.data.get("event") == "token":
                first = time.perf_counter() - started
    return first or float("nan"), time.perf_counter() - started


async def mcp_ask(base: str, key: str) -> tuple[float, float]:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        async with Client(streamable_http_client(base + "/mcp", http_client=http)) as c:
            started = time.perf_counter()
            await c.call_tool("ask", {"question": QUESTION})
            took = time.perf_counter() - started
    return took, took


DOORS = {"native": native, "openai": openai_chat, "langgraph": langgraph, "mcp": mcp_ask}


async def measure(base: str, key: str, runs: int) -> dict[str, Any]:
    samples: dict[str, list[tuple[float, float]]] = {d: [] for d in DOORS}
    for door in DOORS.values():  # warm every path once
        await door(base, key)
    for _ in range(runs):
        for name, door in DOORS.items():
            samples[name].append(await door(base, key))
    out: dict[str, Any] = {}
    for name, values in samples.items():
        firsts = [f for f, _ in values]
        totals = [t for _, t in values]
        native_first = [f for f, _ in samples["native"]]
        native_total = [t for _, t in samples["native"]]
        out[name] = {
            "first_token_p50_s": round(statistics.median(firsts), 4),
            "run_p50_s": round(statistics.median(totals), 4),
            "first_token_overhead_p50_ms": round(
                1000 * statistics.median(f - n for f, n in zip(firsts, native_first, strict=True)),
                1,
            ),
            "run_overhead_p50_ms": round(
                1000 * statistics.median(t - n for t, n in zip(totals, native_total, strict=True)),
                1,
            ),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", type=Path, default=Path("bench/results/doors.json"))
    args = parser.parse_args()
    started = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="seekgraph-doors-"))
    procs: list[Proc] = []
    try:
        redis_proc, redis_url = start_redis(tmp)
        procs.append(redis_proc)
        model = start_model_server(tmp, delay=0.01, tokens=40)
        procs.append(model)
        keys = tmp / "keys.json"
        key = add_key_to_file(keys, "alice")
        app = start_app(
            tmp,
            "doors",
            {
                "SEEKGRAPH_REDIS_URL": redis_url,
                "SEEKGRAPH_API_KEYS_FILE": keys,
                "SEEKGRAPH_LLM_MODEL": "test-model",
                "SEEKGRAPH_LLM_BASE_URL": model.url + "/v1",
                "SEEKGRAPH_LLM_API_KEY": "unused",
            },
        )
        procs.append(app)
        systems = asyncio.run(measure(app.url, key, args.runs))
        write(
            args.json,
            {
                "command": command_line("bench.doors", args),
                "systems": systems,
                "note": "the test model server streams 40 answer tokens 10 ms apart; every "
                "door runs the same LLM-mode search graph on one instance with Redis",
            },
            started,
        )
    finally:
        for p in reversed(procs):
            p.stop()


if __name__ == "__main__":
    main()
