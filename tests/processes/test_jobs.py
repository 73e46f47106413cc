"""Runs as jobs: API-only instances queue runs on Redis; worker processes execute them.

Two API instances without workers (``serve --no-worker``) and two ``seekgraph worker``
processes share one real Redis; the model is the scripted test server, slow enough that a
run can be stopped, killed or drained half-way.
"""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from seekgraph.server.auth import add_key_to_file
from tests.processes.test_server import QUESTION, RESEARCH, answer_text, assert_no_gaps
from tests.support.processes import (
    Proc,
    auth,
    llm_server_env,
    new_thread,
    shared_redis,
    start_app,
    start_model_server,
    start_together,
    start_worker,
    unforked,
)
from tests.support.sse_client import Stream, read
from tests.support.waiting import wait_until

WEBHOOK_SECRET = "test-webhook-secret"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("jobs")
    procs: list[Proc] = []
    workers: list[Proc] = []  # the tests replace the ones they kill
    try:
        redis_url = shared_redis(tmp, procs)
        model = start_model_server(tmp, delay=0.05, tokens=60, first_delay=1.0)
        procs.append(model)
        keys = tmp / "keys.json"
        env = llm_server_env(
            redis_url,
            model,
            keys,
            SEEKGRAPH_QUEUE=f"test-jobs-{uuid.uuid4().hex[:8]}",  # this module's own queue
            SEEKGRAPH_CLAIM_IDLE_SECONDS=2,
            SEEKGRAPH_WEBHOOK_SECRET=WEBHOOK_SECRET,
            SEEKGRAPH_WEBHOOK_ALLOW_HOSTS="127.0.0.1",  # the test's receiver, and only it
            SEEKGRAPH_SHUTDOWN_GRACE_SECONDS=1,
        )
        world: dict[str, Any] = {
            "tmp": tmp,
            "env": env,
            "alice": add_key_to_file(keys, "alice"),
            "bob": add_key_to_file(keys, "bob"),
        }
        world["api"], world["api2"], *started = start_together(
            procs,
            *(partial(start_app, tmp, name, env, "--no-worker") for name in ("api", "api2")),
            *(partial(start_worker, tmp, f"w{i}", env) for i in (1, 2)),
        )
        for worker in started:  # the tests stop them, and replace the ones they kill
            procs.remove(worker)
        world["workers"] = workers
        workers += started
        yield world
    finally:
        for p in [*workers, *reversed(procs)]:
            p.stop()


def record(c: httpx.Client, base: str, key: str, thread: str, run: str) -> dict[str, Any]:
    r = c.get(f"{base}/threads/{thread}/runs/{run}", headers=auth(key))
    assert r.status_code == 200, r.text
    return dict(r.json())


def background(c: httpx.Client, base: str, key: str, thread: str, **body: Any) -> dict[str, Any]:
    r = c.post(
        f"{base}/threads/{thread}/runs",
        json={**QUESTION, **body, "stream": False},
        headers=auth(key),
    )
    assert r.status_code == 202, r.text
    assert r.headers["Location"] == f"/threads/{thread}/runs/{r.json()['run_id']}"
    return dict(r.json())


def join(c: httpx.Client, base: str, key: str, thread: str, run: str) -> dict[str, Any]:
    r = c.post(f"{base}/threads/{thread}/runs/{run}/join", headers=auth(key), timeout=120)
    assert r.status_code == 200, r.text
    return dict(r.json())


def executor_of(world: dict[str, Any], rec: dict[str, Any]) -> Proc:
    return next(w for w in world["workers"] if w.url == rec["executor"])


def test_a_background_run_is_executed_by_a_worker_and_joined_on_another_instance(world) -> None:
    api, api2, alice = world["api"].url, world["api2"].url, world["alice"]
    with httpx.Client(timeout=30) as c:
        thread = new_thread(c, api, alice)
        accepted = background(c, api, alice, thread)
        # queued, or already taken by a worker: the record is read back after it was queued
        assert accepted["status"] in ("pending", "running") and accepted["background"] is True
        joined = join(c, api2, alice, thread, accepted["run_id"])
        listed = c.get(f"{api2}/threads/{thread}/runs", headers=auth(alice)).json()
        metrics = c.get(f"{api}/metrics", headers=auth(world["env"]["SEEKGRAPH_INTERNAL_TOKEN"]))
    assert joined["run"]["status"] == "success"
    assert joined["run"]["executor"] in {w.url for w in world["workers"]}
    assert joined["values"]["answer"] and joined["values"]["citations"]
    assert [r["run_id"] for r in listed] == [accepted["run_id"]]
    assert 'seekgraph_queue_runs{state="pending"} 0.0' in metrics.text  # nothing left waiting


