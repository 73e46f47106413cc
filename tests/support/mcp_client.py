"""The official MCP client over streamable HTTP, as a test opens it against a live server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def over_mcp(url: str, key: str) -> AsyncIterator[Client]:
    """A connected client of the server at ``url``, sending ``key`` as its bearer key."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(headers=headers, timeout=120) as http:
        transport = streamable_http_client(url + "/mcp", http_client=http)
        async with Client(transport) as client:
            yield client
