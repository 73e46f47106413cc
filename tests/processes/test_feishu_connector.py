"""The Feishu connectors (documents, chats, meeting minutes) through the real ``lark-oapi``
client, against ``tests/fakes/feishu_server.py`` (Feishu's documented Open API routes) — the
edge that cannot run here.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from seekgraph.sources.connectors.connector import connector_state, sync_connector
from seekgraph.sources.connectors.feishu import feishu_connectors
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from tests.support.connected import PEOPLE, Searcher, calls, fake_system, script, world


def text(
    message_id: str, sender: str, words: str, at: int, root: str | None = None
) -> dict[str, Any]:
    """A text message as ``im/v1/messages`` lists it."""
    return {
        "message_id": message_id,
        "msg_type": "text",
        "create_time": str(at),
        "root_id": root,
        "sender": {"id": sender, "sender_type": "user"},
        "body": {"content": json.dumps({"text": words})},
    }


WORLD: dict[str, Any] = {
    "users": [
        {
            "open_id": "ou_1",
            "name": "Alice Chen",
            "email": "alice@fernhill.example",
            "department": "od_eng",
        },
        {"open_id": "ou_2", "name": "Bob", "email": "bob@fernhill.example"},
        {"open_id": "ou_3", "name": "carol", "department": "od_eng"},
    ],
    "chats": [
        {"chat_id": "oc_general", "name": "general", "members": ["ou_1", "ou_2", "ou_3"]},
        {"chat_id": "oc_leads", "name": "leads", "members": ["ou_1", "ou_3"]},
    ],
    "messages": {
        "oc_general": [text("om_1", "ou_2", "The offsite is in Lisbon this year.", 1762164000000)],
        "oc_leads": [
            text("om_2", "ou_1", "Where are we on Moorhen?", 1762250400000),
            text(
                "om_3", "ou_3", "The Moorhen price is 48 million euros.", 1762250500000, root="om_2"
            ),
        ],
    },
    "files": {
        "": [
            {"token": "fld_1", "name": "Policies", "type": "folder"},
            {"token": "sht_1", "name": "Budget", "type": "sheet", "modified_time": "1762164000"},
        ],
        "fld_1": [
            {
                "token": "dox_1",
                "name": "Travel policy",
                "type": "docx",
                "modified_time": "1762164000",
                "url": "https://feishu.example/docx/dox_1",
            },
            {
                "token": "dox_2",
                "name": "Moorhen terms",
                "type": "docx",
                "owner_id": "ou_2",  # bob owns it; the permission API lists collaborators only
                "modified_time": "1762164000",
            },
        ],
    },
    "docs": {
        "dox_1": "Hotels\nThe hotel cap is 180 dollars a night in most cities.",
        "dox_2": "The Moorhen deal closes on Friday, 6 November.",
    },
    "members": {
        "dox_1": [{"member_type": "opendepartmentid", "member_id": "od_eng", "perm": "view"}],
        "dox_2": [{"member_type": "openchat", "member_id": "oc_leads", "perm": "view"}],
        "min_1": [
            {"member_type": "openid", "member_id": "ou_2", "perm": "view"},
            {"member_type": "email", "member_id": "alice@fernhill.example", "perm": "view"},
        ],
    },
    "public": {"dox_1": "closed"},
    "minutes": [
        {
            "token": "min_1",
            "title": "Pricing review",
            "create_time": "1762250000000",
            "transcript": "Bob: we raise the Pro plan to 49 dollars in January.\n"
            "Alice Chen: agreed, from January the 1st.",
        }
    ],
}

feishu = fake_system("feishu_server")


async def test_feishu_docs_chats_and_minutes_follow_members_edits_and_deletions(
    feishu, tmp_path, embedder
) -> None:
    script(feishu, token="secret-test")
    w = copy.deepcopy(WORLD)
    world(feishu, w)
    index = EmbeddedIndex(tmp_path / "index.sqlite", embedder)
    docs, chats, minutes = feishu_connectors("cli_test", "secret-test", PEOPLE, base_url=feishu.url)
    see_docs = Searcher(index, "feishu-docs", "docs", "hotel cap Moorhen deal closes")
    see_chat = Searcher(index, "feishu-chat", "messages", "Moorhen price offsite")
    see_minutes = Searcher(index, "feishu-minutes", "notes", "Pro plan price January")

    assert [sync_connector(index, c).indexed for c in (docs, chats, minutes)] == [2, 3, 1]
    assert await see_docs.finds("alice", "180 dollars")  # the department
    assert await see_docs.finds("carol", "180 dollars")
    assert not await see_docs.finds("bob", "180 dollars")
    assert await see_docs.finds("carol", "6 November")  # shared with a chat: its members
    assert await see_docs.finds("bob", "6 November")  # its owner
    assert await see_chat.finds("carol", "48 million") and not await see_chat.finds(
        "bob", "48 million"
    )
    assert await see_chat.finds("bob", "Lisbon")
    assert await see_minutes.finds("bob", "49 dollars") and await see_minutes.finds(
        "alice", "49 dollars"
    )
    assert not await see_minutes.finds("carol", "49 dollars")

    reads = calls(feishu).get("docx/v1/documents/raw_content", 0)
    w["chats"][1]["members"].remove("ou_3")  # carol leaves #leads
    w["public"]["dox_1"] = "tenant_readable"  # the travel policy opened to the company
    world(feishu, w)
    assert [sync_connector(index, c).indexed for c in (docs, chats, minutes)] == [0, 0, 0]
    assert calls(feishu)["docx/v1/documents/raw_content"] == reads  # nothing re-read
    assert not await see_chat.finds("carol", "48 million")
    assert not await see_docs.finds("carol", "6 November")  # the chat shared it with her
    assert await see_docs.finds("bob", "180 dollars")

    w["docs"]["dox_1"] = "Hotels\nThe hotel cap is 210 dollars a night in most cities."
    w["files"]["fld_1"][0]["modified_time"] = "1762300000"
    del w["files"]["fld_1"][1]  # the terms deleted in Feishu: deleted here
    world(feishu, w)
    edited = sync_connector(index, docs)
    assert (edited.indexed, edited.removed) == (1, 1)
    assert await see_docs.finds("bob", "210 dollars")
    assert not await see_docs.finds("alice", "6 November")

    script(feishu, fail=[429])  # rate limited once: waited out and retried
    assert sync_connector(index, chats).error is None

    script(feishu, token="secret-rotated")  # the app secret was reset: our token is revoked
    failed = sync_connector(index, chats)
    assert failed.error and "SEEKGRAPH_FEISHU_APP_SECRET" in failed.error
    assert "secret-test" not in failed.error
    assert await see_chat.finds("alice", "48 million")  # the last good state stays
    assert not await see_chat.finds("carol", "48 million")  # and is never widened
    assert connector_state(index, "feishu-chat")["error"] == failed.error
    index.close()


confluence = fake_system("confluence_server")
drive = fake_system("drive_server")


def test_seekgraph_sync_reads_confluence_drive_and_feishu_as_configured(
    feishu, confluence, drive, tmp_path, monkeypatch
) -> None:
    """The CLI end to end: each connector from its settings, answers only for its readers."""
    from tests.factories import people_workspace
    from tests.processes.test_confluence_connector import WORLD as CONFLUENCE
    from tests.processes.test_drive_connector import WORLD as DRIVE
    from tests.support.processes import cli

    for fake, value, secret in (
        (feishu, WORLD, "secret-test"),
        (confluence, CONFLUENCE, "atl-test"),
        (drive, DRIVE, "ya29.test"),
    ):
        script(fake, token=secret)
        world(fake, value)
    workspace = people_workspace(
        tmp_path / "ws",
        {
            "alice": {"email": "alice@fernhill.example"},
            "bob": {"email": "bob@fernhill.example"},
            "carol": {},
        },
    )
    for name, value in {
        "FEISHU_APP_ID": "cli_test",
        "FEISHU_APP_SECRET": "secret-test",
        "FEISHU_BASE_URL": feishu.url,
        "CONFLUENCE_URL": confluence.url,
        "CONFLUENCE_USER": "bot@fernhill.example",
        "CONFLUENCE_TOKEN": "atl-test",
        "CONFLUENCE_SPACES": "ENG",
        "GDRIVE_TOKEN": "ya29.test",
        "GDRIVE_BASE_URL": drive.url,
    }.items():
        monkeypatch.setenv(f"SEEKGRAPH_{name}", value)
    env, data = ["--workspace", str(workspace)], tmp_path / "data"
    done = cli("sync", *env, data_dir=data)
    assert done.returncode == 0, done.stderr
    for line in (
        "confluence: 4 documents",
        "gdrive: 3 documents",
        "feishu-docs: 2 documents",
        "feishu-chat: 3 documents",
        "feishu-minutes: 1 documents",
    ):
        assert line in done.stdout, done.stdout

    def ask(question: str, source: str, user: str) -> str:
        asked = cli(
            "ask", question, "--source", source, "--user", user, "--json", *env, data_dir=data
        )
        return str(json.loads(asked.stdout)["answer"])

    assert "48 million" in ask("What is the Moorhen price?", "confluence", "alice")
    assert "48 million" not in ask("What is the Moorhen price?", "confluence", "bob")
    assert "49 dollars" in ask("What will the Pro plan cost from January?", "feishu-minutes", "bob")
    assert "49 dollars" not in ask(
        "What will the Pro plan cost from January?", "feishu-minutes", "carol"
    )
    assert "180 dollars" in ask("What is the hotel cap per night?", "gdrive", "bob")

    monkeypatch.setenv("SEEKGRAPH_CONFLUENCE_TOKEN", "atl-wrong")
    failed = cli("sync", *env, data_dir=data)
    assert failed.returncode == 1 and "SEEKGRAPH_CONFLUENCE_TOKEN" in failed.stderr
    assert "atl-wrong" not in failed.stderr + failed.stdout  # a secret is never shown
    assert "gdrive: 0 documents indexed" in failed.stdout  # the others still sync
