"""The Google Drive connector through the real ``google-api-python-client``, against
``tests/fakes/drive_server.py`` (Drive v3 and the Directory API's documented routes) — the
edge that cannot run here.
"""

from __future__ import annotations

import copy
from typing import Any

from seekgraph.sources.connectors.connector import connector_state, sync_connector
from seekgraph.sources.connectors.drive import DriveConnector, drive_credentials
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from tests.processes.test_confluence_connector import docx
from tests.support.connected import PEOPLE, Searcher, calls, fake_system, script, world
from tests.support.processes import Proc

DOC = "application/vnd.google-apps.document"
WORD = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
ANYONE = [{"id": "anyone", "type": "anyone", "role": "reader"}]
WORLD: dict[str, Any] = {
    "files": [
        {"id": "f1", "name": "Travel policy", "mimeType": DOC, "version": "1",
         "modifiedTime": "2026-11-02T10:00:00Z",
         "text": "<h1>Hotels</h1><p>The hotel cap is 180 dollars a night in most cities.</p>",
         "permissions": [
             {"id": "p1", "type": "domain", "role": "reader", "domain": "fernhill.example"},
             {"id": "p2", "type": "group", "role": "commenter",
              "emailAddress": "eng@fernhill.example"}]},
        {"id": "f2", "name": "Moorhen terms.docx", "mimeType": WORD, "version": "1",
         "modifiedTime": "2026-11-03T10:00:00Z", "shared_drive": True,
         "base64": docx("The Moorhen price is 48 million euros."),
         "permissions": [{"id": "p3", "type": "user", "role": "reader",
                          "emailAddress": "alice@fernhill.example"}]},
        {"id": "f3", "name": "On-call rota", "version": "1",
         "mimeType": "application/vnd.google-apps.spreadsheet",
         "modifiedTime": "2026-11-04T10:00:00Z", "permissions": ANYONE,
         "text": "week,engineer,phone\n46,alice,555-0101\n47,carol,555-0142\n"},
        {"id": "f4", "name": "logo.png", "mimeType": "image/png", "version": "1",
         "modifiedTime": "2026-11-04T10:00:00Z", "permissions": ANYONE, "text": "\x89PNG"},
        {"id": "f5", "name": "Policies", "mimeType": "application/vnd.google-apps.folder",
         "version": "1", "modifiedTime": "2026-11-04T10:00:00Z", "permissions": ANYONE,
         "text": ""},
    ],
    "groups": {"eng@fernhill.example": ["carol@partner.example"]},
}  # fmt: skip


drive = fake_system("drive_server")


def downloads(fake: Proc) -> int:
    counted = calls(fake)
    return sum(n for route, n in counted.items() if "alt=media" in route or "export" in route)


async def test_drive_sync_follows_sharing_groups_edits_and_deletions(drive, tmp_path, embedder):
    script(drive, token="ya29.test")
    w = copy.deepcopy(WORLD)
    world(drive, w)
    index = EmbeddedIndex(tmp_path / "index.sqlite", embedder)
    search = Searcher(index, "gdrive", "docs", "hotel cap Moorhen price on-call phone")
    people = {**PEOPLE, "carol@partner.example": "carol"}
    gdrive = DriveConnector(drive_credentials(None, "ya29.test", None), people, base_url=drive.url)

    first = sync_connector(index, gdrive)
    assert first.error is None and first.indexed == 3, first  # a Doc, a Word file, a Sheet
    for who in ("alice", "bob", "carol"):  # the domain (alice, bob) and a group (carol)
        assert await search.finds(who, "180 dollars")
        assert await search.finds(who, "555-0142", "carol's on-call phone")  # anyone: everyone
    assert await search.finds("alice", "48 million")  # shared with her alone (shared drive)
    assert not await search.finds("bob", "48 million")

    read = downloads(drive)
    again = sync_connector(index, gdrive)
    assert (again.indexed, again.removed) == (0, 0) and downloads(drive) == read  # nothing read

    w["directory_forbidden"] = True  # the group's members can no longer be read
    world(drive, w)
    blind = sync_connector(index, gdrive)
    assert blind.error is None and any("eng@fernhill.example" in p for p in blind.problems)
    assert not await search.finds("carol", "180 dollars")  # fails closed
    del w["directory_forbidden"]
    w["groups"]["eng@fernhill.example"] = []  # carol leaves the group
    w["files"][1]["permissions"][0]["emailAddress"] = "bob@fernhill.example"  # alice → bob
    world(drive, w)
    moved = sync_connector(index, gdrive)
    assert (moved.indexed, moved.removed) == (0, 0)  # nothing re-read
    assert not await search.finds("carol", "180 dollars")
    assert await search.finds("bob", "48 million") and not await search.finds("alice", "48 million")

    w["files"][0]["text"] = "<p>The hotel cap is 210 dollars a night in most cities.</p>"
    w["files"][0]["version"] = "2"
    del w["files"][2]  # the rota deleted in Drive: deleted here
    world(drive, w)
    edited = sync_connector(index, gdrive)
    assert (edited.indexed, edited.removed) == (1, 1)
    assert await search.finds("bob", "210 dollars")
    assert not await search.finds("bob", "555-0142", "carol's on-call phone")

    script(drive, fail=[429])  # rate limited once: retried
    assert sync_connector(index, gdrive).error is None

    script(drive, token="ya29.rotated")  # our token expired
    failed = sync_connector(index, gdrive)
    assert failed.error and "SEEKGRAPH_GDRIVE_CREDENTIALS" in failed.error
    assert "ya29" not in failed.error
    assert await search.finds("bob", "48 million")  # the last good state stays
    assert not await search.finds("alice", "48 million")  # and is never widened
    assert connector_state(index, "gdrive")["error"] == failed.error
    gdrive.close()
    index.close()


async def test_a_file_shared_with_a_workspace_groups_address_is_read_by_its_members(
    drive, tmp_path, embedder
):
    """``"groups": {"everyone": {"email": "everyone@…"}}``: the list's members read it, even
    when the Directory cannot say who is in the Google group; nobody else does."""
    script(drive, token="ya29.test")
    shared = {"id": "g1", "name": "Parking", "mimeType": DOC, "version": "1",
              "modifiedTime": "2026-11-05T10:00:00Z",
              "text": "<p>The parking garage closes on Friday for resurfacing.</p>",
              "permissions": [{"id": "p9", "type": "group", "role": "reader",
                               "emailAddress": "everyone@fernhill.example"}]}  # fmt: skip
    world(drive, {"files": [shared], "groups": {}, "directory_forbidden": True})
    index = EmbeddedIndex(tmp_path / "index.sqlite", embedder)
    search = Searcher(index, "gdrive", "docs", "parking garage resurfacing")
    lists = {"everyone@fernhill.example": {"alice", "bob"}}
    gdrive = DriveConnector(
        drive_credentials(None, "ya29.test", None), PEOPLE, base_url=drive.url, lists=lists
    )
    assert sync_connector(index, gdrive).error is None
    assert await search.finds("alice", "resurfacing") and await search.finds("bob", "resurfacing")
    assert not await search.finds("carol", "resurfacing")
    gdrive.close()
    index.close()
