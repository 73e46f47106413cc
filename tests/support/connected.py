"""What the connector tests share: an index searched as the server searches it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from seekgraph.sources.base import User
from seekgraph.sources.connectors.connector import member_groups
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.registry import SourceRegistry
from tests.support.processes import Proc, start_fake

#: E-mail addresses and handles of the workspace's people (``people_of`` of a workspace).
PEOPLE = {"alice@fernhill.example": "alice", "bob@fernhill.example": "bob", "carol": "carol",
          "alice": "alice", "bob": "bob"}  # fmt: skip


class Searcher:
    """One connector's documents behind a registry that resolves memberships at each question."""

    def __init__(self, index: EmbeddedIndex, source: str, kind: str, query: str) -> None:
        self.index, self.source, self.query = index, source, query
        users = [User(n, frozenset({"everyone"})) for n in ("alice", "bob", "carol")]
        self.registry = SourceRegistry([EmbeddedSource(index, source, kind)], users)
        self.registry.memberships = lambda name: member_groups(index, [source], name)

    async def finds(self, name: str, text: str, query: str | None = None) -> bool:
        """Whether ``name`` finds a passage containing ``text``."""
        hits = await self.registry.get(self.source).search(
            query or self.query, self.registry.user(name), 10
        )
        return any(text in h["snippet"] for h in hits)


def world(fake: Proc, value: dict[str, Any]) -> None:
    """Replace what the fake system holds."""
    httpx.post(f"{fake.url}/world", json=value).raise_for_status()


def script(fake: Proc, **body: Any) -> None:
    """Script the fake's next failures or its accepted credential."""
    httpx.post(f"{fake.url}/script", json=body).raise_for_status()


def calls(fake: Proc) -> dict[str, int]:
    """How often each route of the fake was called."""
    return dict(httpx.get(f"{fake.url}/calls").json())


def fake_system(module: str) -> Callable[..., Any]:
    """A module-scoped fixture running ``tests.fakes.<module>`` on loopback."""

    @pytest.fixture(scope="module")
    def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
        proc = start_fake(tmp_path_factory.mktemp(module), module, ready="/calls")
        yield proc
        proc.stop()

    return running
