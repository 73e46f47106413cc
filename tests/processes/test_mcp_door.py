"""The MCP door, driven by the official ``mcp`` client over streamable HTTP and over stdio.

Real processes: a seekgraph server (extractive mode, SQLite, the demo workspace) and
``seekgraph mcp`` launched by the client itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from seekgraph.server.auth import add_key_to_file
from tests.support import BIN, REPO, RESTRICTED_MARKERS
from tests.support.processes import Proc, start_app
from tests.support.waiting import await_until

NIGHTJAR = "What did the Project Nightjar penetration test find?"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("mcp-door")
    keys = tmp / "keys.json"
    env = {"SEEKGRAPH_API_KEYS_FILE": keys, "SEEKGRAPH_HEARTBEAT_SECONDS": "0.5"}
    w = {
        "tmp": tmp,
        "keys": keys,
        "alice": add_key_to_file(keys, "alice"),
        "bob": add_key_to_file(keys, "bob"),
    }
    app: Proc = start_app(tmp, "mcp", {**env, "SEEKGRAPH_LLM_MODEL": ""})
    w["app"] = app
    try:
        yield w
    finally:
        app.stop()


@asynccontextmanager
async def over_http(w: dict, key: str) -> AsyncIterator[Client]:
    """The official client over streamable HTTP, sending the API key (its HTTP client is ours)."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        transport = streamable_http_client(w["app"].url + "/mcp", http_client=http)
        async with Client(transport) as client:
            yield client


def over_stdio(w: dict, *args: str) -> Client:
    env = {
        **os.environ,
        "SEEKGRAPH_DATA_DIR": str(w["tmp"] / "stdio-data"),
        "SEEKGRAPH_API_KEYS_FILE": str(w["keys"]),
    }
    env.pop("SEEKGRAPH_LLM_MODEL", None)
    env.pop("SEEKGRAPH_REDIS_URL", None)
    command = str(BIN / "seekgraph") if (BIN / "seekgraph").exists() else sys.executable
    prefix = [] if command.endswith("seekgraph") else ["-m", "seekgraph.server.cli.main"]
    params = StdioServerParameters(
        command=command, args=[*prefix, "mcp", *args], env=env, cwd=str(REPO)
    )
    return Client(params, read_timeout_seconds=120)


async def test_tools_are_listed_with_schemas_and_read_only_annotations(world) -> None:
    async with over_http(world, world["alice"]) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        templates = (await client.list_resource_templates()).resource_templates
    assert {"search", "ask", "research", "read_document"} <= set(tools)
    for tool in tools.values():
        assert tool.input_schema["type"] == "object" and tool.output_schema is not None
        assert tool.annotations.read_only_hint is True
    assert tools["search"].input_schema["required"] == ["query"]
    assert [t.uri_template for t in templates] == ["seekgraph://sources/{kind}"]


async def test_search_ask_and_read_over_http(world) -> None:
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async with over_http(world, world["alice"]) as client:
        found = await client.call_tool("search", {"query": "VPN gateway for a new laptop", "k": 5})
        assert not found.is_error
        passages = found.structured_content["passages"]
        assert 0 < len(passages) <= 5 and passages[0]["doc_id"] and passages[0]["text"]
        answered = await client.call_tool(
            "ask", {"question": "How do I connect to the VPN from a new laptop?"},
            progress_callback=on_progress,
        )  # fmt: skip
        result = answered.structured_content
        assert result["status"] == "done" and result["citations"] and result["thread_id"]
        assert any(m.startswith("evaluate:") for m in progress)
        doc_id = result["citations"][0]["id"].split("#")[0]
        read = await client.call_tool("read_document", {"doc_id": doc_id, "max_chars": 200})
        document = read.structured_content
        assert document["doc_id"] == doc_id and len(document["text"]) <= 200
        sources = await client.read_resource("seekgraph://sources/all")
    listed = json.loads(sources.contents[0].text)["sources"]
    assert {"kb", "chat"} <= {s["name"] for s in listed}


async def test_bob_never_gets_alices_material_from_any_tool(world) -> None:
    async with over_http(world, world["bob"]) as client:
        found = await client.call_tool("search", {"query": "Nightjar penetration test findings"})
        answered = await client.call_tool("ask", {"question": NIGHTJAR})
        hidden = await client.call_tool(
            "read_document", {"doc_id": "docs/security/nightjar-pentest"}
        )
    seen = json.dumps([found.structured_content, answered.structured_content])
    assert not [m for m in RESTRICTED_MARKERS if m in seen]
    assert hidden.is_error and "no document" in hidden.content[0].text
    async with over_http(world, world["alice"]) as client:  # the canaries are findable
        mine = await client.call_tool("read_document", {"doc_id": "docs/security/nightjar-pentest"})
    assert "orchid-42" in mine.structured_content["text"]


