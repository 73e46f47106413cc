"""Shared fixtures of every tier: the tier markers, the embedders, in-memory sources, services,
graph runs, the demo workspace and Redis.

A test's tier is its folder (``tests/fast``, ``tests/service``, ``tests/processes``,
``tests/browser``, ``tests/soak``) and carries that folder's marker: ``pytest -m fast`` or
``pytest tests/fast`` runs one tier.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from seekgraph.graph.context import Context
from seekgraph.graph.inspect import question_state, steps_of
from seekgraph.graph.run import run, run_config
from seekgraph.graph.search import search_flow
from seekgraph.nodes.plumbing.services import Services
from seekgraph.providers.embeddings import E5Embedder, Embedder, load_embedder
from seekgraph.providers.rerank import LocalReranker
from seekgraph.sources.base import User
from seekgraph.sources.indexes.memory import InMemorySource, MemoryDocument
from seekgraph.sources.registry import SourceRegistry

#: The tiers, cheapest first: each is a folder under tests/ and a marker of the same name.
TIERS = ("fast", "service", "processes", "browser", "soak")
TESTS = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (``-n 2``, the processes tier in ``.ci/run``) each worker gets a
    Redis and a data directory of its own: one worker's tests never see another's keys, queues
    or indexes (some drop the checkpoint indexes, some count what a queue holds). The workers
    share one folder, where the first to need it builds the demo's index for all."""
    import shutil
    import tempfile

    from tests.support import preload
    from tests.support.processes import SHARED_DIR, start_redis

    preload.install()  # seekgraph's commands forked from a preloaded interpreter (its docstring)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None and getattr(config.option, "numprocesses", None):
        # the controller: a folder its workers share (the demo's index, built once for all)
        shared = tempfile.mkdtemp(prefix="seekgraph-tests-")
        config.add_cleanup(lambda: shutil.rmtree(shared, ignore_errors=True))
        os.environ[SHARED_DIR] = shared
    if worker is None or not os.environ.get("SEEKGRAPH_TEST_REDIS_URL"):
        return  # one process; or no Redis given, so the `redis_url` fixture starts its own

    home = Path(tempfile.mkdtemp(prefix=f"seekgraph-{worker}-"))
    proc, url = start_redis(home)
    config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))
    config.add_cleanup(proc.stop)
    os.environ["SEEKGRAPH_TEST_REDIS_URL"] = url
    (home / "data").mkdir()
    os.environ["SEEKGRAPH_DATA_DIR"] = str(home / "data")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with its folder's tier; a test outside every tier's folder is an error.

    A tier whose folder keeps ``module_seconds.json`` (what each module took, measured) runs
    its longest modules first: CI gives whole modules to its workers in this order
    (``--dist loadfile --no-loadscope-reorder``), and a long module taken last keeps one
    worker busy after the others are done. A module not measured yet counts as the longest.
    """
    for item in items:
        folder = item.path.resolve().relative_to(TESTS).parts[0]
        if folder not in TIERS:
            raise pytest.UsageError(f"{item.nodeid}: tests live in a tier's folder: {TIERS}")
        item.add_marker(getattr(pytest.mark, folder))
    costs: dict[Path, float] = {}
    for folder in {item.path.resolve().relative_to(TESTS).parts[0] for item in items}:
        measured = TESTS / folder / "module_seconds.json"
        if measured.exists():
            seconds = json.loads(measured.read_text())["seconds"]
            costs |= {TESTS / folder / name: float(s) for name, s in seconds.items()}
    if costs:
        longest = max(costs.values())
        items.sort(key=lambda item: -costs.get(item.path.resolve(), longest))  # stable


ALICE = User("alice", frozenset({"everyone", "security"}))
BOB = User("bob", frozenset({"everyone"}))


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    """The default embedding model (what a user gets without configuring one)."""
    return load_embedder()


@pytest.fixture(scope="session")
def embedder(real_embedder: Embedder) -> Embedder:
    """The embedder of tests that need one: the real model, except in the fast tier, where
    it is a hashing embedder (``tests/fast/conftest.py``); a fast test whose point is
    retrieval quality asks for ``real_embedder``."""
    return real_embedder


@pytest.fixture(scope="session")
def e5() -> E5Embedder:
    """The multilingual model (Chinese and other languages)."""
    return E5Embedder()


def kb_docs() -> list[MemoryDocument]:
    return [
        MemoryDocument(
            "kb/vpn",
            "Connecting to the VPN",
            "Install the WireGuard client from Self Service.\n\n"
            "Request a VPN profile in the IT portal; import the .conf file into WireGuard.",
            acl=["group:everyone"],
            updated_at="2026-04-02",
        ),
        MemoryDocument(
            "kb/sso-old",
            "SSO setup with OneLogin",
            "Open the OneLogin admin portal and add a SAML app for single sign-on.",
            acl=["group:everyone"],
            updated_at="2025-02-10",
            deprecated=True,
            superseded_by="kb/sso-new",
        ),
        MemoryDocument(
            "kb/sso-new",
            "SSO setup with Okta",
            "Okta replaced OneLogin in October.\n\n"
            "In the Okta admin console choose Create App Integration, then SAML 2.0.",
            acl=["group:everyone"],
            updated_at="2026-10-28",
        ),
        MemoryDocument(
            "kb/travel",
            "Travel policy",
            "While travelling the daily meal allowance is $50 per person.",
            acl=["group:everyone"],
            updated_at="2026-01-15",
        ),
        MemoryDocument(
            "kb/secret",
            "Nightjar findings",
            "The Nightjar console password is orchid-42.",
            acl=["group:security"],
            updated_at="2026-11-08",
        ),
    ]


def chat_docs() -> list[MemoryDocument]:
    return [
        MemoryDocument(
            "chat/m2",
            "#finance — dana",
            "From 1 November the daily meal allowance for business travel is $75 per person.",
            acl=["group:everyone"],
            updated_at="2026-11-03T08:30:00Z",
        ),
        MemoryDocument(
            "chat/m3",
            "#it-help — sam",
            "The VPN gateway moved to vpn2.fernhill.example for every new laptop.",
            acl=["group:everyone"],
            updated_at="2026-11-10T14:05:00Z",
        ),
    ]


def scripted_model(*more: str) -> GenericFakeChatModel:
    """A chat model scripted for one LLM-mode search of "How do I install the VPN client?",
    then ``more`` replies."""
    replies = [
        '{"queries": ["WireGuard VPN client install"]}',
        '{"grades": [{"id": "kb/vpn#0", "score": 0.9}, {"id": "kb/vpn#1", "score": 0.8}]}',
        '{"action": "answer", "reason": "KB covers it", "read_doc_ids": [], "gap_questions": []}',
        "Install the WireGuard client from Self Service [src:kb/vpn#0].",
        '{"supported": true, "definitive": true, "problems": []}',
        *more,
    ]
    return GenericFakeChatModel(messages=iter([AIMessage(content=r) for r in replies]))


def make_services(
    embedder: Embedder,
    sources: list[Any] | None = None,
    chat_model: BaseChatModel | None = None,
) -> Services:
    if sources is None:
        sources = [
            InMemorySource("kb", "kb", kb_docs()),
            InMemorySource("chat", "messages", chat_docs()),
        ]
    registry = SourceRegistry(sources=sources, users=[ALICE, BOB])
    return Services(
        registry=registry,
        embedder=embedder,
        reranker=LocalReranker(embedder),
        chat_model=chat_model,
        model_name="fake" if chat_model is not None else None,
    )


@pytest.fixture
def services(embedder: Embedder) -> Services:
    return make_services(embedder)


@pytest.fixture
def real_services(real_embedder: Embedder) -> Services:
    """``services`` with the real embedding model, where what is found is the point."""
    return make_services(real_embedder)


class Run:
    """A finished graph run: its output, its custom events and its checkpoint history."""

    def __init__(
        self, output: dict[str, Any], events: list[dict[str, Any]], state: Any, history: list[Any]
    ):
        self.output = output
        self.events = events
        self.state = state
        self.history = history

    def nodes(self) -> list[str]:
        return [e["node"] for e in self.events if e.get("event") == "node"]

    def node_events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == "node" and e["node"] == name]


async def run_graph(
    services: Services,
    question: str,
    context: Context,
    thread: str | None = None,
    saver: Any = None,
) -> Run:
    """Run the search flow over ``services`` as every caller does (``graph.run``).

    ``state.values`` is the question's whole state (its search's keys and the thread's
    turns); ``history`` every checkpoint, the search's included, oldest first.
    """
    saver = saver or InMemorySaver()
    graph = search_flow(services, saver, source_timeout=1.0)
    thread = thread or str(uuid.uuid4())
    config = run_config(thread)
    result = await run(graph, {"question": question}, config, context)
    snap = await graph.aget_state(config)
    state = SimpleNamespace(
        values=await question_state(graph, thread), tasks=snap.tasks, next=snap.next
    )
    history = [s for s, _ in await steps_of(graph, thread)]
    return Run(result.values, list(result.events), state, history)


@pytest.fixture(scope="session", autouse=True)
async def close_chat_clients() -> Any:
    """Chat models' connection pools are closed when the tests end (no leaked sockets)."""
    yield
    from seekgraph.providers.chat import aclose_chat_clients

    await aclose_chat_clients()


@pytest.fixture(scope="session")
def demo_services(tmp_path_factory: pytest.TempPathFactory, real_embedder: Embedder) -> Services:
    """The bundled demo workspace in a real embedded index, with the real model."""
    from seekgraph.sources.ingestion.workspace import demo_workspace, open_workspace

    index = tmp_path_factory.mktemp("index") / "demo.sqlite"
    registry, _ = open_workspace(demo_workspace(), index, real_embedder)
    return Services(
        registry=registry, embedder=real_embedder, reranker=LocalReranker(real_embedder)
    )


@pytest.fixture
def demo(demo_services: Services) -> Services:
    return demo_services


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Redis with the search and JSON modules: CI's (SEEKGRAPH_TEST_REDIS_URL) or our own."""
    url = os.environ.get("SEEKGRAPH_TEST_REDIS_URL")
    if url:
        yield url
        return
    from tests.support.processes import start_redis

    proc, url = start_redis(tmp_path_factory.mktemp("redis-index"))
    try:
        yield url
    finally:
        proc.stop()
