"""The LangGraph protocol door, driven by the official ``langgraph_sdk`` client.

Real processes: Redis, the test model server, seekgraph instances; one is SIGKILLed mid-run
and the run is joined on another.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from functools import partial

import httpx
import pytest
from langgraph_sdk import get_client

from seekgraph.server.auth import add_key_to_file
from tests.support import RESTRICTED_MARKERS
from tests.support.processes import (
    Proc,
    llm_server_env,
    shared_redis,
    start_app,
    start_model_server,
    start_together,
)

VPN = "How do I connect to the VPN from a new laptop?"
MODES = ["values", "updates", "custom"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("langgraph-door")
    procs: list[Proc] = []
    try:
        redis_url = shared_redis(tmp, procs)
        model = start_model_server(tmp, delay=0.05, tokens=40, first_delay=0.5)
        procs.append(model)
        env = llm_server_env(redis_url, model, tmp / "keys.json")
        keys = tmp / "keys.json"
        w = {
            "tmp": tmp,
            "env": env,
            "alice": add_key_to_file(keys, "alice"),
            "bob": add_key_to_file(keys, "bob"),
        }
        w["a"], w["b"] = start_together(
            procs, *(partial(start_app, tmp, name, env) for name in ("lg-a", "lg-b"))
        )
        yield w
    finally:
        for p in reversed(procs):
            p.stop()


OPEN: list = []


@pytest.fixture(autouse=True)
async def close_clients() -> AsyncIterator[None]:
    """Every SDK client a test opened is closed after it (no leaked sockets)."""
    yield
    while OPEN:
        await OPEN.pop().aclose()


def sdk(url: str, key: str):
    OPEN.append(get_client(url=url + "/langgraph", api_key=key))
    return OPEN[-1]


def client(w: dict, instance: str = "a", user: str = "alice"):
    return sdk(w[instance].url, w[user])


async def collect(stream) -> list:
    return [part async for part in stream]


async def test_a_run_streams_values_updates_and_node_summaries(world) -> None:
    c = client(world)
    thread = await c.threads.create()
    parts = await collect(
        c.runs.stream(thread["thread_id"], "search", input={"question": VPN}, stream_mode=MODES)
    )
    events = [p.event for p in parts]
    assert events[0] == "metadata" and events[-1] == "end"
    assert {"values", "updates", "custom"} <= set(events)
    summaries = [p.data for p in parts if p.event == "custom" and p.data.get("event") == "node"]
    assert {"prepare", "evaluate", "integrate"} <= {s["node"] for s in summaries}
    assert all(s["summary"] for s in summaries)  # what each node decided, in words
    final = [p.data for p in parts if p.event == "values"][-1]
    assert final["answer"].startswith("Answer w0") and final["citations"]
    assert final["status"] == "answered"  # the model's reply, shown as it wrote it
    updated = {node for p in parts if p.event == "updates" for node in p.data}
    assert {"prepare", "integrate", "check_answer"} <= updated
    got = await c.threads.get(thread["thread_id"])
    assert got["values"]["answer"] == final["answer"] and got["status"] == "idle"
    assert thread["thread_id"] in [t["thread_id"] for t in await c.threads.search(limit=100)]
    state = await c.threads.get_state(thread["thread_id"])
    assert state["values"]["answer"] == final["answer"] and state["next"] == []
    history = await c.threads.get_history(thread["thread_id"], limit=50)
    assert history[0]["checkpoint"] == state["checkpoint"]  # newest first
    assert history[1]["checkpoint"] == state["parent_checkpoint"]


async def test_update_state_writes_as_a_node(world) -> None:
    c = client(world)
    thread = (await c.threads.create())["thread_id"]
    await collect(c.runs.stream(thread, "search", input={"question": VPN}))
    before = await c.threads.get_state(thread)
    await c.threads.update_state(thread, {"answer": "Edited by a person."}, as_node="remember")
    after = await c.threads.get_state(thread)
    assert after["values"]["answer"] == "Edited by a person."
    assert after["parent_checkpoint"] == before["checkpoint"]


async def test_a_reviewed_run_waits_and_resumes_with_a_command(world) -> None:
    c = client(world)
    thread = (await c.threads.create())["thread_id"]
    parts = await collect(
        c.runs.stream(
            thread, "search", input={"question": VPN}, context={"review_before_answer": True}
        )
    )
    waiting = await c.threads.get_state(thread)
    [interrupt] = waiting["interrupts"]
    shown = interrupt["value"]["evidence"]
    assert shown and waiting["next"] == ["search"]  # paused inside the question's search
    assert [p.data for p in parts if p.event == "end"][-1]["status"] == "waiting"
    assert (await c.threads.get(thread))["status"] == "interrupted"
    dropped = shown[0]["id"]
    await collect(c.runs.stream(thread, "search", command={"resume": {"drop": [dropped]}}))
    done = await c.threads.get_state(thread)
    assert done["values"]["answer"] and not done["interrupts"]
    assert dropped not in [x["id"] for x in done["values"]["citations"]]
    kept_by = {e["source_id"]: e["kept_by"] for e in done["values"]["evidence"]}
    assert kept_by[dropped] == "none"


async def test_a_run_is_joined_on_another_instance_after_its_origin_was_killed(world) -> None:
    doomed = start_app(world["tmp"], "lg-doomed", world["env"])
    try:
        origin = sdk(doomed.url, world["alice"])
        thread = (await origin.threads.create())["thread_id"]
        seen = []
        async for part in origin.runs.stream(
            thread, "search", input={"question": VPN}, stream_mode=MODES
        ):
            seen.append(part)
            if part.event == "custom" and part.data.get("event") == "token":
                break  # the answer is being written: the origin dies now
        run_id = seen[0].data["run_id"]
        doomed.kill()
    finally:
        doomed.stop()
    other = client(world, "b")
    joined = await collect(
        other.runs.join_stream(thread, run_id, last_event_id=seen[-1].id, stream_mode=MODES)
    )
    assert joined[0].event == "values"  # where the run stood, then what follows
    assert joined[-1].event == "end" and joined[-1].data["status"] == "done"
    final = await other.threads.get_state(thread)
    assert final["values"]["answer"].startswith("Answer w0")
    history = await other.threads.get_history(thread, limit=100)
    ids = [h["checkpoint"]["checkpoint_id"] for h in history]
    parents = [h["parent_checkpoint"]["checkpoint_id"] for h in history[:-1]]
    assert parents == ids[1:], "the history forked"


async def test_keys_and_permissions_hold_on_this_door_too(world) -> None:
    alice, bob = client(world), client(world, user="bob")
    thread = (await alice.threads.create())["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as hidden:
        await bob.threads.get_state(thread)
    assert hidden.value.response.status_code == 404
    stranger = sdk(world["a"].url, "sg_unknown")
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await stranger.threads.search()
    assert refused.value.response.status_code == 401
    mine = (await bob.threads.create())["thread_id"]
    parts = await collect(
        bob.runs.stream(
            mine,
            "search",
            input={"question": "What did the Project Nightjar penetration test find?"},
            context={"mode": "extractive"},
            stream_mode=MODES,
        )
    )
    seen = json.dumps([p.data for p in parts]) + json.dumps(await bob.threads.get_state(mine))
    assert not [m for m in RESTRICTED_MARKERS if m in seen]


async def test_background_runs_are_created_joined_listed_and_waited_for(world) -> None:
    a, b = client(world), client(world, "b")
    thread = (await a.threads.create())["thread_id"]
    run = await a.runs.create(thread, "search", input={"question": VPN})
    # queued, or already taken by a worker: the record is read back after it was queued
    assert run["status"] in ("pending", "running") and run["thread_id"] == thread
    values = await b.runs.join(thread, run["run_id"])  # on the other instance
    assert values["answer"].startswith("Answer w0") and values["citations"]
    got = await b.runs.get(thread, run["run_id"])
    assert got["status"] == "success" and got["assistant_id"] == "search"
    waited = await b.runs.wait(thread, "search", input={"question": "What is the meal allowance?"})
    assert waited["question"] == "What is the meal allowance?" and waited["answer"]
    listed = await a.runs.list(thread)
    assert len(listed) == 2 and listed[1]["run_id"] == run["run_id"]  # newest first
    assert {r["status"] for r in listed} == {"success"}


async def test_a_background_run_is_cancelled_from_another_instance(world) -> None:
    a, b = client(world), client(world, "b")
    thread = (await a.threads.create())["thread_id"]
    run = await a.runs.create(thread, "search", input={"question": VPN})
    while (await a.runs.get(thread, run["run_id"]))["status"] == "pending":
        pass
    with pytest.raises(httpx.HTTPStatusError) as busy:  # the default strategy: reject
        await b.runs.create(thread, "search", input={"question": VPN})
    assert busy.value.response.status_code == 409
    stopped = await b.runs.cancel(thread, run["run_id"], wait=True)
    assert stopped["status"] == "interrupted" and stopped["cancel_reason"] == "interrupt"
    assert (await a.runs.get(thread, run["run_id"]))["status"] == "interrupted"
    with pytest.raises(httpx.HTTPStatusError) as ended:
        await b.runs.cancel(thread, run["run_id"])
    assert ended.value.response.status_code == 409
    with pytest.raises(httpx.HTTPStatusError) as hidden:
        await client(world, user="bob").runs.get(thread, run["run_id"])
    assert hidden.value.response.status_code == 404
