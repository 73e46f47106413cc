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

from seekgraph.sources.connectors.connector import connector_state, sync_connector
from seekgraph.sources.connectors.slack import SlackConnector
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from tests.factories import people_workspace
from tests.support.connected import PEOPLE, Searcher, calls, fake_system, script, world
from tests.support.processes import cli
from tests.support.waiting import await_until

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
    secrets = tmp_path / "secrets"  # the token as a secret file, not in the environment
    secrets.mkdir()
    (secrets / "seekgraph_slack_token").write_text("xoxb-test")
    os.environ["SEEKGRAPH_SECRETS_DIR"] = str(secrets)
    os.environ["SEEKGRAPH_SLACK_BASE_URL"] = f"{slack.url}/api/"
    try:
        checked = cli("connect", "slack", *env, data_dir=data)  # before any sync: nothing written
        assert checked.returncode == 0, checked.stderr
        assert "slack (messages): last good sync never" in checked.stdout
        assert "ok — 3 documents and 2 groups visible" in checked.stdout
        assert "no workspace user" in checked.stdout and "bob.o, outsider" in checked.stdout
        done = cli("sync", *env, data_dir=data)
        assert done.returncode == 0 and "slack: 3 documents indexed" in done.stdout, done.stderr
        assert "2 people it shares with are no workspace user" in done.stderr
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
        checked = cli("connect", *env, data_dir=data)
        assert checked.returncode == 1 and "cannot read it now" in checked.stderr
        assert "last failed" in checked.stdout and "token_expired" in checked.stdout
    finally:
        del os.environ["SEEKGRAPH_SECRETS_DIR"], os.environ["SEEKGRAPH_SLACK_BASE_URL"]


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
        from seekgraph.sources.indexes.redis_index import RedisIndex

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


async def ready(api: Any, seconds: float = 30) -> Any:
    """``/readyz`` once it says ready (the instance's live sources synced once)."""

    async def answered() -> Any:
        got = await api.get("/readyz")
        return got if got.status_code == 200 else None

    return await await_until(answered, timeout=seconds, what="/readyz to say ready")


async def test_an_instance_is_ready_once_its_live_sources_synced(slack, tmp_path) -> None:
    """Until a live source's first sync ends, a question would find nothing in it: a load
    balancer is told "not ready" and why, then "ready"."""
    import httpx

    from seekgraph.server.http.app import create_app
    from seekgraph.server.settings import Settings

    script(slack, token="xoxb-test", fail=[429, 429, 429])  # 3 s of "come back in 1 s"
    world(slack, copy.deepcopy(WORLD))
    workspace = people_workspace(tmp_path / "ws", {"carol": {}})
    settings = Settings(
        data_dir=tmp_path / "data", redis_url=None, workspace=workspace,
        slack_token="xoxb-test", slack_base_url=f"{slack.url}/api/", connector_sync_minutes=5,
    )  # fmt: skip
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as api:
            syncing = await api.get("/readyz")
            assert syncing.status_code == 503
            assert syncing.json()["detail"] == "first sync not finished: slack"
            synced = await ready(api)
            assert synced.status_code == 200 and synced.json()["status"] == "ready"
    script(slack, fail=[])


async def test_a_person_removed_from_a_channel_no_longer_sees_it_in_earlier_answers(
    slack, tmp_path
) -> None:
    """Revoked in Slack → after the next sync, gone from the thread's state, history,
    reconnect snapshot and the protocol's views, from the evidence a paused review shows, and
    from what a follow-up builds on; given back → shown again (nothing was deleted)."""

    import httpx

    from seekgraph.server.auth import add_key_to_file
    from seekgraph.server.http.app import create_app
    from seekgraph.server.settings import Settings
    from tests.service.test_api_inprocess import frames

    script(slack, token="xoxb-test")
    w = copy.deepcopy(WORLD)
    world(slack, w)
    workspace = people_workspace(
        tmp_path / "ws", {"alice": {"email": "alice@fernhill.example"}, "carol": {}}
    )
    key = add_key_to_file(tmp_path / "keys.json", "carol")
    settings = Settings(
        data_dir=tmp_path / "data", api_keys_file=tmp_path / "keys.json", redis_url=None,
        workspace=workspace, slack_token="xoxb-test", slack_base_url=f"{slack.url}/api/",
        connector_sync_minutes=0.01,
    )  # fmt: skip
    app = create_app(settings)

    async def views(api: httpx.AsyncClient, t: str) -> str:
        """Everything a client can read of the thread without asking again."""
        got = [
            (await api.get(f"/threads/{t}/state")).text,
            (await api.get(f"/threads/{t}/history")).text,
            (await api.get(f"/langgraph/threads/{t}/state")).text,
            (await api.post(f"/langgraph/threads/{t}/history", json={"limit": 100})).text,
            (await api.get(f"/langgraph/threads/{t}")).text,
            (await api.get(f"/threads/{t}/stream", headers={"Last-Event-ID": f"{run[0]}:1"})).text,
            # a run of the reviewed flow waits for the person with the evidence to review
            (await api.get(f"/langgraph/threads/{review[0]}/state")).text,
            (await api.get(f"/threads/{review[0]}/state")).text,
        ]

        return "\n".join(got)

    async def until(api: httpx.AsyncClient, t: str, shown: bool) -> str:
        async def seen() -> str | None:
            got = await views(api, t)
            return got if ("48 million" in got) == shown else None

        what = f"the figure {'shown' if shown else 'hidden'} in every view (a few sync intervals)"
        return await await_until(seen, timeout=30, what=what, interval=0.5)

    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        bearer = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://test", timeout=120, headers=bearer
        ) as api:
            await ready(api)  # Slack's first sync has ended
            t = str((await api.post("/threads")).json()["thread_id"])
            ask = {"question": "What is the Moorhen price?", "sources": ["slack"]}
            review = [str((await api.post("/threads")).json()["thread_id"])]
            waits = await api.post(f"/threads/{review[0]}/runs", json={**ask, "flow": "reviewed"})
            assert "48 million" in waits.text and "waiting" in waits.text
            response = await api.post(f"/threads/{t}/runs", json=ask)
            run = [response.headers["X-Run-Id"]]  # a reconnect to it gets a snapshot
            first = frames(response.text)
            assert "48 million" in json.dumps(first)
            assert "48 million" in await until(api, t, shown=True)

            w["channels"][1]["members"].remove("U3")  # carol leaves #leads in Slack
            world(slack, w)
            seen = await until(api, t, shown=False)
            assert "48 million" not in seen and "slack/leads" not in seen
            assert "withheld" in seen  # said, not silently blank
            follow = {"question": "Where is the offsite this year?", "sources": ["slack"]}
            response = await api.post(f"/threads/{t}/runs", json=follow)
            run[0] = response.headers["X-Run-Id"]
            assert "Lisbon" in response.text and "48 million" not in response.text
            assert "48 million" not in await views(api, t)  # the earlier turn stays withheld

            w["channels"][1]["members"].append("U3")  # and is added back
            world(slack, w)
            assert "48 million" in await until(api, t, shown=True)


