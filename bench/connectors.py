"""What a live connector costs to keep in sync, and how fast a permission change takes effect.

    python -m bench.connectors --json bench/results/connectors.json

For each system of ``--systems`` (Slack, Confluence, Google Drive, Feishu chats), its local
server (``tests/fakes/*_server.py``) holds ``--messages`` items (MuSiQue paragraphs: messages,
pages, files) over ``--channels`` groups (channels, restricted-to groups, Google groups,
chats); its connector syncs through the vendor's real client into a fresh index (MiniLM).
Measured in one run, per system:

- the first sync, a sync of the unchanged source, and a sync after 1 % of the messages changed
  (seconds; documents re-indexed);
- the **permission delay**: the server's sync loop runs every ``--interval`` seconds; a person
  is removed from a channel (group, chat) in the system, and a search as that person is
  repeated until that group's items are gone: the seconds from the change to that, over
  ``--trials`` trials (goal: at most one interval plus one sync).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.datasets import load
from bench.report import command_line, write
from seekgraph.providers.embeddings import load_embedder
from seekgraph.server.app_state import sync_loop
from seekgraph.sources.base import User
from seekgraph.sources.connectors.connector import member_groups, sync_connector
from seekgraph.sources.connectors.slack import SlackConnector
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.registry import SourceRegistry
from tests.support.processes import start_fake


def slack_world(texts: list[str], groups: int) -> dict[str, Any]:
    """Messages over ``groups`` channels, alice and bob in each."""
    chans = [
        {"id": f"C{c}", "name": f"chan{c}", "is_member": True, "members": ["U1", "U2"]}
        for c in range(groups)
    ]
    messages: dict[str, list[dict[str, Any]]] = {c["id"]: [] for c in chans}
    for n, text in enumerate(texts):
        messages[f"C{n % groups}"].append(
            {"type": "message", "user": "U1", "ts": f"{1762164000 + n}.000100", "text": text}
        )
    users = [
        {"id": "U1", "name": "alice", "profile": {}},
        {"id": "U2", "name": "bob", "profile": {}},
    ]
    return {"users": users, "channels": chans, "messages": messages}


def confluence_world(texts: list[str], groups: int) -> dict[str, Any]:
    """Pages of one space, each restricted to one of ``groups`` groups (alice and bob in each)."""
    users = [{"accountId": "A1", "publicName": "alice"}, {"accountId": "A2", "publicName": "bob"}]
    pages = [
        {
            "id": str(n + 1),
            "space": "ENG",
            "title": f"Page {n}",
            "body": f"<p>{text}</p>",
            "restrict": [f"group:G{n % groups}"],
        }
        for n, text in enumerate(texts)
    ]
    return {
        "users": users,
        "groups": {f"G{g}": ["A1", "A2"] for g in range(groups)},
        "spaces": [{"id": "100", "key": "ENG", "name": "Eng", "read": ["user:A1", "user:A2"]}],
        "pages": pages,
        "attachments": [],
    }


def drive_world(texts: list[str], groups: int) -> dict[str, Any]:
    """Text files, each shared with one of ``groups`` Google groups (alice and bob in each)."""
    files = [
        {
            "id": f"f{n}",
            "name": f"note-{n}.md",
            "mimeType": "text/markdown",
            "version": "1",
            "modifiedTime": "2026-11-02T10:00:00Z",
            "text": text,
            "permissions": [
                {"type": "group", "role": "reader", "emailAddress": f"g{n % groups}@x"}
            ],
        }
        for n, text in enumerate(texts)
    ]
    members = {f"g{g}@x": ["alice@x", "bob@x"] for g in range(groups)}
    return {"files": files, "groups": members}


def feishu_world(texts: list[str], groups: int) -> dict[str, Any]:
    """Messages over ``groups`` chats, alice and bob in each."""
    chats = [
        {"chat_id": f"oc_{c}", "name": f"chat{c}", "members": ["ou_1", "ou_2"]}
        for c in range(groups)
    ]
    messages: dict[str, list[dict[str, Any]]] = {c["chat_id"]: [] for c in chats}
    for n, text in enumerate(texts):
        messages[f"oc_{n % groups}"].append(
            {
                "message_id": f"om_{n}",
                "msg_type": "text",
                "create_time": str(1762164000000 + n),
                "sender": {"id": "ou_1"},
                "body": {"content": json.dumps({"text": text})},
            }
        )
    users = [{"open_id": "ou_1", "name": "alice"}, {"open_id": "ou_2", "name": "bob"}]
    return {
        "users": users,
        "chats": chats,
        "messages": messages,
        "files": {},
        "docs": {},
        "members": {},
        "public": {},
        "minutes": [],
    }


def edit_one_percent(system: str, w: dict[str, Any]) -> int:
    """Change 1 % of the items' text in place; how many."""
    if system in ("slack", "feishu"):
        items = [m for ms in w["messages"].values() for m in ms]
    else:
        items = w["pages"] if system == "confluence" else w["files"]
    chosen = items[::100]
    for item in chosen:
        if system == "slack":
            item["text"] += " (edited)"
        elif system == "feishu":
            item["body"]["content"] = json.dumps(
                {"text": json.loads(item["body"]["content"])["text"] + " (edited)"}
            )
        elif system == "confluence":
            item["body"] += "<p>(edited)</p>"
            item["version"] = 2
        else:
            item["text"] += " (edited)"
            item["version"] = "2"
    return len(chosen)


def remove_bob(system: str, w: dict[str, Any], group: int) -> None:
    """Take bob out of one channel, chat or group."""
    if system == "slack":
        w["channels"][group]["members"] = ["U1"]
    elif system == "feishu":
        w["chats"][group]["members"] = ["ou_1"]
    elif system == "confluence":
        w["groups"][f"G{group}"] = ["A1"]
    else:
        w["groups"][f"g{group}@x"] = ["alice@x"]


