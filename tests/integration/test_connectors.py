"""Live connectors through their vendors' client libraries, against local servers.

The Slack connector uses the real ``slack_sdk`` pointed at ``tests/fakes/slack_server.py``
(Slack's documented Web API methods and payloads) — the edge that cannot run here.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest

from sources.connector import connector_state, sync_connector
from sources.embedded import EmbeddedIndex
from sources.slack_connector import SlackConnector
from tests.factories import people_workspace
from tests.integration.conftest import cli
from tests.integration.connected import PEOPLE, Searcher, fake_system, script, world

WORLD: dict[str, Any] = {
    "users": [
        {"id": "U1", "name": "alice.chen", "profile": {"email": "alice@fernhill.example"}},
        {"id": "U2", "name": "bob.o", "profile": {"email": "bob@fernhill.example"}},
        {"id": "U3", "name": "carol", "profile": {"display_name": "Carol"}},
        {"id": "U9", "name": "outsider", "profile": {}},
    ],
    "channels": [
        {"id": "C1", "name": "general", "is_member": True, "members": ["U1", "U2", "U3"]},
        {
            "id": "C2",
            "name": "leads",
            "is_private": True,
            "is_member": True,
            "members": ["U1", "U3", "U9"],
        },
        {"id": "C3", "name": "board", "is_private": True, "is_member": False, "members": ["U1"]},
    ],  # fmt: skip
    "messages": {
        "C1": [
            {
                "type": "message",
                "user": "U2",
                "ts": "1762164000.000100",
                "text": "The offsite is in Lisbon this year.",
            }
        ],
        "C2": [
            {
                "type": "message",
                "user": "U1",
                "ts": "1762250400.000100",
                "thread_ts": "1762250400.000100",
                "reply_count": 1,
                "text": "<@U3> the Moorhen acquisition closes Friday",
            },
            {
                "type": "message",
                "user": "U3",
                "ts": "1762250500.000200",
                "thread_ts": "1762250400.000100",
                "text": "The Moorhen price is 48 million euros.",
            },
        ],
        "C3": [
            {
                "type": "message",
                "user": "U1",
                "ts": "1762250600.000100",
                "text": "Board minutes: Moorhen valuation 52 million.",
            }
        ],
    },  # fmt: skip
}


slack = fake_system("slack_server")


async def test_slack_sync_follows_edits_deletions_and_membership(slack, tmp_path, embedder) -> None:
    script(slack, token="xoxb-test")
    w = copy.deepcopy(WORLD)
    world(slack, w)
    index = EmbeddedIndex(tmp_path / "index.sqlite", embedder)
    connector = SlackConnector("xoxb-test", PEOPLE, base_url=f"{slack.url}/api/")
    search = Searcher(index, "slack", "messages", "Moorhen price acquisition")

    first = sync_connector(index, connector)
    assert first.error is None and first.indexed == 3 and first.groups == 2
    assert await search.finds("carol", "48 million") and await search.finds("alice", "48 million")
    assert not await search.finds("bob", "48 million")  # not in #leads
    assert not await search.finds("alice", "52 million")  # the bot is not in #board: not read

    w["messages"]["C2"][1]["text"] = "The Moorhen price is 45 million euros."  # an edit
    world(slack, w)
    edited = sync_connector(index, connector)
    # the reply, and its thread parent that reads it as context; #general untouched
    assert (edited.indexed, edited.unchanged, edited.removed) == (2, 1, 0)
    assert await search.finds("carol", "45 million")

    w["channels"][1]["members"].remove("U3")  # carol leaves #leads
    w["channels"][1]["members"].append("U2")  # bob joins it
    world(slack, w)
    moved = sync_connector(index, connector)
    assert moved.indexed == 0 and moved.removed == 0  # nothing re-read or re-embedded
    assert not await search.finds("carol", "45 million")
    assert await search.finds("bob", "45 million")

    del w["messages"]["C2"][1]  # deleted in Slack: deleted here
    world(slack, w)
    assert sync_connector(index, connector).removed == 1
    assert not await search.finds("bob", "45 million")

    script(slack, fail=[429])  # rate limited once: retried after Retry-After
    assert sync_connector(index, connector).error is None

    script(slack, token="xoxb-rotated")  # our token is now expired
    failed = sync_connector(index, connector)
    assert (
        failed.error and "SEEKGRAPH_SLACK_TOKEN" in failed.error and "token_expired" in failed.error
    )
    assert await search.finds("bob", "acquisition closes")  # the last good state stays
    assert not await search.finds("carol", "acquisition closes")  # and is never widened
    state = connector_state(index, "slack")
    assert state["error"] == failed.error and state["at"] < state["failed_at"]
    index.close()


def test_seekgraph_sync_then_ask_as_the_people_slack_says(slack, tmp_path) -> None:
    """The CLI end to end: sync, ask as a member and as someone removed from the channel."""
    script(slack, token="xoxb-test")
    w = copy.deepcopy(WORLD)
    world(slack, w)
    workspace = people_workspace(
        tmp_path / "ws", {"alice": {"email": "alice@fernhill.example"}, "carol": {}}
    )
    env = ["--workspace", str(workspace)]
    data = tmp_path / "data"
    os.environ["SEEKGRAPH_SLACK_TOKEN"] = "xoxb-test"
    os.environ["SEEKGRAPH_SLACK_BASE_URL"] = f"{slack.url}/api/"
    try:
        done = cli("sync", *env, data_dir=data)
        assert done.returncode == 0 and "slack: 3 documents indexed" in done.stdout, done.stderr
        asked = ["ask", "What is the Moorhen price?", "--source", "slack", "--json", *env]
        carol = json.loads(cli(*asked, "--user", "carol", data_dir=data).stdout)
        assert "48 million" in carol["answer"]
        w["channels"][1]["members"].remove("U3")
        world(slack, w)
        assert "0 documents indexed" in cli("sync", *env, data_dir=data).stdout
        carol = cli(*asked, "--user", "carol", data_dir=data)
        assert "48 million" not in carol.stdout and "Moorhen" not in carol.stdout
        script(slack, token="xoxb-rotated")
        failed = cli("sync", *env, data_dir=data)
        assert failed.returncode == 1 and "SEEKGRAPH_SLACK_TOKEN" in failed.stderr
        assert "xoxb-test" not in failed.stderr + failed.stdout  # the token is never shown
    finally:
        del os.environ["SEEKGRAPH_SLACK_TOKEN"], os.environ["SEEKGRAPH_SLACK_BASE_URL"]


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_one_sync_of_a_connector_at_a_time_across_instances(
    slack, tmp_path, embedder, backend, request
) -> None:
    """Two instances on one index: the second sync while the first runs is skipped, not run."""
    import threading
    import uuid

    script(slack, token="xoxb-test")
    world(slack, copy.deepcopy(WORLD))
    if backend == "redis":
        from sources.redis_index import RedisIndex

        url, prefix = request.getfixturevalue("redis_url"), f"test:{uuid.uuid4().hex[:8]}:"
        first, second = (
            RedisIndex(url, embedder, prefix=prefix),
            RedisIndex(url, embedder, prefix=prefix),
        )
    else:
        first = EmbeddedIndex(tmp_path / "index.sqlite", embedder)
        second = EmbeddedIndex(tmp_path / "index.sqlite", embedder)
    connector = SlackConnector("xoxb-test", PEOPLE, base_url=f"{slack.url}/api/")
    entered, leave = threading.Event(), threading.Event()
    real = connector.snapshot

    def slow_snapshot(cursor: str | None) -> Any:  # instance one is mid-sync
        entered.set()
        leave.wait(30)
        return real(cursor)

    connector.snapshot = slow_snapshot  # type: ignore[method-assign]
    running = threading.Thread(target=lambda: results.append(sync_connector(first, connector)))
    results: list[Any] = []
    running.start()
    assert entered.wait(30)
    other = SlackConnector("xoxb-test", PEOPLE, base_url=f"{slack.url}/api/")
    skipped = sync_connector(second, other)
    assert skipped.busy and skipped.indexed == 0 and skipped.error is None
    leave.set()
    running.join(30)
    assert results[0].indexed == 3 and not results[0].busy
    again = sync_connector(second, other)  # the lease was given back
    assert not again.busy and again.unchanged == 3
    first.close()
    second.close()
