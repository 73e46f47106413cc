"""The Confluence Cloud connector through the real ``atlassian-python-api`` REST client,
against ``tests/fakes/confluence_server.py`` (Confluence's documented REST routes) — the edge
that cannot run here.
"""

from __future__ import annotations

import base64
import copy
import io
from typing import Any

from seekgraph.sources.connectors.confluence import ConfluenceConnector
from seekgraph.sources.connectors.connector import connector_state, sync_connector
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from tests.support.connected import PEOPLE, Searcher, calls, fake_system, script, world
from tests.support.processes import Proc


def docx(text: str) -> str:
    """A Word file holding ``text``, base64 (as it is attached to a page)."""
    from docx import Document

    document = Document()
    document.add_heading("Escalation", level=1)
    document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return base64.b64encode(out.getvalue()).decode()


WORLD: dict[str, Any] = {
    "users": [
        {"accountId": "A1", "email": "alice@fernhill.example", "publicName": "Alice Chen"},
        {"accountId": "A2", "email": "bob@fernhill.example", "publicName": "Bob"},
        {"accountId": "A3", "publicName": "carol"},  # e-mail hidden: known by public name
        {"accountId": "A9", "publicName": "Outsider"},
    ],
    "groups": {"G1": ["A1", "A3", "A9"]},
    "spaces": [
        {"id": "100", "key": "ENG", "name": "Engineering", "read": ["group:G1", "user:A2"]},
        {"id": "200", "key": "HR", "name": "People", "read": ["user:A1"]},
    ],
    "pages": [
        {"id": "1", "space": "ENG", "title": "Engineering handbook",
         "body": "<h2>On-call</h2><p>The on-call rotation changes every Monday at 9:00.</p>"},
        {"id": "2", "space": "ENG", "title": "Moorhen due diligence", "parent": "1",
         "restrict": ["user:A1"], "body": "<p>The Moorhen price is 48 million euros.</p>"},
        {"id": "3", "space": "ENG", "title": "Moorhen valuation", "parent": "2",
         "body": "<p>The Moorhen valuation model assumes 12 percent growth.</p>"},
        {"id": "4", "space": "HR", "title": "Salary bands",
         "body": "<p>The senior engineer salary band tops out at 140,000 euros.</p>"},
    ],
    "attachments": [
        {"id": "X1", "page": "1", "title": "escalation.docx",
         "base64": docx("The escalation phone number is 555-0142.")},
    ],
}  # fmt: skip


confluence = fake_system("confluence_server")


def connector(fake: Proc, spaces: list[str] | None = None) -> ConfluenceConnector:
    return ConfluenceConnector(
        fake.url, "bot@fernhill.example", "atl-test", PEOPLE, spaces=spaces or ["ENG"]
    )


async def test_confluence_sync_follows_restrictions_groups_edits_and_deletions(
    confluence, tmp_path, embedder
) -> None:
    script(confluence, token="atl-test")
    w = copy.deepcopy(WORLD)
    world(confluence, w)
    index = EmbeddedIndex(tmp_path / "index.sqlite", embedder)
    search = Searcher(index, "confluence", "kb", "Moorhen price on-call escalation")
    conf = connector(confluence)

    first = sync_connector(index, conf)
    assert first.error is None and first.indexed == 4, first  # 3 pages and the Word file
    assert first.unknown == ["Outsider"]  # in the group, no workspace user: reads nothing
    for who in ("alice", "bob", "carol"):  # the space's readers: a group and a user
        assert await search.finds(who, "every Monday at 9:00")
        assert await search.finds(who, "555-0142", "escalation phone number")
    assert await search.finds("alice", "48 million")  # the restriction names her
    assert not await search.finds("bob", "48 million")
    assert await search.finds("alice", "12 percent", "Moorhen valuation growth")
    assert not await search.finds("carol", "12 percent", "Moorhen valuation growth")  # inherited
    assert not await search.finds("alice", "140,000", "salary band")  # HR is not synced

    downloads = calls(confluence).get("download/attachments/N/escalation.docx", 0)
    w["pages"][0]["body"] = "<p>The on-call rotation changes every Tuesday at 10:00.</p>"
    w["pages"][0]["version"] = 2
    world(confluence, w)
    edited = sync_connector(index, conf)
    assert (edited.indexed, edited.removed) == (1, 0)
    assert calls(confluence)["download/attachments/N/escalation.docx"] == downloads  # not again
    assert await search.finds("bob", "every Tuesday at 10:00")
    assert await search.finds("bob", "555-0142", "escalation phone number")  # kept

    w["groups"]["G1"].remove("A3")  # carol leaves the group the space is granted to
    world(confluence, w)
    left = sync_connector(index, conf)
    assert left.indexed == 0 and left.removed == 0  # nothing re-read
    assert not await search.finds("carol", "every Tuesday")
    assert not await search.finds("carol", "555-0142", "escalation phone number")
    assert await search.finds("bob", "every Tuesday")

    w["pages"][0]["restrict"] = ["user:A1"]  # the handbook restricted to alice
    world(confluence, w)
    sync_connector(index, conf)
    assert not await search.finds("bob", "every Tuesday")
    assert not await search.finds("bob", "555-0142", "escalation phone number")  # its file too
    assert await search.finds("alice", "555-0142", "escalation phone number")

    del w["pages"][2]  # the valuation page deleted in Confluence: deleted here
    world(confluence, w)
    assert sync_connector(index, conf).removed == 1
    assert not await search.finds("alice", "12 percent", "Moorhen valuation growth")

    script(confluence, fail=[429])  # rate limited once: retried after Retry-After
    assert sync_connector(index, conf).error is None

    script(confluence, token="atl-rotated")  # our token was revoked
    failed = sync_connector(index, conf)
    assert failed.error and "SEEKGRAPH_CONFLUENCE_TOKEN" in failed.error and "401" in failed.error
    assert "atl-test" not in failed.error
    assert await search.finds("alice", "48 million")  # the last good state stays
    assert not await search.finds("bob", "48 million")  # and is never widened
    assert connector_state(index, "confluence")["error"] == failed.error
    index.close()
