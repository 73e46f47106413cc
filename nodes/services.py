"""The process-wide services nodes use: sources, embedder, reranker and chat models.

The server and the CLI build them from settings once at start and install them with
``set_services``; tests install fakes the same way. Nothing here reads the environment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from providers.chat import ChatModel
from providers.embeddings import Embedder
from providers.rerank import Reranker
from sources.registry import SourceRegistry
from state.models import ImageRef


@dataclass
class Services:
    """What nodes need from the outside world."""

    registry: SourceRegistry
    embedder: Embedder
    reranker: Reranker
    chat_model: ChatModel | None = None
    """The default chat model; ``None`` means extractive mode unless one is asked for."""
    chat_models: dict[str, ChatModel] = field(default_factory=dict)
    """Other chat models a run may pick by name (``Context.model``)."""
    model_name: str | None = None
    vision_model: ChatModel | None = None
    """The model used whenever the thread holds an image."""
    vision_model_name: str | None = None
    image_loader: Callable[[str, ImageRef], bytes | None] | None = None
    """Loads one of a user's images by reference (images live outside checkpoints)."""


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
