"""Links to documents a user may not see never reach any output (answer, state, history)."""

from __future__ import annotations

import json
from pathlib import Path

from seekgraph.graph.context import Context
from seekgraph.nodes.plumbing.services import Services
from seekgraph.providers.rerank import LocalReranker
from seekgraph.sources.base import User
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.ingestion.workspace import sync_source
from seekgraph.sources.registry import SourceRegistry
from tests.conftest import run_graph

RESTRICTED_ID = "kb/expenses-2027"


def write_kb(folder: Path) -> None:
    folder.mkdir()
    (folder / "expenses-2026.md").write_text(
        "---\ntitle: Expense claims\nacl: [group:everyone]\ndeprecated: true\n"
        "superseded_by: expenses-2027\nupdated_at: 2026-01-10\n---\n"
        "Expense claims are filed in the Ledgerly portal within 30 days of purchase.\n",
        encoding="utf-8",
    )
    (folder / "expenses-2027.md").write_text(
        "---\ntitle: Expense claims (finance draft)\nacl: [group:finance]\n"
        "updated_at: 2026-11-20\n---\n"
        "From January expense claims move to the Tallybook portal within 14 days.\n",
        encoding="utf-8",
    )


def services_for(tmp_path: Path, embedder) -> Services:
    write_kb(tmp_path / "kb")
    index = EmbeddedIndex(tmp_path / "index.sqlite", embedder)
    sync_source(index, tmp_path / "kb", "kb", "kb", ["group:everyone"])
    registry = SourceRegistry(
        sources=[EmbeddedSource(index, "kb", "kb")],
        users=[
            User("bob", frozenset({"everyone"})),
            User("fay", frozenset({"everyone", "finance"})),
        ],
    )
    return Services(registry=registry, embedder=embedder, reranker=LocalReranker(embedder))


async def test_a_restricted_newer_version_is_invisible_to_outsiders(tmp_path, embedder) -> None:
    question = "Where do I file expense claims?"
    services = services_for(tmp_path, embedder)
    bob = await run_graph(services, question, Context(user="bob"))
    fay = await run_graph(services, question, Context(user="fay"))
    everything = json.dumps(
        [bob.output, bob.events, [s.values for s in bob.history], [s.next for s in bob.history]],
        default=str,
    )
    assert RESTRICTED_ID not in everything and "Tallybook" not in everything
    assert "expenses-2026" in json.dumps(bob.output["citations"])
    # for bob the article is simply deprecated: no promise of a newer version
    assert not any(c.get("superseded_by") for c in bob.output["citations"])
    assert "no newer version was found" in " ".join(bob.output["notes"])
    assert "newer version" not in json.dumps([e.get("summary") for e in bob.events])
    # someone in finance is led to the newer version
    assert RESTRICTED_ID in json.dumps(fay.output["citations"]) or RESTRICTED_ID in json.dumps(
        fay.state.values.get("documents_read", [])
    )
