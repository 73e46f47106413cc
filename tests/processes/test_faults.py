"""Faults: bad input never gives a 500 or locks a thread; stopped runs resume; Redis lost
mid-run is told, and once restarted empty recovers; lock renewal survives a saturated event
loop; a paused lock holder that lost its lock writes nothing.

Real processes: a Redis of our own (it is killed and restarted here), the test model
server, app instances.
"""

from __future__ import annotations

import base64
import io
import json
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import redis

from seekgraph.server.auth import add_key_to_file
from tests.support.processes import (
    Proc,
    auth,
    free_port,
    llm_server_env,
    new_thread,
    script_model,
    start_app,
    start_model_server,
    start_redis,
    unforked,
)
from tests.support.sse_client import Stream, parse, read
from tests.support.waiting import wait_until

QUESTION = {"question": "How do I connect to the VPN from a new laptop?"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("faults")
    procs: list[Proc] = []
    try:
        port = free_port()
        redis_proc, redis_url = start_redis(tmp, port)
        model = start_model_server(tmp, delay=0.02, tokens=40)
        procs += [model]
        keys = tmp / "keys.json"
        env = llm_server_env(redis_url, model, keys)
        world = {
            "tmp": tmp,
            "redis": redis_proc,
            "redis_port": port,
            "redis_url": redis_url,
            "model": model,
            "alice": add_key_to_file(keys, "alice"),
            "env": env,
        }
        world["a"] = start_app(tmp, "fa", env)
        procs.append(world["a"])
        yield world
    finally:
        for p in reversed(procs):
            p.stop()
        world["redis"].stop()


def raw_get(base: str, path: str, headers: list[tuple[bytes, bytes]]) -> tuple[int, str]:
    """A GET with header bytes exactly as given (clients refuse to send some of them)."""
    host, port = base.removeprefix("http://").split(":")
    lines = [f"GET {path} HTTP/1.1".encode(), f"Host: {host}".encode(), b"Connection: close"]
    lines += [name + b": " + value for name, value in headers]
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"\r\n".join(lines) + b"\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode("utf-8", "replace")


def truncated_png() -> str:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 64), "teal").save(out, format="PNG")
    return base64.b64encode(out.getvalue()[:-40]).decode()


