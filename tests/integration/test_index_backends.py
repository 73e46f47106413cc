"""The same source behaviour on both index backends: embedded SQLite and Redis (RediSearch)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from providers.embeddings import E5Embedder, Embedder
from sources.base import User
from sources.embedded import EmbeddedIndex
from sources.index_source import EmbeddedSource
from sources.workspace import demo_workspace, load_config, sync_source

ALICE = User("alice", frozenset({"everyone", "engineering", "security"}))
BOB = User("bob", frozenset({"everyone", "sales"}))


@pytest.fixture(params=["sqlite", "redis"])
def index(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder, redis_url: str
) -> Iterator[Any]:
    yield from open_index(request.param, tmp_path, embedder, redis_url)


@pytest.fixture(params=["sqlite", "redis"])
def index_e5(
    request: pytest.FixtureRequest, tmp_path: Path, e5: E5Embedder, redis_url: str
) -> Iterator[Any]:
    yield from open_index(request.param, tmp_path, e5, redis_url)


def open_index(backend: str, tmp_path: Path, embedder: Embedder, redis_url: str) -> Iterator[Any]:
    if backend == "sqlite":
        idx: Any = EmbeddedIndex(tmp_path / "idx.sqlite", embedder)
    else:
        from sources.redis_index import RedisIndex

        idx = RedisIndex(redis_url, embedder, prefix=f"test:{uuid.uuid4().hex[:8]}:")
    yield idx
    idx.close()


def load_demo(index: Any) -> dict[str, EmbeddedSource]:
    root = demo_workspace()
    config = load_config(root)
    out = {}
    for spec in config["sources"]:
        channels = config["channels"] if spec.get("format") == "chat" else None
        sync_source(
            index, root / spec["path"], spec["name"], spec["kind"], spec.get("acl", []), channels
        )
        out[spec["name"]] = EmbeddedSource(index, spec["name"], spec["kind"])
    return out


async def test_search_ranks_and_permissions_hold(index) -> None:
    sources = load_demo(index)
    hits = await sources["kb"].search("How do I connect to the VPN from a new laptop?", BOB, 3)
    assert hits[0]["doc_id"] == "kb/vpn-access"
    for mode in ("bm25", "dense"):
        rows = index.search("kb", "WireGuard VPN profile", BOB, 3, mode)
        assert index.chunk_hits(rows, "q", 3)[0]["doc_id"] == "kb/vpn-access"
    secret = "Project Nightjar penetration test findings"
    assert not await sources["docs"].search(secret, BOB, 5) or all(
        h["doc_id"] != "docs/security/nightjar-pentest"
        for h in await sources["docs"].search(secret, BOB, 5)
    )
    assert (await sources["docs"].search(secret, ALICE, 5))[0]["doc_id"] == (
        "docs/security/nightjar-pentest"
    )
    assert await sources["docs"].read("docs/security/nightjar-pentest", BOB) is None
    doc = await sources["docs"].read("docs/security/nightjar-pentest", ALICE)
    assert doc is not None and "orchid-42" in doc["text"] and len(doc["chunks"]) == 3
    chat = await sources["chat"].search("Nightjar firmware fix release", BOB, 5)
    assert all(not h["doc_id"].startswith("chat/security/") for h in chat)
    # a message is read with its neighbours in the channel, as citable context passages
    message = await sources["chat"].read("chat/it-help/m003", BOB)
    assert message is not None and message["chunks"][0]["chunk_id"] == "chat/it-help/m003#0"
    context = [c for c in message["chunks"] if c.get("heading") == "context"]
    assert any("changing the endpoint to vpn2" in c["text"] for c in context)
    assert not any("Nightjar" in c["text"] for c in context)


async def test_incremental_sync_and_deletion(index, tmp_path: Path) -> None:
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "a.md").write_text("# Badges\n\nLost badges are replaced at reception.\n")
    (folder / "b.md").write_text("# Parking\n\nVisitors park on level minus two.\n")
    assert sync_source(index, folder, "team", "docs", ["group:everyone"]).indexed == 2
    (folder / "b.md").write_text("# Parking\n\nVisitors now park on level minus three.\n")
    (folder / "a.md").unlink()
    report = sync_source(index, folder, "team", "docs", ["group:everyone"])
    assert (report.indexed, report.unchanged, report.removed) == (1, 0, 1)
    source = EmbeddedSource(index, "team", "docs")
    hits = await source.search("where do visitors park", BOB, 5)
    assert [h["doc_id"] for h in hits] == ["team/b"] and "minus three" in hits[0]["snippet"]
    assert await source.read("team/a", BOB) is None


async def test_chinese(index_e5: Any, tmp_path: Path) -> None:
    index = index_e5
    root = tmp_path / "zh"
    root.mkdir()
    (root / "vpn.md").write_text(
        "# 远程访问\n\n公司的VPN网关地址是 vpn2.example，使用WireGuard客户端连接。\n"
    )
    (root / "food.md").write_text("# 食堂\n\n食堂周五下午关闭，咖啡在三楼。\n")
    sync_source(index, root, "zh", "kb", ["group:everyone"])
    hits = await EmbeddedSource(index, "zh", "kb").search("如何连接公司的VPN网关？", BOB, 2)
    assert hits[0]["doc_id"] == "zh/vpn"
    rows = index.search("zh", "网关", BOB, 2, "bm25")
    assert rows and index.chunk_hits(rows, "网关", 3)[0]["doc_id"] == "zh/vpn"
