"""Retention: a thread lives a set time after its last use, then goes whole; deleting is total.

One ``seekgraph serve`` with a retention of 6 seconds, answering through a test model slow
enough that every run lasts longer than that (its tokens take about 12 s). With 3 seconds, a
run's renewals (every third of the retention) were missed on a loaded CI machine and its
keys expired under it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest
import redis

from seekgraph.server.auth import add_key_to_file
from seekgraph.server.runs.storage import family_of
from tests.support.processes import (
    Proc,
    auth,
    llm_server_env,
    new_thread,
    shared_redis,
    start_app,
    start_model_server,
    start_worker,
    unforked,
)
from tests.support.sse_client import read
from tests.support.waiting import wait_until

RETENTION_S = 6
QUESTION = {"question": "How do I connect to the VPN from a new laptop?"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("retention")
    procs: list[Proc] = []
    try:
        redis_url = shared_redis(tmp, procs)
        model = start_model_server(tmp, delay=0.1, tokens=120)
        procs.append(model)
        keys = tmp / "keys.json"
        key = add_key_to_file(keys, "alice")
        bob = add_key_to_file(keys, "bob")
        env = llm_server_env(redis_url, model, keys, SEEKGRAPH_RETENTION_MINUTES=RETENTION_S / 60)
        app = start_app(tmp, "a", env)
        procs.append(app)
        yield {"url": app.url, "key": key, "bob": bob, "redis_url": redis_url,
               "redis": redis.Redis.from_url(redis_url), "tmp": tmp, "env": env}  # fmt: skip
    finally:
        for p in reversed(procs):
            p.stop()


def keys_of(client: redis.Redis, thread: str) -> list[str]:
    """Every key in Redis that names the thread, whatever its family."""
    return sorted(k.decode() for k in client.scan_iter(match=f"*{thread}*", count=1000))


def ask(c: httpx.Client, world: dict, thread: str) -> list:
    stream = read(c, "POST", f"{world['url']}/threads/{thread}/runs", json=QUESTION,
                  headers=auth(world["key"]))  # fmt: skip
    assert stream.of("end")[-1].data["status"] == "done", stream.frames[-3:]
    return stream.frames


def test_a_thread_past_its_retention_leaves_no_key_of_any_family(world) -> None:
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, world["url"], world["key"])
        ask(c, world, thread)
        families = {family_of(k) for k in keys_of(world["redis"], thread)}
        made = {"checkpoints", "checkpoint_latest", "passages", "threads", "run_records"}
        assert made | {"run_lists"} <= families, families
        wait_until(lambda: not keys_of(world["redis"], thread), timeout=4 * RETENTION_S + 10,
                   what="every key of the thread expired")  # fmt: skip
        listed = c.get(f"{world['url']}/threads", headers=auth(world["key"])).json()
        gone = c.get(f"{world['url']}/threads/{thread}/state", headers=auth(world["key"]))
    assert thread not in [t["thread_id"] for t in listed]
    assert gone.status_code == 404


def test_a_thread_that_is_read_or_continued_is_kept(world) -> None:
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, world["url"], world["key"])
        ask(c, world, thread)
        # read every second for three retention periods: it stays, whole
        before = keys_of(world["redis"], thread)
        until = time.monotonic() + 3 * RETENTION_S
        while time.monotonic() < until:
            r = c.get(f"{world['url']}/threads/{thread}/history", headers=auth(world["key"]))
            assert r.status_code == 200 and unforked(r.json())
            time.sleep(1.0)  # the scenario: a reader once a second, not a condition
        assert keys_of(world["redis"], thread) == before
        ask(c, world, thread)  # continued: the second question sees the first turn
        state = c.get(f"{world['url']}/threads/{thread}/state", headers=auth(world["key"]))
        last_use = time.monotonic()
    assert len(state.json()["values"]["turns"]) == 2
    # left alone, it goes one retention after its last use, not before
    wait_until(lambda: not keys_of(world["redis"], thread), timeout=4 * RETENTION_S + 10,
               what="the thread expired once left alone")  # fmt: skip
    assert time.monotonic() - last_use >= RETENTION_S - 0.5


def test_a_run_longer_than_the_retention_keeps_its_thread_whole(world) -> None:
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, world["url"], world["key"])
        started = time.monotonic()
        frames = ask(c, world, thread)
        took = time.monotonic() - started
        history = c.get(f"{world['url']}/threads/{thread}/history", headers=auth(world["key"]))
    assert took > 1.5 * RETENTION_S, took  # the run did outlast the retention
    wait_until(lambda: not keys_of(world["redis"], thread), timeout=4 * RETENTION_S + 10,
               what="the thread expired once the run was over and nobody read it")  # fmt: skip
    steps = [n for h in history.json() for n in h["wrote"]]
    assert {"prepare", "expand_query", "integrate", "check_answer", "remember"} <= set(steps)
    assert unforked(history.json())
    assert any(f.event == "answer" for f in frames)


def test_threads_delete_removes_every_key_at_once(world) -> None:
    from langgraph_sdk import get_client

    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, world["url"], world["key"])
        ask(c, world, thread)
    assert keys_of(world["redis"], thread)

    async def delete() -> None:
        client = get_client(url=world["url"] + "/langgraph", api_key=world["key"])
        try:
            await client.threads.delete(thread)
        finally:
            await client.aclose()

    asyncio.run(delete())
    assert keys_of(world["redis"], thread) == []
    with httpx.Client(timeout=60) as c:
        gone = c.get(f"{world['url']}/langgraph/threads/{thread}", headers=auth(world["key"]))
        listed = c.get(f"{world['url']}/threads", headers=auth(world["key"])).json()
    assert gone.status_code == 404
    assert thread not in [t["thread_id"] for t in listed]


def test_deleting_a_thread_natively_removes_it_and_refuses_while_it_runs(world) -> None:
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, world["url"], world["key"])
        first = read(c, "POST", f"{world['url']}/threads/{thread}/runs", json=QUESTION,
                     headers=auth(world["key"]), until="token")  # fmt: skip
        assert first.of("token")
        busy = c.delete(f"{world['url']}/threads/{thread}", headers=auth(world["key"]))
        assert busy.status_code == 409
        wait_until(
            lambda: c.get(f"{world['url']}/threads/{thread}/runs",
                          headers=auth(world["key"])).json()[0]["status"] == "success",
            timeout=60, what="the run ended",
        )  # fmt: skip
        done = c.delete(f"{world['url']}/threads/{thread}", headers=auth(world["key"]))
        again = c.get(f"{world['url']}/threads/{thread}/state", headers=auth(world["key"]))
    assert done.status_code == 204
    assert again.status_code == 404
    assert keys_of(world["redis"], thread) == []


def test_nobody_deletes_a_thread_of_someone_else(world) -> None:
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, world["url"], world["key"])
        native = c.delete(f"{world['url']}/threads/{thread}", headers=auth(world["bob"]))
        protocol = c.delete(f"{world['url']}/langgraph/threads/{thread}",
                            headers={"x-api-key": world["bob"]})  # fmt: skip
        still = c.get(f"{world['url']}/threads/{thread}/state", headers=auth(world["key"]))
    assert native.status_code == protocol.status_code == 404
    assert still.status_code == 200


def test_a_run_waiting_in_the_queue_longer_than_the_retention_finds_its_thread_whole(
    world,
) -> None:
    queue = {"SEEKGRAPH_QUEUE": "seekgraph:runq-retention"}
    api = start_app(
        world["tmp"], "api-only", {**world["env"], **queue, "SEEKGRAPH_WORKER": "false"}
    )
    worker = None
    try:
        with httpx.Client(timeout=60) as c:
            thread = new_thread(c, api.url, world["key"])
            r = c.post(f"{api.url}/threads/{thread}/runs", json={**QUESTION, "stream": False},
                       headers=auth(world["key"]))  # fmt: skip
            assert r.status_code == 202, r.text
            queued_at = time.monotonic()
            # nobody takes it for three retention periods: its thread stays whole meanwhile
            while time.monotonic() - queued_at < 3 * RETENTION_S:
                assert world["redis"].exists(f"seekgraph:thread:{thread}")
                time.sleep(0.2)  # the scenario: time passes with nobody taking the run
            worker = start_worker(world["tmp"], "late", {**world["env"], **queue})
            runs = f"{api.url}/threads/{thread}/runs"
            wait_until(lambda: c.get(runs, headers=auth(world["key"])).json()[0]["status"]
                       == "success", timeout=60, what="the queued run ran")  # fmt: skip
            state = c.get(f"{api.url}/threads/{thread}/state", headers=auth(world["key"]))
        assert state.json()["values"]["answer"]
    finally:
        if worker is not None:
            worker.stop()
        api.stop()


def seekgraph(world: dict, *args: str) -> str:
    """``seekgraph`` as an operator runs it, on the deployment's Redis and retention."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "SEEKGRAPH_REDIS_URL": world["redis_url"],
           "SEEKGRAPH_RETENTION_MINUTES": str(RETENTION_S / 60)}  # fmt: skip
    done = subprocess.run([str(Path(sys.executable).parent / "seekgraph"), *args],
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_operators_see_sizes_by_family_and_prune_threads_kept_from_before(world) -> None:
    import json

    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, world["url"], world["key"])
        ask(c, world, thread)
        metrics = c.get(f"{world['url']}/metrics", headers=auth("test-internal-secret")).text
    assert 'seekgraph_store_bytes{family="checkpoints"}' in metrics
    assert "seekgraph_threads_past_half_retention" in metrics
    # as if written before retention was on: no expiry, last used an hour ago
    r = world["redis"]
    for key in keys_of(r, thread):
        r.persist(key)
    r.hset(f"seekgraph:thread:{thread}", "touched_at", str(time.time() - 3600))
    kept = keys_of(r, thread)
    dry = json.loads(seekgraph(world, "admin", "storage", "--json"))
    assert dry["prune"]["dry_run"] and dry["prune"]["expired"] >= 1
    assert dry["families"]["checkpoints"]["bytes"] > 0 and dry["threads_without_expiry"] >= 1
    assert keys_of(r, thread) == kept  # a dry run changes nothing
    printed = seekgraph(world, "admin", "storage", "--prune")
    assert "pruned" in printed
    assert keys_of(r, thread) == []


