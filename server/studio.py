"""The graphs for LangGraph Studio / ``langgraph dev``: factories, nothing built at import.

``langgraph.json`` names the factories; the server calls one when it needs the graph, and the
services (sources, models) are built from settings on the first call and reused after.

A run without a user in its context acts as ``SEEKGRAPH_USER``; ``langgraph.json`` sets it
to ``bob``, the demo workspace's least-privileged user, so a first run in Studio works and
shows nothing restricted. Set it (or the run's context) to a user of your own workspace.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import field, make_dataclass
from typing import Any, cast

from langchain_core.runnables import RunnableConfig

from seekgraph.graph.context import Context
from seekgraph.graph.flows import FLOWS
from seekgraph.nodes.plumbing.services import Services
from seekgraph.server.bootstrap import build_services
from seekgraph.server.settings import Settings


@functools.cache
def _settings() -> Settings:
    return Settings()


_built: dict[str, Any] = {}
_lock = asyncio.Lock()


async def _services() -> Services:
    """Built once, off the event loop (indexing the workspace reads and writes files)."""
    async with _lock:
        if "services" not in _built:
            _built["services"] = (await asyncio.to_thread(lambda: build_services(_settings())))[0]
    return cast(Services, _built["services"])


@functools.cache
def studio_context() -> type[Context]:
    """``Context`` whose user defaults to ``SEEKGRAPH_USER``."""
    user = field(
        default=_settings().user or "",
        metadata={"description": "Who asks; the permission context of the run."},
    )
    return make_dataclass(
        "StudioContext", [("user", str, user)], bases=(Context,), frozen=True, kw_only=True
    )


async def _flow(name: str) -> Any:
    services = await _services()
    if name not in _built:
        _built[name] = FLOWS[name].compile(services, context_schema=studio_context())
    return _built[name]


async def search(config: RunnableConfig) -> Any:
    """The search flow (built once per process, on first use)."""
    return await _flow("search")


async def quick(config: RunnableConfig) -> Any:
    """The quick flow: one round of search, then the answer."""
    return await _flow("quick")


async def reviewed(config: RunnableConfig) -> Any:
    """The reviewed flow: a person reviews the evidence before the answer."""
    return await _flow("reviewed")


async def research(config: RunnableConfig) -> Any:
    """The research flow: a planned report built from the search graph."""
    return await _flow("research")
