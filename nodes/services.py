"""The process-wide services nodes use: sources, embedder, reranker and chat models.

The server and the CLI build them from settings once at start and install them with
``set_services``; tests install fakes the same way. Nothing here reads the environment.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel

from providers.embeddings import Embedder
from providers.rerank import Reranker
from sources.registry import SourceRegistry


@dataclass
class Services:
    """What nodes need from the outside world."""

    registry: SourceRegistry
    embedder: Embedder
    reranker: Reranker
    chat_model: BaseChatModel | None = None
    """The default chat model; ``None`` means extractive mode unless one is asked for."""
    chat_models: dict[str, BaseChatModel] = field(default_factory=dict)
    """Other chat models a run may pick by name (``Context.model``)."""
    model_name: str | None = None


_services: Services | None = None


class ServicesNotConfiguredError(RuntimeError):
    """Nodes ran before the server, CLI or test installed services."""


def set_services(services: Services | None) -> None:
    """Install the services every run of this process uses."""
    global _services
    _services = services


def get_services(node: str) -> Services:
    """The installed services; ``node`` names the caller in the error when there are none."""
    if _services is None:
        raise ServicesNotConfiguredError(
            f"{node}: no sources or models configured; start seekgraph through its CLI or "
            "server, or call nodes.services.set_services() first"
        )
    return _services


@contextmanager
def use_services(services: Services) -> Iterator[Services]:
    """Install ``services`` for the duration of a block (tests, embedding apps)."""
    previous = _services
    set_services(services)
    try:
        yield services
    finally:
        set_services(previous)
