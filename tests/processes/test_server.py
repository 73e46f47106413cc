"""The HTTP server as real processes: two instances sharing one real Redis, a test model server.

Covers resume on the same instance, forwarding to the origin, takeover after SIGKILL,
the one-run-per-thread lock, heartbeats, isolation between users, SQLite without Redis and a
shared Redis index. Bad input, Redis lost and restarted, and a paused lock holder are in
``test_faults.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import httpx
import pytest

from seekgraph.server.auth import add_key_to_file
from tests.support.processes import (
    Proc,
    auth,
    llm_server_env,
    new_thread,
    seed_demo_index,
    shared_redis,
    start_app,
    start_model_server,
    start_together,
    unforked,
)
from tests.support.sse_client import Stream, read

LOCK_TTL_MS = 3000


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("server")
    procs: list[Proc] = []
    try:
        redis_url = shared_redis(tmp, procs)  # .ci/run's, or one of our own
        model = start_model_server(tmp, delay=0.05, tokens=60, first_delay=1.6)
        procs.append(model)
        keys = tmp / "keys.json"
        world = {
            "tmp": tmp,
            "redis_url": redis_url,
            "model": model,
            "alice": add_key_to_file(keys, "alice"),
            "bob": add_key_to_file(keys, "bob"),
            "env": llm_server_env(redis_url, model, keys, SEEKGRAPH_LOCK_TTL_MS=LOCK_TTL_MS),
        }
        world["a"], world["b"] = start_together(
            procs, *(partial(start_app, tmp, name, world["env"]) for name in ("a", "b"))
        )
        yield world
    finally:
        for p in reversed(procs):
            p.stop()


QUESTION = {"question": "How do I connect to the VPN from a new laptop?"}


def answer_text(stream: Stream) -> str:
    """What a client shows: the snapshot's answer replaced, then tokens appended."""
    text = ""
    for f in stream.frames:
        if f.event == "snapshot":
            text = f.data["answer"]
        elif f.event == "token":
            text += f.data["text"]
    return text


def assert_no_gaps(stream: Stream) -> None:
    seqs = [f.seq for f in stream.frames if f.id]
    assert seqs == sorted(set(seqs)), seqs
    after_snapshot = seqs[1:] if stream.frames[0].event == "snapshot" else seqs
    assert after_snapshot == list(range(after_snapshot[0], after_snapshot[0] + len(after_snapshot)))


def test_a_run_streams_sse_with_ids_and_a_final_answer(world) -> None:
    a = world["a"].url
    with httpx.Client() as c:
        thread = new_thread(c, a, world["alice"])
        s = read(
            c, "POST", f"{a}/threads/{thread}/runs", json=QUESTION, headers=auth(world["alice"])
        )
    assert s.status == 200
    kinds = [f.event for f in s.frames]
    assert kinds[0] == "node_start" and kinds[-1] == "end"
    assert {"node", "sources", "token", "answer"} <= set(kinds)
    run_id = s.frames[0].id.split(":")[0]
    assert all(f.id.startswith(run_id + ":") for f in s.frames)
    assert [f.seq for f in s.frames] == list(range(1, len(s.frames) + 1))
    [answer] = s.of("answer")
    assert answer.data["mode"] == "llm" and answer.data["citations"]
    assert "".join(f.data["text"] for f in s.of("token")).strip() == answer.data["answer"]
    assert s.of("end")[0].data["status"] == "done"


def test_page_refresh_on_the_same_instance_gets_a_snapshot_then_live_events(world) -> None:
    a = world["a"].url
    with httpx.Client() as c:
        thread = new_thread(c, a, world["alice"])
        first = read(
            c,
            "POST",
            f"{a}/threads/{thread}/runs",
            json=QUESTION,
            headers=auth(world["alice"]),
            until="token",
        )
        seen = first.last_id
        second = read(
            c,
            "GET",
            f"{a}/threads/{thread}/stream",
            headers={**auth(world["alice"]), "Last-Event-ID": seen},
        )
    assert second.frames[0].event == "snapshot"
    assert second.frames[0].seq >= first.frames[-1].seq
    assert_no_gaps(second)
    final = second.of("answer")[0].data["answer"]
    assert answer_text(second).strip() == final  # shown exactly once, complete
    assert final.count("w10 ") == 1