def test_a_run_streamed_from_an_api_only_instance_resumes_on_another(world) -> None:
    api, api2, alice = world["api"].url, world["api2"].url, world["alice"]
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, api, alice)
        first = read(
            c,
            "POST",
            f"{api}/threads/{thread}/runs",
            json=QUESTION,
            headers=auth(alice),
            until="token",
        )
        second = read(
            c,
            "GET",
            f"{api2}/threads/{thread}/stream",
            headers={**auth(alice), "Last-Event-ID": first.last_id},
        )
    run_id = first.frames[0].id.split(":")[0]
    assert second.frames[0].event == "snapshot"
    assert second.frames[0].id.startswith(run_id + ":")
    assert second.frames[0].seq >= first.frames[-1].seq
    assert_no_gaps(second)
    assert answer_text(second).strip() == second.of("answer")[0].data["answer"]
    assert second.of("end")[0].data["status"] == "done"


def cancel(
    c: httpx.Client, base: str, key: str, thread: str, run: str, action: str = "interrupt"
) -> httpx.Response:
    return c.post(
        f"{base}/threads/{thread}/runs/{run}/cancel", params={"action": action}, headers=auth(key)
    )


def test_cancel_on_another_instance_stops_the_run_within_two_seconds(world) -> None:
    api, api2, alice = world["api"].url, world["api2"].url, world["alice"]
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, api, alice)
        started: dict[str, Any] = {}

        def cancel_once_running(frame: Any) -> bool:
            if frame.event == "node" and frame.data["node"] == "expand_query" and not started:
                run = frame.id.split(":")[0]
                started["at"] = time.monotonic()
                r = cancel(c, api2, alice, thread, run)
                assert r.status_code == 202, r.text
                started["run"] = run
            return frame.event == "end"

        stream = read(
            c,
            "POST",
            f"{api}/threads/{thread}/runs",
            json=QUESTION,
            headers=auth(alice),
            stop=cancel_once_running,
        )
        ended = time.monotonic()
        rec = record(c, api2, alice, thread, started["run"])
        state = c.get(f"{api2}/threads/{thread}/state", headers=auth(alice)).json()
        again = cancel(c, api2, alice, thread, started["run"])
    assert stream.of("end")[0].data["status"] == "cancelled"
    assert ended - started["at"] < 2.0
    assert rec["status"] == "cancelled" and rec["cancel"] == "interrupt"
    assert state["values"]["question"] == QUESTION["question"]  # its saved steps are kept
    assert not stream.of("answer")
    assert again.status_code == 409 and "already ended" in again.json()["detail"]


def test_rollback_puts_the_thread_back_where_the_run_found_it(world) -> None:
    api, alice = world["api"].url, world["alice"]
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, api, alice)
        first = background(c, api, alice, thread)
        before = join(c, api, alice, thread, first["run_id"])["values"]
        meals = "What is the daily meal allowance?"
        second = background(c, api, alice, thread, question=meals)
        wait_until(  # it has saved steps of its own: the thread shows its question
            lambda: (
                c.get(f"{api}/threads/{thread}/state", headers=auth(alice)).json()["values"][
                    "question"
                ]
                == meals
            ),
            timeout=30,
            what="the second run's first checkpoint",
        )
        assert cancel(c, api, alice, thread, second["run_id"], "rollback").status_code == 202
        rolled = join(c, api, alice, thread, second["run_id"])
        after = c.get(f"{api}/threads/{thread}/state", headers=auth(alice)).json()["values"]
    assert rolled["run"]["status"] == "cancelled" and rolled["run"]["cancel"] == "rollback"
    assert after["question"] == before["question"] == QUESTION["question"]
    assert after["answer"] == before["answer"]


def test_multitask_strategies_on_a_busy_thread(world) -> None:
    api, api2, alice = world["api"].url, world["api2"].url, world["alice"]
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, api, alice)
        first = background(c, api, alice, thread)
        rejected = c.post(
            f"{api2}/threads/{thread}/runs", json={**QUESTION, "stream": False},
            headers=auth(alice),
        )  # fmt: skip
        queued = background(c, api2, alice, thread, multitask_strategy="enqueue")
        done_first = join(c, api, alice, thread, first["run_id"])["run"]
        done_queued = join(c, api, alice, thread, queued["run_id"])["run"]
        third = background(c, api, alice, thread)
        wait_until(
            lambda: record(c, api, alice, thread, third["run_id"])["status"] == "running",
            timeout=30,
            what="the third run to start",
        )
        fourth = background(c, api2, alice, thread, multitask_strategy="interrupt")
        done_fourth = join(c, api, alice, thread, fourth["run_id"])["run"]
        done_third = record(c, api, alice, thread, third["run_id"])
    assert rejected.status_code == 409 and rejected.json()["run_id"] == first["run_id"]
    assert done_first["status"] == done_queued["status"] == "success"
    assert done_queued["created_at"] < done_first["updated_at"]  # it was queued behind it
    assert done_third["status"] == "cancelled" and done_fourth["status"] == "success"