async def test_bad_arguments_are_clear_tool_errors(world) -> None:
    async with over_http(world, world["alice"]) as client:
        too_many = await client.call_tool("search", {"query": "vpn", "k": 500})
        unknown = await client.call_tool("search", {"query": "vpn", "sources": ["wiki"]})
        empty = await client.call_tool("ask", {"question": ""})
        after = await client.call_tool("search", {"query": "vpn"})  # the server is fine
    assert too_many.is_error and "less than or equal to 50" in too_many.content[0].text
    assert unknown.is_error and "unknown source 'wiki'" in unknown.content[0].text
    assert empty.is_error and "at least 1 character" in empty.content[0].text
    assert not after.is_error


async def test_an_unknown_key_is_refused(world) -> None:
    from mcp.shared.exceptions import MCPError

    with pytest.raises(ExceptionGroup) as refused:  # the client's task group re-raises it
        async with over_http(world, "sg_unknown") as client:
            await client.list_tools()
    assert refused.group_contains(MCPError, match="error response")
    raw = httpx.post(world["app"].url + "/mcp", json={}, headers={"Authorization": "Bearer x"})
    assert raw.status_code == 401 and raw.json()["detail"] == "unknown API key"
    bare = httpx.post(world["app"].url + "/mcp", json={})
    assert bare.status_code == 401 and "send an API key" in bare.json()["detail"]


async def test_a_client_that_disconnects_mid_call_leaves_the_server_working(world) -> None:
    started = asyncio.Event()

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        started.set()  # the run is under way: its first step reported

    async def ask_then_vanish() -> None:
        async with over_http(world, world["alice"]) as client:
            await client.call_tool("ask", {"question": NIGHTJAR}, progress_callback=on_progress)

    call = asyncio.create_task(ask_then_vanish())
    await started.wait()
    assert not call.done(), "the call must still be running when the client goes away"
    call.cancel()  # the client's connections close mid-call
    with pytest.raises(asyncio.CancelledError):
        await call
    async with over_http(world, world["alice"]) as client:
        again = await client.call_tool("search", {"query": "VPN"})
    assert not again.is_error and again.structured_content["passages"]
    assert "Traceback" not in world["app"].tail()


async def test_stdio_serves_the_same_tools_as_the_keys_user(world) -> None:
    async with over_stdio(world, "--key", world["bob"]) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        found = await client.call_tool("search", {"query": "Nightjar penetration test findings"})
        answered = await client.call_tool("ask", {"question": "How do I set up SSO?"})
    assert {"search", "ask", "read_document"} <= names
    assert not [m for m in RESTRICTED_MARKERS if m in json.dumps(found.structured_content)]
    assert answered.structured_content["citations"]


async def test_research_runs_as_a_job_and_a_cancelled_call_stops_it(world) -> None:
    progress: list[str] = []
    first = asyncio.Event()

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")
        first.set()

    question = {"question": "What does a new employee need to know about VPN and expenses?"}
    async with over_http(world, world["alice"]) as client:
        report = await client.call_tool("research", question, progress_callback=on_progress)
    result = report.structured_content
    assert result["status"] == "done" and "## Contents" in result["answer"]
    assert any(m.startswith("schedule:") for m in progress)

    async def research_then_cancel() -> None:
        async with over_http(world, world["alice"]) as client:
            await client.call_tool("research", question, progress_callback=on_progress)

    first.clear()
    call = asyncio.create_task(research_then_cancel())
    await first.wait()
    call.cancel()  # the client gives up: the job it started must stop too
    with pytest.raises(asyncio.CancelledError):
        await call
    auth = {"Authorization": f"Bearer {world['alice']}"}
    base = world["app"].url
    async with httpx.AsyncClient(headers=auth, timeout=30) as http:
        thread = (await http.get(f"{base}/threads")).json()[0]["thread_id"]

        async def stopped() -> dict[str, Any] | None:
            [run] = (await http.get(f"{base}/threads/{thread}/runs")).json()
            return run if run["status"] != "running" else None

        run = await await_until(stopped, timeout=10, what="the cancelled run to stop")
    assert run["background"] is True and run["status"] == "cancelled", run
