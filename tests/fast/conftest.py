"""The fast tier: everything in this process — no Redis, no subprocess, no network.

A test here that starts a process or opens a network socket fails at once, naming the tier
it belongs in; ``embedder`` is a hashing embedder (``real_embedder`` is the model).
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from seekgraph.providers.embeddings import Embedder
from tests.fakes.hashing_embedder import HashingEmbedder

NETWORK = (socket.AF_INET, socket.AF_INET6)


class NotFast(AssertionError):
    """A fast test reached for a process or the network."""


def _refuse(what: str) -> NotFast:
    return NotFast(f"{what} in the fast tier: move this test to tests/service or tests/processes")


@pytest.fixture(autouse=True)
def no_processes_no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Starting a process, or connecting or binding a network socket, raises ``NotFast``."""

    def popen(self: Any, args: Any, *a: Any, **k: Any) -> None:
        raise _refuse(f"subprocess {args!r}")

    real_connect, real_bind = socket.socket.connect, socket.socket.bind

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in NETWORK:
            raise _refuse(f"a connection to {address!r}")
        real_connect(self, address)

    def bind(self: socket.socket, address: Any) -> None:
        if self.family in NETWORK:
            raise _refuse(f"a server on {address!r}")
        real_bind(self, address)

    # Popen itself and, where the tests' preloader replaced it (tests/support/preload.py),
    # the class it replaced: code that kept the original is refused too
    for cls in {c for c in subprocess.Popen.__mro__ if c.__name__.endswith("Popen")}:
        monkeypatch.setattr(cls, "__init__", popen)
    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect)
    monkeypatch.setattr(socket.socket, "bind", bind)
    yield


@pytest.fixture(scope="session")
def redis_url() -> str:
    raise NotFast("Redis in the fast tier: move this test to tests/service")


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """A hashing embedder: deterministic, no model (the real one is ``real_embedder``)."""
    return HashingEmbedder()