def test_reconnecting_to_another_instance_is_forwarded_to_the_origin(world) -> None:
    a, b = world["a"].url, world["b"].url
    with httpx.Client() as c:
        thread = new_thread(c, a, world["alice"])
        first = read(
            c,
            "POST",
            f"{a}/threads/{thread}/runs",
            json=QUESTION,
            headers=auth(world["alice"]),
            until="token",
        )
        second = read(
            c,
            "GET",
            f"{b}/threads/{thread}/stream",
            headers={**auth(world["alice"]), "Last-Event-ID": first.last_id},
        )
    run_id = first.frames[0].id.split(":")[0]
    assert second.frames[0].event == "snapshot"
    assert second.frames[0].id.startswith(run_id + ":")  # the origin's run, not a new one
    assert not any(f.data.get("node") == "resume" for f in second.of("node"))
    assert_no_gaps(second)
    assert answer_text(second).strip() == second.of("answer")[0].data["answer"]


def test_origin_killed_mid_run_is_continued_from_its_checkpoint(world) -> None:
    tmp = world["tmp"]
    origin: Proc = start_app(tmp, "doomed", world["env"])
    b = world["b"].url
    with httpx.Client() as c:
        thread = new_thread(c, origin.url, world["alice"])
        first = read(
            c,
            "POST",
            f"{origin.url}/threads/{thread}/runs",
            json=QUESTION,
            headers=auth(world["alice"]),
            until="token",
        )
        origin.kill()
        # the dead holder's lock blocks a new run until it expires
        blocked = c.post(f"{b}/threads/{thread}/runs", json=QUESTION, headers=auth(world["alice"]))
        assert blocked.status_code == 409
        second = read(
            c,
            "GET",
            f"{b}/threads/{thread}/stream",
            headers={**auth(world["alice"]), "Last-Event-ID": first.last_id},
        )
        history = c.get(f"{b}/threads/{thread}/history", headers=auth(world["alice"])).json()
    assert second.frames[0].event == "snapshot"
    assert second.frames[0].seq > first.frames[-1].seq
    assert any(s["node"] == "resume" for s in second.frames[0].data["steps"])
    answer = second.of("answer")[0].data
    assert answer["citations"] and answer["answer"].endswith("].")
    assert answer_text(second).strip() == answer["answer"]
    assert second.of("end")[0].data["status"] == "done"
    # one continuous history: every checkpoint's parent is the one before it (per chain:
    # the flow's, and the question's search)
    assert unforked(history)
    wrote = [n for h in history for n in h["wrote"]]
    assert wrote.count("integrate") == 1 and wrote[-2:] == ["search", "remember"]
    assert wrote.index("check_answer") < wrote.index("remember")


RESEARCH = {
    "question": "The VPN, travel and sign-on",
    "flow": "research",
    "plan": [
        {"id": "vpn", "question": "How do I connect to the VPN from a new laptop?"},
        {"id": "meals", "question": "What is the daily meal allowance?", "depends_on": ["vpn"]},
        {"id": "sso", "question": "How do I set up single sign-on?", "depends_on": ["meals"]},
    ],
}


def test_a_research_run_killed_mid_run_resumes_without_redoing_finished_sub_questions(
    world,
) -> None:
    origin: Proc = start_app(world["tmp"], "doomed-research", world["env"])
    b = world["b"].url
    key = auth(world["alice"])

    def first_answered(frame) -> bool:  # the checkpoint after "vpn" is written
        return (
            frame.event == "node"
            and frame.data["node"] == "schedule"
            and (frame.data["summary"].startswith("1 of 3"))
        )

    with httpx.Client() as c:
        thread = new_thread(c, origin.url, world["alice"])
        first = read(
            c,
            "POST",
            f"{origin.url}/threads/{thread}/runs",
            json=RESEARCH,
            headers=key,
            stop=first_answered,
        )
        origin.kill()
        second = read(
            c,
            "GET",
            f"{b}/threads/{thread}/stream",
            headers={**key, "Last-Event-ID": first.last_id},
        )
        history = c.get(f"{b}/threads/{thread}/history", headers=key).json()
        state = c.get(f"{b}/threads/{thread}/state", headers=key).json()["values"]
    assert first_answered(first.frames[-1])
    assert second.frames[0].event == "snapshot"
    assert second.of("end")[0].data["status"] == "done"
    # after the takeover only the unfinished sub-questions were researched
    redone = [f.data["detail"]["id"] for f in second.of("node") if f.data["node"] == "research_one"]
    assert redone == ["meals", "sso"]
    wrote = [n for h in history for n in h["wrote"]]
    assert wrote.count("research_one") == 3 and wrote.count("plan_research") == 1
    assert {r["status"] for r in state["results"].values()} == {"done"}
    report = second.of("answer")[0].data["answer"]
    assert "## Contents" in report and "[1]" in report
    assert unforked(history)