def test_a_worker_killed_mid_run_is_replaced_and_the_stream_goes_on(world) -> None:
    api, api2, alice = world["api"].url, world["api2"].url, world["alice"]
    with httpx.Client(timeout=90) as c:
        thread = new_thread(c, api, alice)
        first = read(
            c,
            "POST",
            f"{api}/threads/{thread}/runs",
            json=QUESTION,
            headers=auth(alice),
            until="token",
        )
        run = first.frames[0].id.split(":")[0]
        doomed = executor_of(world, record(c, api, alice, thread, run))
        doomed.kill()
        world["workers"].remove(doomed)
        world["workers"].append(
            start_worker(world["tmp"], f"w-after-{doomed.popen.pid}", world["env"])
        )
        second = read(
            c,
            "GET",
            f"{api2}/threads/{thread}/stream",
            headers={**auth(alice), "Last-Event-ID": first.last_id},
        )
        history = c.get(f"{api2}/threads/{thread}/history", headers=auth(alice)).json()
        rec = record(c, api, alice, thread, run)
    assert second.frames[0].event == "snapshot" and second.frames[0].seq >= first.frames[-1].seq
    assert_no_gaps(second)
    steps = [s["node"] for s in second.frames[0].data["steps"]]
    steps += [f.data["node"] for f in second.of("node")]
    assert "resume" in steps, steps
    assert second.of("end")[0].data["status"] == "done"
    assert rec["status"] == "success" and rec["executor"] != doomed.url
    assert unforked(history)
    wrote = [n for h in history for n in h["wrote"]]
    assert wrote.count("integrate") == 1


def test_sigterm_hands_a_run_back_and_another_worker_finishes_it(world) -> None:
    api, alice = world["api"].url, world["alice"]
    with httpx.Client(timeout=90) as c:
        thread = new_thread(c, api, alice)
        accepted = background(c, api, alice, thread)
        run = accepted["run_id"]
        rec = wait_until(
            lambda: (r := record(c, api, alice, thread, run))["executor"] and r,
            timeout=30,
            what="a worker to claim the run",
        )
        leaving = executor_of(world, rec)
        leaving.stop()  # SIGTERM: a grace of 1 s, then it hands the run back
        world["workers"].remove(leaving)
        handed = time.monotonic()
        done = join(c, api, alice, thread, run)["run"]
        stream: Stream = read(c, "GET", f"{api}/threads/{thread}/stream", headers=auth(alice))
        history = c.get(f"{api}/threads/{thread}/history", headers=auth(alice)).json()
        world["workers"].append(
            start_worker(world["tmp"], f"w-after-{leaving.popen.pid}", world["env"])
        )
    assert "handed 1 run(s) back" in leaving.log_path.read_text()
    assert done["status"] == "success" and done["executor"] != leaving.url
    assert time.monotonic() - handed < 60
    steps = [s["node"] for s in stream.frames[0].data["steps"]]
    assert "handback" in steps and "resume" in steps
    assert unforked(history)


def test_another_users_key_sees_no_run_of_alice(world) -> None:
    api, alice, bob = world["api"].url, world["alice"], world["bob"]
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, api, alice)
        run = background(c, api, alice, thread)["run_id"]
        base = f"{api}/threads/{thread}/runs"
        answers = [
            c.get(base, headers=auth(bob)),
            c.get(f"{base}/{run}", headers=auth(bob)),
            c.post(f"{base}/{run}/join", headers=auth(bob)),
            c.post(f"{base}/{run}/cancel", headers=auth(bob)),
        ]
        still = join(c, api, alice, thread, run)["run"]
    assert [a.status_code for a in answers] == [404] * 4
    # the same answer as for a thread that does not exist: nothing of alice's run shows
    assert {a.json()["detail"] for a in answers} == {f"no thread {thread}"}
    assert still["status"] == "success" and not still["cancel"]