def delete_on_the_first_token(world: dict, thread: str, seen: list, then=None):
    """A ``stop`` for ``read``: every key of ``thread`` removed at the run's first token."""

    def stop(frame) -> bool:
        seen.append(frame)
        if frame.event == "token" and "deleted" not in seen:
            if then is not None:
                then()
            world["redis"].delete(*keys_of(world["redis"], thread))
            seen.append("deleted")
        return frame.event == "end"

    return stop


def test_a_run_whose_thread_is_removed_under_it_ends_its_stream_saying_so(world) -> None:
    """Keys removed under a running run (an operator's cleanup, an expiry missed by a paused
    process): its follower is told the thread is gone, not sent to follow it elsewhere."""
    seen: list = []
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, world["url"], world["key"])
        stop = delete_on_the_first_token(world, thread, seen)
        stream = read(c, "POST", f"{world['url']}/threads/{thread}/runs", json=QUESTION,
                      headers=auth(world["key"]), stop=stop, deadline=90)  # fmt: skip
    assert "deleted" in seen
    assert stream.of("end")[-1].data["status"] == "error", stream.frames[-3:]
    errors = [f.data["message"] for f in stream.of("error")]
    assert any("thread was deleted or expired" in m for m in errors), errors
    assert not any("took this run over" in m for m in errors), errors
    # nothing of it is kept: a write the run made as it stopped (its passages are stored
    # before the fenced checkpoint write) carries the retention and goes with it
    wait_until(lambda: not keys_of(world["redis"], thread), timeout=RETENTION_S + 10,
               what="no key of the removed thread outlived its retention")  # fmt: skip