#: Bad request bodies and what the 422 must say to fix them.
BAD_BODIES = [
    (b"{not json", "not valid JSON at character 2"),
    (b'{"question": "vpn \\ud800 gateway?"}', "invalid character at position 5"),
    (json.dumps({}).encode(), "question"),
    (json.dumps({"question": "  "}).encode(), "question is empty"),
    (json.dumps({"question": "x" * 5000}).encode(), "limit is 4000"),
    (json.dumps({"question": "vpn?", "sources": ["wiki"]}).encode(), "unknown source 'wiki'"),
    (json.dumps({"question": "vpn?", "images": [base64.b64encode(b"this is not an image").decode()]}
                ).encode(), "not a PNG, JPEG, WebP or GIF"),
    (json.dumps({"question": "vpn?", "images": ["%%%"]}).encode(), "not valid base64"),
    (json.dumps({"question": "vpn?", "images": [base64.b64encode(
        b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()] * 7}).encode(), "at most 6"),
    (json.dumps({"question": "vpn?", "images": ["data:image/png;base64"]}).encode(),
     "data URL without a comma"),
]  # fmt: skip


def test_bad_input_is_a_4xx_that_says_what_to_fix_changes_nothing_and_locks_nothing(
    world,
) -> None:
    from bench.fault_inputs import bad_requests, raw_request

    a = world["a"].url
    key = auth(world["alice"])
    with httpx.Client(timeout=30) as c:
        thread = new_thread(c, a, world["alice"])
        script_model(world["model"])
        read(c, "POST", f"{a}/threads/{thread}/runs", json=QUESTION, headers=key)
        before = c.get(f"{a}/threads/{thread}/state", headers=key).json()
        png = (json.dumps({"question": "vpn?", "images": [truncated_png()]}).encode(),
               "looks like image/png but cannot be decoded")  # fmt: skip
        for body, message in [*BAD_BODIES, png]:
            r = c.post(
                f"{a}/threads/{thread}/runs",
                content=body,
                headers={**key, "content-type": "application/json"},
            )
            assert r.status_code == 422, (body[:40], r.status_code, r.text)
            assert message in r.json()["detail"], (message, r.text)
        unknown = c.post(f"{a}/threads/nope/runs", json=QUESTION, headers=key)
        assert unknown.status_code == 404 and "no thread nope" in unknown.json()["detail"]
        for lei in ["abc:\u00b2", "abc:" + "9" * 5000, "no-colon", "run:-1"]:
            r = c.get(f"{a}/threads/{thread}/stream", params={"last_event": lei}, headers=key)
            assert r.status_code == 422 and "Last-Event-ID must be" in r.json()["detail"], r.text
        status, body = raw_get(
            a,
            f"/threads/{thread}/stream",
            [
                (b"Authorization", key["Authorization"].encode()),
                (b"Last-Event-ID", "abc:²".encode()),
            ],
        )
        assert status == 422 and "Last-Event-ID must be" in body
        status, body = raw_get(
            a, f"/internal/threads/{thread}/stream", [(b"X-Seekgraph-Internal", "sécret".encode())]
        )
        assert status == 403
        # the fault campaign's corpus of malformed requests (bench.fault_inputs): never a 5xx
        answered = [(case["method"], case["path"][:60], raw_request(a, case, world["alice"]))
                    for case in bad_requests(thread)]  # fmt: skip
        assert not [r for r in answered if r[2] >= 500 or r[2] == 0], answered
        after = c.get(f"{a}/threads/{thread}/state", headers=key).json()
        assert after["checkpoint_id"] == before["checkpoint_id"]
        # nothing was left locked: the next good question runs at once
        script_model(world["model"])
        ok = read(c, "POST", f"{a}/threads/{thread}/runs", json=QUESTION, headers=key)
    assert ok.status == 200 and ok.of("end")[0].data["status"] == "done"


def test_reconnecting_to_a_finished_run_on_its_origin_ends_with_end(world) -> None:
    a = world["a"].url
    key = auth(world["alice"])
    with httpx.Client() as c:
        thread = new_thread(c, a, world["alice"])
        script_model(world["model"])
        first = read(c, "POST", f"{a}/threads/{thread}/runs", json=QUESTION, headers=key)
        again = read(c, "GET", f"{a}/threads/{thread}/stream", headers=key)
    assert [f.event for f in again.frames] == ["snapshot", "end"]
    assert again.frames[1].id == first.frames[-1].id  # the same end, not a new one
    assert again.frames[0].data["answer"] == first.of("answer")[0].data["answer"]


def answer_text(stream: Stream) -> str:
    text = ""
    for f in stream.frames:
        if f.event == "snapshot":
            text = f.data["answer"]
        elif f.event == "token":
            text += f.data["text"]
    return text


def test_an_interrupted_run_resumes_on_its_own_instance(world) -> None:
    a = world["a"].url
    key = auth(world["alice"])
    with httpx.Client() as c:
        thread = new_thread(c, a, world["alice"])
        script_model(world["model"], {}, {}, {}, {"fail_after": 3})  # the answer's stream drops
        first = read(c, "POST", f"{a}/threads/{thread}/runs", json=QUESTION, headers=key)
        assert first.of("end")[0].data["status"] == "interrupted"
        second = read(
            c,
            "GET",
            f"{a}/threads/{thread}/stream",
            headers={**key, "Last-Event-ID": first.last_id},
        )
        state = c.get(f"{a}/threads/{thread}/state", headers=key).json()
    assert second.frames[0].event == "snapshot"
    assert second.frames[0].seq > first.frames[-1].seq  # numbering goes on, never repeats
    assert second.of("end")[0].data["status"] == "done"
    answer = second.of("answer")[0].data["answer"]
    assert answer and answer_text(second).strip() == answer
    assert state["values"]["answer"] == answer and state["pending_tasks"] == 0


def test_redis_lost_mid_run_is_told_and_restarted_empty_recovers_without_a_server_restart(
    world,
) -> None:
    a = world["a"].url
    key = auth(world["alice"])
    with httpx.Client(timeout=60) as c:
        old = new_thread(c, a, world["alice"])
        script_model(world["model"])
        read(c, "POST", f"{a}/threads/{old}/runs", json=QUESTION, headers=key)
        thread = new_thread(c, a, world["alice"])
        script_model(world["model"], {}, {}, {}, {"stall_after": 1, "stall": 3})  # mid-answer
        with c.stream("POST", f"{a}/threads/{thread}/runs", json=QUESTION, headers=key) as live:
            lines = live.iter_lines()
            for line in lines:
                if line.startswith("event: token"):
                    break
            world["redis"].kill()
            rest = "\n".join(lines)
        assert "event: error" in rest and "unreachable" in rest  # the live client is told
        ready = c.get(f"{a}/readyz")
        assert ready.status_code == 503 and "redis" in ready.json()["detail"]
        refused = c.post(f"{a}/threads/{thread}/runs", json=QUESTION, headers=key)
        assert refused.status_code == 503 and "unreachable" in refused.json()["detail"]
        world["redis"], _ = start_redis(world["tmp"], world["redis_port"])  # empty
        ready = [c.get(f"{a}/readyz") for _ in range(3)]  # what a readiness probe sees
        assert ready[-1].status_code == 200, [r.text for r in ready]  # indexes recreated
        assert c.get(f"{a}/threads/{old}/history", headers=key).status_code == 404  # gone
        thread = new_thread(c, a, world["alice"])
        s = read(c, "POST", f"{a}/threads/{thread}/runs", json=QUESTION, headers=key)
        assert s.of("end")[0].data["status"] == "done"
        history = c.get(f"{a}/threads/{thread}/history", headers=key)
    assert history.status_code == 200 and history.json()[-1]["wrote"] == ["remember"]


def test_runs_with_a_short_lock_ttl_on_a_busy_machine_are_never_lost(world) -> None:
    """Lock renewal runs on its own thread: a saturated event loop cannot let it lapse."""
    env = {
        **{k: v for k, v in world["env"].items() if not k.startswith("SEEKGRAPH_LLM")},
        "SEEKGRAPH_LOCK_TTL_MS": 200,
    }
    busy = start_app(world["tmp"], "busy", env)
    key = auth(world["alice"])
    hogs = [  # a saturated machine: two processes spinning on the two cores
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)
    ]
    try:
        with httpx.Client(timeout=120) as c:
            threads = [new_thread(c, busy.url, world["alice"]) for _ in range(8)]

            def run(thread: str) -> str:
                with httpx.Client() as own:
                    s = read(own, "POST", f"{busy.url}/threads/{thread}/runs", json=QUESTION,
                             headers=key)  # fmt: skip
                return s.of("end")[0].data["status"]

            with ThreadPoolExecutor(8) as pool:
                statuses = list(pool.map(run, threads))
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        busy.stop()
    assert statuses == ["done"] * 8, statuses
    assert "lost the lock" not in busy.tail()