def test_double_submit_gets_409_with_the_live_run(world) -> None:
    a = world["a"].url
    with httpx.Client() as c:
        thread = new_thread(c, a, world["alice"])
        with c.stream(
            "POST",
            f"{a}/threads/{thread}/runs",
            json=QUESTION,
            headers=auth(world["alice"]),
            timeout=60,
        ) as live:
            run_id = live.headers["x-run-id"]
            again = c.post(
                f"{a}/threads/{thread}/runs", json=QUESTION, headers=auth(world["alice"])
            )
            elsewhere = c.post(
                f"{world['b'].url}/threads/{thread}/runs",
                json=QUESTION,
                headers=auth(world["alice"]),
            )
            for _ in live.iter_lines():
                pass
    assert again.status_code == 409 and again.json()["run_id"] == run_id
    assert elsewhere.status_code == 409 and elsewhere.json()["run_id"] == run_id
    assert "GET /threads/" in again.json()["detail"]


def test_heartbeats_arrive_while_a_slow_step_runs(world) -> None:
    a = world["a"].url
    key = auth(world["alice"])
    with httpx.Client() as c:
        thread = new_thread(c, a, world["alice"])
        s = read(c, "POST", f"{a}/threads/{thread}/runs", json=QUESTION, headers=key)
    # the model is silent for 1.6 s before its first answer token; heartbeats every 0.5 s
    assert s.comments >= 2
    assert s.of("end")[0].data["status"] == "done"


def test_another_users_key_gets_404_everywhere(world) -> None:
    a = world["a"].url
    with httpx.Client() as c:
        thread = new_thread(c, a, world["alice"])
        read(c, "POST", f"{a}/threads/{thread}/runs", json=QUESTION, headers=auth(world["alice"]))
        bob = auth(world["bob"])
        for method, path in [
            ("GET", "state"),
            ("GET", "history"),
            ("GET", "stream"),
            ("POST", "runs"),
        ]:
            r = c.request(method, f"{a}/threads/{thread}/{path}", headers=bob, json=QUESTION)
            assert r.status_code == 404, (path, r.status_code)
            assert "VPN" not in r.text
        assert thread not in [t["thread_id"] for t in c.get(f"{a}/threads", headers=bob).json()]
        assert c.get(f"{a}/threads/{thread}/state", headers=auth(world["alice"])).status_code == 200
        assert c.get(f"{a}/threads/{thread}/state").status_code == 401
        assert c.get(f"{a}/threads/{thread}/state", headers=auth("sg_not_a_key")).status_code == 401


def test_without_redis_one_instance_runs_on_sqlite_and_keeps_threads(world, tmp_path) -> None:
    env = {k: v for k, v in world["env"].items() if k != "SEEKGRAPH_REDIS_URL"}
    env["SEEKGRAPH_DATA_DIR"] = tmp_path / "single"
    seed_demo_index(tmp_path / "single")  # its own data directory: the demo's index in it
    solo = start_app(tmp_path, "solo", env)
    key = auth(world["alice"])
    try:
        with httpx.Client() as c:
            ready = c.get(f"{solo.url}/readyz").json()
            assert ready["backend"] == "sqlite"
            thread = new_thread(c, solo.url, world["alice"])
            s = read(c, "POST", f"{solo.url}/threads/{thread}/runs", json=QUESTION, headers=key)
            assert s.of("answer")[0].data["citations"]
    finally:
        solo.stop()
    assert "single instance on SQLite" in solo.tail()
    again = start_app(tmp_path, "solo", env)  # same data directory, restarted
    try:
        with httpx.Client() as c:
            state = c.get(f"{again.url}/threads/{thread}/state", headers=key)
            assert state.status_code == 200
            assert state.json()["values"]["answer"] == s.of("answer")[0].data["answer"]
            assert (
                c.get(f"{again.url}/threads/{thread}/state", headers=auth(world["bob"])).status_code
                == 404
            )
    finally:
        again.stop()


def test_instances_can_share_a_redis_index(world) -> None:
    env = {**world["env"], "SEEKGRAPH_INDEX_BACKEND": "redis"}
    shared = start_app(world["tmp"], "shared-index", env)
    try:
        with httpx.Client() as c:
            thread = new_thread(c, shared.url, world["alice"])
            s = read(
                c,
                "POST",
                f"{shared.url}/threads/{thread}/runs",
                json=QUESTION,
                headers=auth(world["alice"]),
            )
        answer = s.of("answer")[0].data
        assert answer["citations"] and s.of("end")[0].data["status"] == "done"
    finally:
        shared.stop()
    import redis as redis_client

    client = redis_client.Redis.from_url(world["redis_url"])
    try:  # the workspace's documents live in Redis, where every instance finds them
        assert len(client.keys("seekgraph:index:*:doc:kb/*")) >= 5
    finally:
        client.close()