#: The largest page each service serves for the listings the connector pages through
#: (Drive ``files.list`` 1,000; Feishu 50; Confluence v2 250 — its v1 content is 50 in the fake).
PAGE_CAPS = {"slack": 200, "confluence": 250, "drive": 1000, "feishu": 50}
#: system → (fake server, world builder, the scripted credential, source kind)
SYSTEMS = {
    "slack": ("slack_server", slack_world, "xoxb-test", "messages"),
    "confluence": ("confluence_server", confluence_world, "atl-test", "kb"),
    "drive": ("drive_server", drive_world, "ya29.test", "docs"),
    "feishu": ("feishu_server", feishu_world, "secret-test", "messages"),
}


def connector_for(system: str, url: str) -> Any:
    """The system's connector, pointed at its local server."""
    people = {"alice": "alice", "bob": "bob", "alice@x": "alice", "bob@x": "bob"}
    if system == "slack":
        return SlackConnector("xoxb-test", people, base_url=f"{url}/api/")
    if system == "confluence":
        from seekgraph.sources.connectors.confluence import ConfluenceConnector

        return ConfluenceConnector(url, "bot@fernhill.example", "atl-test", people, spaces=["ENG"])
    if system == "drive":
        from seekgraph.sources.connectors.drive import DriveConnector, drive_credentials

        return DriveConnector(drive_credentials(None, "ya29.test", None), people, base_url=url)
    from seekgraph.sources.connectors.feishu import FeishuChats
    from seekgraph.sources.connectors.feishu_client import FeishuClient

    return FeishuChats(FeishuClient("cli_bench", "secret-test", people, base_url=url))


async def evaluate(system: str, args: argparse.Namespace) -> dict[str, Any]:
    texts = [p["text"] for p in load(Path(args.data)).corpus[: args.messages]]
    module, build, secret, kind = SYSTEMS[system]
    tmp = Path(tempfile.mkdtemp(prefix="seekgraph-connectors-"))
    fake = start_fake(tmp, module, ready="/calls")
    try:
        httpx.post(f"{fake.url}/script", json={"token": secret}).raise_for_status()
        w = build(texts, args.channels)
        w["page_cap"] = PAGE_CAPS[system]  # the service's own page sizes, not the tests' tiny ones
        httpx.post(f"{fake.url}/world", json=w).raise_for_status()
        index = EmbeddedIndex(tmp / "index.sqlite", load_embedder("minilm"))
        connector = connector_for(system, fake.url)
        first = sync_connector(index, connector)
        assert first.error is None, first.error
        unchanged = sync_connector(index, connector)
        changed = copy.deepcopy(w)
        edits = edit_one_percent(system, changed)
        httpx.post(f"{fake.url}/world", json=changed).raise_for_status()
        one_percent = sync_connector(index, connector)
        name = connector.name
        registry = SourceRegistry(
            [EmbeddedSource(index, name, kind)],
            [User("alice", frozenset()), User("bob", frozenset())],
        )
        registry.memberships = lambda who: member_groups(index, [name], who)
        source = registry.get(name)
        loop = asyncio.create_task(sync_loop([(connector, index)], args.interval / 60))
        delays = []
        for trial in range(args.trials):
            state = copy.deepcopy(changed)
            group = trial % args.channels
            query = texts[group]  # the group's first item
            mine = query[:60]

            async def sees(query: str = query, mine: str = mine) -> bool:
                hits = await source.search(query, registry.user("bob"), 10)
                return any(mine in h["snippet"] for h in hits)

            assert await sees(), "bob must see it before"
            remove_bob(system, state, group)
            httpx.post(f"{fake.url}/world", json=state).raise_for_status()
            started = time.perf_counter()
            while await sees():
                await asyncio.sleep(0.05)
            delays.append(time.perf_counter() - started)
            httpx.post(f"{fake.url}/world", json=changed).raise_for_status()  # bob back
            await asyncio.sleep(args.interval + unchanged.seconds + 1.0)
        loop.cancel()
        getattr(connector, "close", lambda: None)()
        index.close()
    finally:
        fake.stop()
    return {
        "items": len(texts),
        "groups": args.channels,
        "first_sync": {"seconds": round(first.seconds, 2), "indexed": first.indexed},
        "unchanged_sync": {"seconds": round(unchanged.seconds, 2), "indexed": unchanged.indexed},
        "one_percent_changed": {
            "edited": edits,
            "seconds": round(one_percent.seconds, 2),
            "indexed": one_percent.indexed,
        },
        "permission_delay_seconds": {
            "interval": args.interval,
            "trials": len(delays),
            "p50": round(statistics.median(delays), 2),
            "max": round(max(delays), 2),
            "within_one_interval_plus_a_sync": all(
                d <= args.interval + unchanged.seconds + 0.5 for d in delays
            ),
        },
    }


async def evaluate_all(args: argparse.Namespace) -> dict[str, Any]:
    systems = list(SYSTEMS) if args.systems == "all" else args.systems.split(",")
    return {system: await evaluate(system, args) for system in systems}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/musique_dev100")
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--channels", type=int, default=10)
    parser.add_argument("--interval", type=float, default=5.0, help="sync loop, seconds")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--systems", default="all", help="slack,confluence,drive,feishu or all")
    parser.add_argument("--json", type=Path, default=Path("bench/results/connectors.json"))
    args = parser.parse_args()
    started = time.time()
    result = asyncio.run(evaluate_all(args))
    write(args.json, {"command": command_line("bench.connectors", args), **result}, started)


if __name__ == "__main__":
    main()
