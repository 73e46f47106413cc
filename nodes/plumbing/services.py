"""What nodes need from the outside world, handed to a graph when it is built.

A graph builder binds one ``Services`` into its nodes (``bind``), so two graphs with
different sources or models can run side by side in one process. Nothing here reads the
environment and nothing is global: the CLI, the server, Studio's entry, the benchmarks and
the tests each build their ``Services`` and pass them to the builder.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langgraph.config import get_config

from seekgraph.providers.chat import ChatModel
from seekgraph.providers.embeddings import Embedder
from seekgraph.providers.rerank import Reranker
from seekgraph.sources.base import User
from seekgraph.sources.registry import SourceRegistry
from seekgraph.state.models import ImageRef
from seekgraph.state.schemas import SearchState

if TYPE_CHECKING:
    from seekgraph.nodes.plumbing.context import Context


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
    max_question_chars: int = 4000
    """Longest question admitted (``SEEKGRAPH_MAX_QUESTION_CHARS``)."""


class ServicesNotGivenError(RuntimeError):
    """A graph built without services (to draw it) was asked to run."""


def bind(node: Callable[..., Any], services: Services | None, **options: Any) -> Callable[..., Any]:
    """``node`` with ``services`` (and the builder's ``options``) bound, for ``add_node``.

    Nodes that need no services (``review_evidence``) are returned as they are. ``None``
    builds a graph that can be drawn but not run (its nodes say so).
    """
    if "services" not in node.__code__.co_varnames[: node.__code__.co_argcount]:
        return functools.partial(node, **options) if options else node
    if services is None:

        async def unavailable(state: Any) -> Any:
            raise ServicesNotGivenError(
                f"{node.__name__}: this graph was built without services (sources and "
                "models); build it with build_search_graph(services) to run it"
            )

        return unavailable
    bound = functools.partial(node, services=services, **options)
    bound.__name__ = node.__name__  # type: ignore[attr-defined]
    bound.__doc__ = node.__doc__
    return bound


def node_name(default: str) -> str:
    """The name the running node was registered under (its events and model calls say it).

    A node registered twice under other names (a team's flow) labels its events with the
    name the graph gave it; called outside a graph run (a unit test), ``default``.
    """
    try:
        return str(get_config()["metadata"]["langgraph_node"])
    except (RuntimeError, KeyError):
        return default


def now() -> float:
    """Wall-clock time in epoch seconds (the budget's clock)."""
    return time.time()


def today() -> dt.date:
    """Today's date (UTC) on the budget's clock: what freshness and conflicts are read against."""
    return dt.datetime.fromtimestamp(now(), dt.UTC).date()


async def user_of(services: Services, context: Context) -> User:
    """The user of the run; unknown users are refused (fail closed).

    Groups from live connectors are read now, off the event loop.
    """
    return await services.registry.user_now(context.user)


def chat_model_for(services: Services, state: SearchState) -> ChatModel | None:
    """The chat model chosen by ``prepare``; ``None`` in extractive mode or once tokens run out.

    With the token budget spent, nodes fall back to their extractive strategies, so the run
    still answers without spending more.
    """
    if state.get("mode") != "llm":
        return None
    budget = state.get("budget")
    if budget and budget["tokens_used"] >= budget["max_tokens"]:
        return None
    name = state.get("model")
    if name and name == services.vision_model_name and services.vision_model is not None:
        return services.vision_model
    if name and name in services.chat_models:
        return services.chat_models[name]
    return services.chat_model
