"""Integration fixtures: the bundled demo workspace in a real embedded index."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodes.services import Services
from providers.embeddings import load_embedder
from providers.rerank import LocalReranker
from sources.workspace import demo_workspace, open_workspace

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

#: Text that only the security group may see in the demo workspace.
RESTRICTED_MARKERS = [
    "orchid-42",
    "nightjar-pentest",
    "security-review",
    "security/m006",
    "HSM-2",
    "fleet-stg",
    "Nightjar update",
    "unsigned firmware",
    "retest is booked",
]


@pytest.fixture(scope="session")
def demo_services(tmp_path_factory: pytest.TempPathFactory) -> Services:
    embedder = load_embedder()
    index = tmp_path_factory.mktemp("index") / "demo.sqlite"
    registry, _ = open_workspace(demo_workspace(), index, embedder)
    return Services(registry=registry, embedder=embedder, reranker=LocalReranker(embedder))


@pytest.fixture
def demo(demo_services: Services) -> Services:
    return demo_services


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(*args: str, data_dir: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEEKGRAPH_DATA_DIR": str(data_dir)}
    env.pop("SEEKGRAPH_LLM_MODEL", None)
    return subprocess.run(
        [str(BIN / "seekgraph"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=REPO,
    )


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Redis with the search and JSON modules: CI's (SEEKGRAPH_TEST_REDIS_URL) or our own."""
    url = os.environ.get("SEEKGRAPH_TEST_REDIS_URL")
    if url:
        yield url
        return
    from tests.integration.processes import start_redis  # it imports this module

    proc, url = start_redis(tmp_path_factory.mktemp("redis-index"))
    try:
        yield url
    finally:
        proc.stop()
