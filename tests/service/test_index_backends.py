"""The same source behaviour on both index backends: embedded SQLite and Redis (RediSearch)."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seekgraph.providers.embeddings import E5Embedder, Embedder
from seekgraph.sources.base import User
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.embedded_schema import SCHEMA
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.ingestion.workspace import demo_workspace, load_config, sync_source
from tests.factories import write_chat_export

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
        from seekgraph.sources.indexes.redis_index import RedisIndex

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


def _chat_export(folder: Path, messages: list[tuple[str, str]]) -> None:
    stamped = [(f"m{n}", a, f"2026-05-01T09:{n:02}", t) for n, (a, t) in enumerate(messages, 1)]
    write_chat_export(folder, "runs", stamped)


#: A reply that repeats none of the question's words, among messages that repeat them.
RUNS = [
    ("ana", "Ben, have you ever run the Lisbon marathon?"),
    ("ben", "Yes, twice: in 2019 and again in 2021."),
    ("cy", "The Lisbon marathon route changed this year."),
    ("dee", "Ben, how many times did you clean the coffee machine?"),
    ("cy", "Registration for the Lisbon marathon opens in March."),
    ("ana", "Marathon training starts with short runs."),
    ("dee", "Lisbon has great food after a long run."),
    ("ben", "I ran to the office today."),
]


async def test_a_reply_is_found_by_what_it_answers(index, tmp_path: Path) -> None:
    """A message is embedded after the one it follows: the answer "Yes, twice" is found."""
    _chat_export(tmp_path / "chat", RUNS)
    sync_source(index, tmp_path / "chat", "chat", "messages", ["group:everyone"])
    source = EmbeddedSource(index, "chat", "messages")
    hits = await source.search("How many times has Ben run the Lisbon marathon?", BOB, 3)
    reply = [h for h in hits if h["doc_id"] == "chat/runs/m2"]
    assert reply, [h["doc_id"] for h in hits]
    # shown and cited as the message alone; the question it answers is context, not its text
    assert reply[0]["snippet"] == "ben: Yes, twice: in 2019 and again in 2021."
    message = await source.read("chat/runs/m2", BOB)
    assert message is not None and message["chunks"][0]["text"] == reply[0]["snippet"]
    # searched by words, what it answers counts less than a message's own words
    rows = index.search("chat", "Lisbon marathon", BOB, 10, "bm25")
    ranked = [h["doc_id"] for h in index.chunk_hits(rows, "q", 1)]
    assert "chat/runs/m2" in ranked
    assert ranked.index("chat/runs/m2") > max(ranked.index(f"chat/runs/m{n}") for n in (1, 3))


def test_an_index_written_before_messages_had_a_preceding_text_still_opens(
    tmp_path: Path, embedder: Embedder
) -> None:
    """An older file (no ``preceding`` column or full-text field) keeps what it holds."""
    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path)
    old.executescript(  # the tables as they were
        SCHEMA.replace(",\n    preceding TEXT NOT NULL DEFAULT ''", "").replace(
            "text, preceding, tokenize", "text, tokenize"
        )
    )
    with old:
        old.execute(
            "INSERT INTO documents (doc_id, source, kind, title, text, content_hash)"
            " VALUES ('kb/parking', 'kb', 'kb', 'Parking', 'Visitors park on level minus two.',"
            " 'h')"
        )
        old.execute("INSERT INTO acl VALUES ('kb/parking', 'group:everyone')")
        old.execute(
            "INSERT INTO chunks (id, chunk_id, doc_id, ord, text) VALUES"
            " (1, 'kb/parking#0', 'kb/parking', 0, 'Visitors park on level minus two.')"
        )
        old.execute(
            "INSERT INTO chunks_fts (rowid, title, heading, text) VALUES"
            " (1, 'Parking', '', 'Visitors park on level minus two.')"
        )
    old.close()
    index = EmbeddedIndex(path, embedder)
    rows = index.search("kb", "where do visitors park", BOB, 3, "bm25")
    assert [h["doc_id"] for h in index.chunk_hits(rows, "q", 1)] == ["kb/parking"]
    _chat_export(tmp_path / "chat", RUNS)
    assert sync_source(index, tmp_path / "chat", "chat", "messages", ["group:everyone"]).indexed
    rows = index.search("chat", "How many times has Ben run the Lisbon marathon?", BOB, 3)
    assert "chat/runs/m2" in {h["doc_id"] for h in index.chunk_hits(rows, "q", 1)}
    index.close()


async def test_a_redis_index_from_before_gains_the_preceding_field(
    tmp_path: Path, embedder: Embedder, redis_url: str
) -> None:
    from redis.commands.search.index_definition import IndexDefinition, IndexType

    from seekgraph.sources.indexes.redis_index import RedisIndex

    prefix = f"test:{uuid.uuid4().hex[:8]}:"
    index = RedisIndex(redis_url, embedder, prefix=prefix)
    _chat_export(tmp_path / "chat", RUNS)
    sync_source(index, tmp_path / "chat", "chat", "messages", ["group:everyone"])
    # the search index as an older version created it; its documents stay in Redis
    index.r.ft(index.name).dropindex(delete_documents=False)
    index.r.ft(index.name).create_index(
        index.schema()[:-1],
        definition=IndexDefinition(prefix=[f"{prefix}chunk:"], index_type=IndexType.JSON),
    )
    index.close()
    reopened = RedisIndex(redis_url, embedder, prefix=prefix)
    assert "preceding" in str(reopened.r.ft(reopened.name).info()["attributes"])
    report = sync_source(reopened, tmp_path / "chat", "chat", "messages", ["group:everyone"])
    assert (report.indexed, report.unchanged) == (0, len(RUNS))  # nothing re-written or lost
    source = EmbeddedSource(reopened, "chat", "messages")
    hits = await source.search("How many times has Ben run the Lisbon marathon?", BOB, 3)
    assert "chat/runs/m2" in [h["doc_id"] for h in hits]
    rows = reopened.search("chat", "Lisbon marathon", BOB, 10, "bm25")
    assert "chat/runs/m2" in {h["doc_id"] for h in reopened.chunk_hits(rows, "q", 1)}
    reopened.close()