def test_a_research_run_stopped_half_way_is_continued_without_redoing_its_answers(world) -> None:
    api, api2, alice = world["api"].url, world["api2"].url, world["alice"]

    def first_answered(frame: Any) -> bool:  # the checkpoint after "vpn" is written
        return (
            frame.event == "node"
            and frame.data["node"] == "schedule"
            and (frame.data["summary"].startswith("1 of 3"))
        )

    with httpx.Client(timeout=90) as c:
        thread = new_thread(c, api, alice)
        first = read(
            c, "POST", f"{api}/threads/{thread}/runs", json=RESEARCH, headers=auth(alice),
            stop=first_answered,
        )  # fmt: skip
        run = first.frames[0].id.split(":")[0]
        stopped = c.post(
            f"{api2}/threads/{thread}/runs/{run}/cancel", params={"wait": True},
            headers=auth(alice),
        ).json()  # fmt: skip
        # the cancel lands after "vpn" is answered; on a busy machine "meals" may be answered too
        saved = c.get(f"{api}/threads/{thread}/state", headers=auth(alice)).json()["values"]
        nothing = c.post(f"{api}/threads/{thread}/continue", json={}, headers=auth(bob_key(world)))
        second = read(c, "POST", f"{api2}/threads/{thread}/continue", json={}, headers=auth(alice))
        again = c.post(f"{api}/threads/{thread}/continue", json={}, headers=auth(alice))
        state = c.get(f"{api}/threads/{thread}/state", headers=auth(alice)).json()["values"]
        history = c.get(f"{api}/threads/{thread}/history", headers=auth(alice)).json()
    assert stopped["status"] == "cancelled"
    assert nothing.status_code == 404  # not bob's thread
    assert second.of("end")[0].data["status"] == "done"
    answered = [k for k, r in saved["results"].items() if r["status"] == "done"]
    redone = [f.data["detail"]["id"] for f in second.of("node") if f.data["node"] == "research_one"]
    assert "vpn" in answered and "sso" not in answered  # there is something to continue
    assert redone == [k for k in ("vpn", "meals", "sso") if k not in answered]
    assert {r["status"] for r in state["results"].values()} == {"done"}
    assert "## Contents" in second.of("answer")[0].data["answer"]
    assert again.status_code == 422 and "no unfinished run" in again.json()["detail"]
    assert unforked(history)


def bob_key(world: dict[str, Any]) -> str:
    return str(world["bob"])


