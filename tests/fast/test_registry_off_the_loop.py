"""In an event loop the registry does no I/O: what it reads, it reads in a worker thread.

``langgraph dev`` (and LangGraph's server) refuse a blocking call in the loop; following the
sources added elsewhere and reading a person's groups in connected systems both read the
index, so async callers await them and sync calls in the loop read nothing.
"""

from __future__ import annotations

import threading

from seekgraph.sources.base import User
from seekgraph.sources.registry import SourceRegistry


async def test_the_sources_refresh_and_connector_groups_are_read_off_the_event_loop() -> None:
    reads: list[threading.Thread] = []
    registry = SourceRegistry(users=[User("bob", frozenset({"everyone"}))])
    registry.refresh_seconds = 0.0
    registry.refresh = lambda _registry: reads.append(threading.current_thread())

    def memberships(name: str) -> frozenset[str]:
        reads.append(threading.current_thread())
        return frozenset({"slack:C1"})

    registry.memberships = memberships
    registry.names()
    registry.select()
    assert registry.known_user("bob").groups == {"everyone"}
    assert reads == []  # in the loop: nothing read
    await registry.refresh_sources()
    bob = await registry.user_now("bob")
    assert bob.groups == {"everyone", "slack:C1"}  # his groups in the connected system
    assert len(reads) == 2 and threading.current_thread() not in reads


def test_outside_an_event_loop_the_registry_follows_added_sources_as_it_is_asked() -> None:
    reads: list[str] = []
    registry = SourceRegistry()
    registry.refresh_seconds = 0.0
    registry.refresh = lambda _registry: reads.append("refreshed")
    registry.names()
    assert reads == ["refreshed"]  # the CLI: no loop, read at once