def read_until_node(c: httpx.Client, url: str, node: str, **kwargs) -> Stream:
    """Read a run's stream until the summary of ``node`` arrives, then drop the connection."""
    stream = Stream()
    with c.stream("POST", url, timeout=httpx.Timeout(60, connect=5), **kwargs) as response:
        for frame in parse(response.iter_lines(), stream):
            if frame.event == "node" and frame.data["node"] == node:
                break
    return stream


def lock_lapsed(world: dict, thread: str) -> bool:
    """The thread's lock and route are gone from Redis: another instance may take over."""
    client = redis.Redis.from_url(world["redis_url"])
    try:
        return not client.exists(f"seekgraph:lock:{thread}", f"seekgraph:route:{thread}")
    finally:
        client.close()


@pytest.mark.parametrize("paused_at", ["evaluate", "token"])
def test_a_paused_holder_that_lost_its_lock_writes_nothing_and_never_moves_the_state_back(
    world, paused_at: str
) -> None:
    """SIGSTOPped past its lock's TTL after ``evaluate`` or mid-answer, taken over, woken."""
    holder = start_app(world["tmp"], f"paused-{paused_at}", world["env"])
    a = world["a"].url
    key = auth(world["alice"])
    try:
        with httpx.Client(timeout=60) as c:
            thread = new_thread(c, holder.url, world["alice"])
            # the answer starts slowly: the holder is paused waiting on the model, with no
            # checkpoint write in flight
            script_model(world["model"], {}, {}, {}, {"sleep": 2})
            url = f"{holder.url}/threads/{thread}/runs"
            if paused_at == "token":
                first = read(c, "POST", url, json=QUESTION, headers=key, until="token")
            else:
                first = read_until_node(c, url, paused_at, json=QUESTION, headers=key)
            holder.popen.send_signal(signal.SIGSTOP)
            wait_until(lambda: lock_lapsed(world, thread), timeout=30, what="the lock to lapse")
            second = read(
                c,
                "GET",
                f"{a}/threads/{thread}/stream",
                headers={**key, "Last-Event-ID": first.last_id},
            )
            taken = c.get(f"{a}/threads/{thread}/state", headers=key).json()
            holder.popen.send_signal(signal.SIGCONT)
            wait_until(  # the woken holder tries to go on, and notices
                lambda: "lost the lock" in holder.tail(), timeout=30, what="the holder to stop"
            )
            later = c.get(f"{a}/threads/{thread}/state", headers=key).json()
            history = c.get(f"{a}/threads/{thread}/history", headers=key).json()
    finally:
        holder.popen.send_signal(signal.SIGCONT)
        holder.stop()
    assert second.of("end")[0].data["status"] == "done"
    assert taken["values"]["answer"] and taken["next"] == []
    assert later["checkpoint_id"] == taken["checkpoint_id"], "the state went backwards"
    assert unforked(history), "the history forked: the paused holder wrote after all"
    wrote = [n for h in history for n in h["wrote"]]
    assert wrote.count("check_answer") == 1