class Receiver(http.server.ThreadingHTTPServer):
    """A webhook receiver on loopback: answers the scripted statuses, then 200."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.calls: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.calls.append((dict(self.headers), body))
                self.send_response(receiver.statuses.pop(0) if receiver.statuses else 200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


def test_a_webhook_gets_the_signed_end_of_the_run_retried_until_it_is_taken(world) -> None:
    api, alice = world["api"].url, world["alice"]
    receiver = Receiver([503, 503])  # down twice, then up
    try:
        with httpx.Client(timeout=60) as c:
            thread = new_thread(c, api, alice)
            run = background(c, api, alice, thread, webhook=receiver.url)["run_id"]
            join(c, api, alice, thread, run)
            wait_until(
                lambda: len(receiver.calls) >= 3, timeout=20, what="the webhook's third delivery"
            )
            refused = [
                c.post(
                    f"{api}/threads/{thread}/runs",
                    json={**QUESTION, "stream": False, "webhook": url},
                    headers=auth(alice),
                )
                for url in ("http://10.1.2.3/hook", "http://localhost:9/hook", "ftp://x.example/")
            ]
    finally:
        receiver.shutdown()
        receiver.server_close()
    assert len(receiver.calls) == 3  # two failures retried, then delivered once
    headers, body = receiver.calls[-1]
    stamp, mac = dict(p.split("=", 1) for p in headers["X-Seekgraph-Signature"].split(",")).values()
    expected = hmac.new(WEBHOOK_SECRET.encode(), f"{stamp}.".encode() + body, hashlib.sha256)
    assert hmac.compare_digest(mac, expected.hexdigest())
    payload = json.loads(body)
    assert payload["run"]["run_id"] == run and payload["run"]["status"] == "success"
    assert payload["answer"] and payload["citations"]
    assert "webhook" not in payload["run"]
    assert [r.status_code for r in refused] == [422, 422, 422]
    assert "private" in refused[0].json()["detail"]


def test_the_langgraph_door_takes_a_webhook_for_a_background_run(world) -> None:
    from langgraph_sdk import get_sync_client

    receiver = Receiver([])
    sdk = get_sync_client(url=world["api"].url + "/langgraph", api_key=world["alice"])
    try:
        thread = sdk.threads.create()["thread_id"]
        run = sdk.runs.create(thread, "search", input=QUESTION, webhook=receiver.url)
        sdk.runs.join(thread, run["run_id"])
        wait_until(lambda: receiver.calls, timeout=20, what="the webhook's delivery")
        with pytest.raises(httpx.HTTPStatusError) as refused:
            sdk.runs.create(thread, "search", input=QUESTION, webhook="http://10.1.2.3/hook")
    finally:
        sdk.close()
        receiver.shutdown()
        receiver.server_close()
    assert len(receiver.calls) == 1
    assert json.loads(receiver.calls[0][1])["run"]["run_id"] == run["run_id"]
    assert refused.value.response.status_code == 422


def test_the_command_line_detaches_a_research_run_lists_and_cancels_runs(world) -> None:
    tmp = world["tmp"]
    plan = tmp / "plan.json"
    plan.write_text(json.dumps(RESEARCH["plan"]))
    env = {**os.environ, **{k: str(v) for k, v in world["env"].items()},
           "SEEKGRAPH_DATA_DIR": str(tmp / "cli-data")}  # fmt: skip
    seekgraph = str(Path(sys.executable).parent / "seekgraph")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([seekgraph, *args], env=env, capture_output=True, text=True,
                              timeout=120)  # fmt: skip

    queued = cli("research", "VPN, meals and SSO", "--user", "alice", "--plan", str(plan),
                 "--detach", "--json")  # fmt: skip
    assert queued.returncode == 0, queued.stderr
    ids = json.loads(queued.stdout)

    api, alice = world["api"].url, world["alice"]

    def ended(c: httpx.Client, thread: str, run: str) -> bool:
        """Waited on through the API (a command per poll would start a process each time)."""
        return record(c, api, alice, thread, run)["status"] not in ("pending", "running")

    def listed(thread: str) -> dict[str, Any]:
        [run] = json.loads(cli("runs", "list", thread, "--json").stdout)
        return dict(run)

    with httpx.Client(timeout=30) as c:
        wait_until(lambda: ended(c, ids["thread_id"], ids["run_id"]), timeout=60,
                   what="the detached run to end", interval=0.5)  # fmt: skip
        state = c.get(f"{api}/threads/{ids['thread_id']}/state",  # alice's, as the API shows it
                      headers=auth(alice)).json()["values"]  # fmt: skip
    run = listed(ids["thread_id"])
    assert run["run_id"] == ids["run_id"] and run["status"] == "success", run
    assert "## Contents" in state["answer"]
    second = json.loads(cli("research", "VPN, meals and SSO", "--user", "alice", "--plan",
                            str(plan), "--detach", "--json").stdout)  # fmt: skip
    stopped = cli("runs", "cancel", second["thread_id"], second["run_id"])
    assert stopped.returncode == 0, stopped.stderr
    with httpx.Client(timeout=30) as c:
        wait_until(lambda: ended(c, second["thread_id"], second["run_id"]), timeout=30,
                   what="the cancelled run to stop", interval=0.3)  # fmt: skip
    rec = listed(second["thread_id"])
    assert rec["status"] == "cancelled"
    again = cli("runs", "cancel", second["thread_id"], second["run_id"])
    assert again.returncode == 2 and "already ended (cancelled)" in again.stderr
    unknown = cli("runs", "list", "no-such-thread")
    assert unknown.returncode == 2 and "no runs recorded" in unknown.stderr


def test_a_run_cancelled_before_a_worker_took_it_never_runs_and_frees_its_thread(world) -> None:
    api, alice = world["api"].url, world["alice"]
    workers = list(world["workers"])
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, api, alice)
        for w in workers:  # no worker takes anything for now
            w.popen.send_signal(signal.SIGSTOP)
        try:
            waiting = background(c, api, alice, thread)
            stopped = cancel(c, api, alice, thread, waiting["run_id"])
            after = c.post(f"{api}/threads/{thread}/runs", json={**QUESTION, "stream": False},
                           headers=auth(alice))  # fmt: skip
        finally:
            for w in workers:
                w.popen.send_signal(signal.SIGCONT)
        done = join(c, api, alice, thread, after.json()["run_id"])["run"]
        never = record(c, api, alice, thread, waiting["run_id"])
    assert stopped.status_code == 202 and stopped.json()["status"] == "cancelled"
    assert after.status_code == 202, after.text  # the thread was free at once, not after 10 min
    assert done["status"] == "success"
    assert never["status"] == "cancelled" and never["executor"] == ""