async def test_a_follow_up_never_builds_on_an_answer_its_person_can_no_longer_read(
    slack, tmp_path, embedder
) -> None:
    from langgraph.runtime import Runtime

    from seekgraph.graph.context import Context
    from seekgraph.graph.visibility import WITHHELD
    from seekgraph.nodes.plumbing.services import Services
    from seekgraph.nodes.search.prepare import prepare
    from seekgraph.providers.rerank import LocalReranker

    script(slack, token="xoxb-test")
    w = copy.deepcopy(WORLD)
    world(slack, w)
    index = EmbeddedIndex(tmp_path / "index.sqlite", embedder)
    connector = SlackConnector("xoxb-test", PEOPLE, base_url=f"{slack.url}/api/")
    sync_connector(index, connector)
    search = Searcher(index, "slack", "messages", "Moorhen price")
    services = Services(
        registry=search.registry, embedder=embedder, reranker=LocalReranker(embedder)
    )
    turns = [
        {"question": "What is the Moorhen price?", "mode": "extractive",
         "answer": "The Moorhen price is 45 million euros.",  # its words changed since: cited
         "cited": [{"source": "slack", "doc_id": "slack/leads/1762250500.000200"}]},
        {"question": "Where is the offsite?", "answer": "In Lisbon.", "mode": "extractive",
         "cited": [{"source": "slack", "doc_id": "slack/general/1762164000.000100"}]},
    ]  # fmt: skip
    context = Context(user="carol", sources=("slack",))

    async def prepared() -> dict[str, Any]:
        state = {"question": "And the price again?", "turns": turns}
        return await prepare(state, Runtime(context=context, stream_writer=[].append), services)

    assert "turns" not in await prepared()  # carol may read both: her memory as it was
    w["channels"][1]["members"].remove("U3")
    world(slack, w)
    sync_connector(index, connector)
    shown = (await prepared())["turns"]
    assert shown[0]["answer"] == WITHHELD and shown[0]["cited"] == []
    assert shown[1]["answer"] == "In Lisbon."
    index.close()


async def test_an_operator_sees_a_failing_connector_in_the_metrics(slack, tmp_path) -> None:
    """/metrics says when each connector last synced well, and that one fails now."""
    import re
    import time

    import httpx

    from seekgraph.server.http.app import create_app
    from seekgraph.server.settings import Settings

    script(slack, token="xoxb-test")
    world(slack, copy.deepcopy(WORLD))
    workspace = people_workspace(tmp_path / "ws", {"alice": {}, "carol": {}})
    settings = Settings(
        data_dir=tmp_path / "data", redis_url=None, workspace=workspace, slack_token="xoxb-test",
        slack_base_url=f"{slack.url}/api/", connector_sync_minutes=0.01, internal_token="ops",
    )  # fmt: skip
    app = create_app(settings)

    def value(metrics: str, name: str) -> float | None:
        found = re.search(rf'^{name}{{source="slack"}} (\S+)$', metrics, re.M)
        return float(found.group(1)) if found else None

    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:

            async def until(failing: float, more_syncs: int = 0) -> str:
                """The metrics once the connector is ``failing`` and synced ``more_syncs``
                more times than it had so far (each sync calls the fake at least once)."""
                wanted = sum(calls(slack).values()) + more_syncs

                async def shown() -> str | None:
                    got = (await c.get("/metrics", headers={"Authorization": "Bearer ops"})).text
                    synced_once = value(got, "seekgraph_index_synced_at_seconds") is not None
                    failed = value(got, "seekgraph_connector_failing") == failing
                    synced = sum(calls(slack).values()) >= wanted
                    return got if synced_once and failed and synced else None

                return await await_until(shown, timeout=30, what=f"failing={failing}", interval=0.3)

            good = await until(0.0)
            synced = value(good, "seekgraph_index_synced_at_seconds")
            assert synced and time.time() - synced < 60
            assert value(good, "seekgraph_index_documents") == 3
            script(slack, token="xoxb-rotated")  # the token expires
            bad = await until(1.0)
            last_good = value(bad, "seekgraph_index_synced_at_seconds")
            assert last_good is not None and last_good >= synced
            later = await until(1.0, more_syncs=2)  # more failing rounds: the last good sync
            assert value(later, "seekgraph_index_synced_at_seconds") == last_good
            assert "xoxb" not in later
