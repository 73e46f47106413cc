"""The registry of sources a run may search, and the users known to the workspace."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from seekgraph.sources.base import Source, User
from seekgraph.sources.errors import UnknownSourceError as UnknownSourceError
from seekgraph.sources.errors import UnknownUserError as UnknownUserError

#: Most source names one run or search may list (after removing repeats, a list can name
#: each registered source once; the bound refuses a huge list before anything is done).
MAX_SOURCES = 32


class SourceRegistry:
    """Named sources plus the directory of users (identity → groups)."""

    def __init__(self, sources: Iterable[Source] = (), users: Iterable[User] = ()) -> None:
        self._sources: dict[str, Source] = {}
        self._users: dict[str, User] = {}
        self.connectors: list[tuple[Any, Any]] = []
        """Live connectors and the index each syncs into (``sources.connectors.connector``)."""
        self.memberships: Callable[[str], frozenset[str]] | None = None
        """Groups a user is in *now* in connected systems (``sources.connectors.connector``),
        read at each question so a membership change needs no re-indexing."""
        self.refresh: Callable[[SourceRegistry], None] | None = None
        """Brings the sources added or removed elsewhere (``seekgraph index``, an ingest job)
        into this registry; called at most every ``refresh_seconds`` when sources are asked."""
        self.refresh_seconds = 5.0
        self._refreshed = 0.0
        for source in sources:
            self.add(source)
        for user in users:
            self._users[user.name] = user

    def _due(self) -> bool:
        return (
            self.refresh is not None and time.monotonic() - self._refreshed >= self.refresh_seconds
        )

    def _fresh(self) -> None:
        """Follow sources added or removed elsewhere, when due — never in an event loop.

        The refresh reads the index (SQLite or Redis, blocking); in a running event loop it
        is left to ``refresh_sources``, which an async caller awaits first.
        """
        if not self._due() or _in_event_loop():
            return
        self._refreshed = time.monotonic()
        assert self.refresh is not None
        self.refresh(self)

    async def refresh_sources(self) -> None:
        """Follow sources added or removed elsewhere (when due), off the event loop."""
        if self._due():
            self._refreshed = time.monotonic()
            assert self.refresh is not None
            await asyncio.to_thread(self.refresh, self)

    def remove(self, name: str) -> None:
        """Stop searching the source called ``name`` (nothing when there is none)."""
        self._sources.pop(name, None)

    def add(self, source: Source) -> None:
        """Register ``source`` under its name (a second one with that name replaces it)."""
        self._sources[source.name] = source

    def get(self, name: str) -> Source:
        """The source called ``name``."""
        self._fresh()
        try:
            return self._sources[name]
        except KeyError:
            known = ", ".join(sorted(self._sources)) or "none"
            raise UnknownSourceError(f"unknown source {name!r}; known sources: {known}") from None

    def names(self) -> list[str]:
        """Registered source names, in registration order."""
        self._fresh()
        return list(self._sources)

    def select(self, names: Iterable[str] = ()) -> list[Source]:
        """The sources named, each once, in order (all of them when ``names`` is empty).

        A search fans out once per source: a name repeated is searched once, and a list
        longer than ``MAX_SOURCES`` is refused before any name is looked up.
        """
        wanted = list(dict.fromkeys(names))
        self._fresh()
        if not wanted:
            return list(self._sources.values())
        if len(wanted) > MAX_SOURCES:
            raise UnknownSourceError(
                f"{len(wanted)} different sources were named; name at most {MAX_SOURCES} "
                f"(known sources: {', '.join(sorted(self._sources)) or 'none'})"
            )
        return [self.get(n) for n in wanted]

    def known_user(self, name: str) -> User:
        """The user called ``name`` as the workspace lists them (no connector groups read)."""
        try:
            return self._users[name]
        except KeyError:
            raise UnknownUserError(f"unknown user {name!r}") from None

    def user(self, name: str) -> User:
        """The user called ``name``; unknown names are refused (fail closed)."""
        user = self.known_user(name)
        if self.memberships is None:
            return user
        return replace(user, groups=user.groups | self.memberships(name))

    async def user_now(self, name: str) -> User:
        """``user`` for async callers: connector memberships are read off the event loop."""
        if self.memberships is None:
            return self.user(name)
        return await asyncio.to_thread(self.user, name)

    def users(self) -> list[User]:
        """Every known user."""
        return list(self._users.values())


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