def test_a_worker_run_whose_thread_and_worker_are_gone_ends_its_followers_stream(world) -> None:
    """The follower of a queued run reads the run's event log; when nothing can publish to
    it any more (worker killed, records gone with the thread), its stream ends with an error
    instead of heartbeats for ever."""
    queue = {"SEEKGRAPH_QUEUE": "seekgraph:runq-gone"}
    api_env = {**world["env"], **queue, "SEEKGRAPH_WORKER": "false"}
    api = start_app(world["tmp"], "api-gone", api_env)
    worker = start_worker(world["tmp"], "gone", {**world["env"], **queue})
    seen: list = []
    try:
        with httpx.Client(timeout=60) as c:
            thread = new_thread(c, api.url, world["key"])
            stop = delete_on_the_first_token(world, thread, seen, then=worker.popen.kill)
            started = time.monotonic()
            stream = read(c, "POST", f"{api.url}/threads/{thread}/runs", json=QUESTION,
                          headers=auth(world["key"]), stop=stop, deadline=90)  # fmt: skip
            took = time.monotonic() - started
    finally:
        worker.stop()
        api.stop()
    assert "deleted" in seen
    assert stream.of("end"), stream.frames[-3:]
    assert stream.of("end")[-1].data["status"] == "error"
    errors = [f.data["message"] for f in stream.of("error")]
    assert any("thread was deleted or expired" in m for m in errors), errors
    assert took < 60, took
