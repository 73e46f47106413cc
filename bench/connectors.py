"""What a live connector costs to keep in sync, and how fast a permission change takes effect.

    python -m bench.connectors --json bench/results/connectors.json

A local Slack Web API (``tests/fakes/slack_server.py``) holds ``--messages`` messages (MuSiQue
paragraphs) over ``--channels`` channels; the Slack connector syncs through the real
``slack_sdk`` into a fresh index (MiniLM). Measured in one run:

- the first sync, a sync of the unchanged source, and a sync after 1 % of the messages changed
  (seconds; documents re-indexed);
- the **permission delay**: the server's sync loop runs every ``--interval`` seconds; a person
  is removed from a channel in Slack, and a search as that person is repeated until the
  channel's messages are gone: the seconds from the change to that, over ``--trials`` trials
  (goal: at most one interval plus one sync).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.datasets import load
from bench.report import command_line, write
from providers.embeddings import load_embedder
from server.app_state import sync_loop
from sources.base import User
from sources.connector import member_groups, sync_connector
from sources.embedded import EmbeddedIndex
from sources.index_source import EmbeddedSource
from sources.registry import SourceRegistry
from sources.slack_connector import SlackConnector
from tests.integration.processes import start_fake


def world_of(paras: list[dict[str, Any]], channels: int) -> dict[str, Any]:
    users = [
        {"id": "U1", "name": "alice", "profile": {}},
        {"id": "U2", "name": "bob", "profile": {}},
    ]
    chans = [
        {"id": f"C{c}", "name": f"chan{c}", "is_member": True, "members": ["U1", "U2"]}
        for c in range(channels)
    ]
    messages: dict[str, list[dict[str, Any]]] = {c["id"]: [] for c in chans}
    for n, p in enumerate(paras):
        messages[f"C{n % channels}"].append(
            {"type": "message", "user": "U1", "ts": f"{1762164000 + n}.000100", "text": p["text"]}
        )
    return {"users": users, "channels": chans, "messages": messages}


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    paras = load(Path(args.data)).corpus[: args.messages]
    tmp = Path(tempfile.mkdtemp(prefix="seekgraph-connectors-"))
    slack = start_fake(tmp, "slack_server", ready="/calls")
    people = {"alice": "alice", "bob": "bob"}
    try:
        w = world_of(paras, args.channels)
        httpx.post(f"{slack.url}/world", json=w).raise_for_status()
        index = EmbeddedIndex(tmp / "index.sqlite", load_embedder("minilm"))
        connector = SlackConnector("xoxb-test", people, base_url=f"{slack.url}/api/")
        first = sync_connector(index, connector)
        unchanged = sync_connector(index, connector)
        changed = copy.deepcopy(w)
        edits = 0
        for msgs in changed["messages"].values():
            for m in msgs[: max(1, len(msgs) // 100)]:
                m["text"] += " (edited)"
                edits += 1
        httpx.post(f"{slack.url}/world", json=changed).raise_for_status()
        one_percent = sync_connector(index, connector)
        registry = SourceRegistry(
            [EmbeddedSource(index, "slack", "messages")],
            [User("alice", frozenset()), User("bob", frozenset())],
        )
        registry.memberships = lambda name: member_groups(index, ["slack"], name)
        source = registry.get("slack")
        loop = asyncio.create_task(sync_loop([(connector, index)], args.interval / 60))
        delays = []
        for trial in range(args.trials):
            state = copy.deepcopy(changed)
            channel = state["channels"][trial % args.channels]
            query = paras[trial % args.channels]["text"]  # this channel's first message
            mine = f"#{channel['name']} "
            hits = await source.search(query, registry.user("bob"), 10)
            assert any(h["title"].startswith(mine) for h in hits), "bob must see it before"
            channel["members"] = ["U1"]  # bob removed from this channel
            httpx.post(f"{slack.url}/world", json=state).raise_for_status()
            started = time.perf_counter()
            while True:
                hits = await source.search(query, registry.user("bob"), 10)
                if not any(h["title"].startswith(mine) for h in hits):
                    break
                await asyncio.sleep(0.05)
            delays.append(time.perf_counter() - started)
            httpx.post(f"{slack.url}/world", json=changed).raise_for_status()  # bob back
            await asyncio.sleep(args.interval + 1.0)
        loop.cancel()
        index.close()
    finally:
        slack.stop()
    return {
        "messages": len(paras),
        "channels": args.channels,
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/musique_dev100")
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--channels", type=int, default=10)
    parser.add_argument("--interval", type=float, default=5.0, help="sync loop, seconds")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--json", type=Path, default=Path("bench/results/connectors.json"))
    args = parser.parse_args()
    started = time.time()
    result = asyncio.run(evaluate(args))
    write(args.json, {"command": command_line("bench.connectors", args), **result}, started)


if __name__ == "__main__":
    main()
