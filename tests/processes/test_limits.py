"""Limits that hold: one key cannot exhaust two instances on one Redis, whatever door it uses.

Two ``seekgraph serve`` instances, each with its worker (one run at a time), share a real
Redis and answer with the scripted test model, slow enough (about four seconds a run) that
runs overlap. Each test uses keys of its own, so one test's limits do not touch another's.
"""

from __future__ import annotations

import base64
import socket
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from seekgraph.server.auth import add_key_to_file
from tests.processes.test_server import QUESTION
from tests.support.processes import (
    Proc,
    auth,
    llm_server_env,
    new_thread,
    shared_redis,
    start_app,
    start_model_server,
    start_together,
)
from tests.support.sse_client import read
from tests.support.waiting import wait_until

LIVE_LIMIT = 2
WAITING_PER_THREAD = 2
REQUEST_TIMEOUT = 4


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("limits")
    procs: list[Proc] = []
    try:
        redis_url = shared_redis(tmp, procs)
        model = start_model_server(tmp, delay=0.05, tokens=60, first_delay=1.0)
        procs.append(model)
        keys = tmp / "keys.json"
        env = llm_server_env(
            redis_url,
            model,
            keys,
            SEEKGRAPH_QUEUE=f"test-limits-{uuid.uuid4().hex[:8]}",
            SEEKGRAPH_WORKER_CONCURRENCY=1,
            SEEKGRAPH_MAX_LIVE_RUNS_PER_KEY=LIVE_LIMIT,
            SEEKGRAPH_MAX_WAITING_RUNS_PER_THREAD=WAITING_PER_THREAD,
            SEEKGRAPH_REQUEST_TIMEOUT_SECONDS=REQUEST_TIMEOUT,
        )
        world: dict[str, Any] = {"tmp": tmp, "env": env, "keys": keys}
        world["a"], world["b"] = start_together(
            procs, *(partial(start_app, tmp, name, env) for name in ("a", "b"))
        )
        yield world
    finally:
        for p in reversed(procs):
            p.stop()


def new_key(world: dict[str, Any], user: str = "alice") -> str:
    """A key of its own for one test (limits are counted per key)."""
    return add_key_to_file(world["keys"], user)


def record(c: httpx.Client, base: str, key: str, thread: str, run: str) -> dict[str, Any]:
    r = c.get(f"{base}/threads/{thread}/runs/{run}", headers=auth(key))
    assert r.status_code == 200, r.text
    return dict(r.json())


def until(condition: Any, timeout: float, what: str) -> Any:
    """``condition()`` once it is true; fails after ``timeout`` seconds."""
    return wait_until(condition, timeout=timeout, what=what)


def port_of(proc: Proc) -> int:
    return int(proc.url.rsplit(":", 1)[1])


def raw_request(proc: Proc, head: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port_of(proc)), timeout=10)
    sock.sendall(head.encode())
    return sock


def response_within(sock: socket.socket, seconds: float) -> str:
    """The response (head and body) as far as it came in time; '' when none came."""
    deadline, got = time.monotonic() + seconds, b""
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            part = sock.recv(65536)
        except (TimeoutError, ConnectionError):
            break
        got += part
        head, _, body = got.partition(b"\r\n\r\n")
        length = [
            line for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")
        ]
        if not part or (length and len(body) >= int(length[0].split(b":")[1])):
            break
    return got.decode("latin-1")


# 1 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/threads/t1/runs", "/v1/chat/completions", "/langgraph/threads/t1/runs/wait", "/mcp"],
)
def test_a_body_with_an_unknown_key_is_refused_before_it_is_read(world, path: str) -> None:
    """40 MB announced, 64 KB sent: 401 at once, on every door (not after reading the body)."""
    sock = raw_request(
        world["a"],
        f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sg_not_a_real_key\r\n"
        "Content-Type: application/json\r\nContent-Length: 40000000\r\n\r\n",
    )
    try:
        started = time.monotonic()
        sock.sendall(b"[" + b"{}," * 20_000)
        answer = response_within(sock, 3.0)
        took = time.monotonic() - started
    finally:
        sock.close()
    assert answer.startswith("HTTP/1.1 401"), f"{path}: {answer[:200]!r} after {took:.1f} s"
    assert "unknown API key" in answer


@contextmanager
def health_probed(url: str) -> Iterator[list[float]]:
    """Another client's ``/healthz`` timed every 50 ms while the block runs.

    The block starts once the first check is answered, so a request refused in a few
    milliseconds still has checks to judge (the list is never empty).
    """
    health: list[float] = []
    done, answered = threading.Event(), threading.Event()

    def probe() -> None:
        with httpx.Client(timeout=30) as own:
            while True:
                started = time.monotonic()
                own.get(f"{url}/healthz")
                health.append(time.monotonic() - started)
                answered.set()
                if done.wait(0.05):
                    return

    prober = threading.Thread(target=probe)
    prober.start()
    answered.wait(30)
    try:
        yield health
    finally:
        done.set()
        prober.join()
    if not health:
        raise AssertionError("the server never answered a health check")


def test_a_known_keys_body_of_tiny_objects_is_refused_before_it_is_parsed(world) -> None:
    """15 MB of ``[{},{},…]`` with a valid key: 413 naming the bound, while another client's
    health checks are answered (it is not parsed on the event loop)."""
    a, key = world["a"].url, new_key(world)
    body = b"[" + b"{}," * 5_000_000 + b"{}]"
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, a, key)
        with health_probed(a) as health:
            r = c.post(f"{a}/threads/{thread}/runs", content=body,
                       headers={**auth(key), "Content-Type": "application/json"})  # fmt: skip
    assert r.status_code == 413, r.text[:300]
    assert "SEEKGRAPH_MAX_JSON_CONTAINERS" in r.json()["detail"]
    assert max(health) < 1.0, health


# 2 -------------------------------------------------------------------------------------


def test_continue_claims_a_live_slot_like_a_new_run(world) -> None:
    """Runs stopped half-way, then continued at once: no more live than the key's limit."""
    a, key = world["a"].url, new_key(world)
    with httpx.Client(timeout=60) as c:
        threads = []
        for _ in range(LIVE_LIMIT + 2):
            thread = new_thread(c, a, key)
            first = read(c, "POST", f"{a}/threads/{thread}/runs", json=QUESTION,
                         headers=auth(key), until="node")  # fmt: skip
            run = first.frames[0].id.split(":")[0]
            stopped = c.post(f"{a}/threads/{thread}/runs/{run}/cancel",
                             params={"wait": True}, headers=auth(key)).json()  # fmt: skip
            assert stopped["status"] == "cancelled", stopped
            threads.append(thread)
        answers: list[httpx.Response] = []

        def go(thread: str) -> None:
            with httpx.Client(timeout=60) as own:
                answers.append(own.post(f"{a}/threads/{thread}/continue",
                                        json={"stream": False}, headers=auth(key)))  # fmt: skip

        workers = [threading.Thread(target=go, args=(t,)) for t in threads]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        accepted = [r for r in answers if r.status_code == 202]
        refused = [r for r in answers if r.status_code == 429]
        for r in accepted:  # leave nothing running for the next test
            run = r.json()
            c.post(f"{a}/threads/{run['thread_id']}/runs/{run['run_id']}/join",
                   headers=auth(key), timeout=120)  # fmt: skip
    # two more than the limit, all at once: at least one is refused (on a loaded machine a
    # continued run may end, and free its slot, before the last request is admitted)
    assert LIVE_LIMIT <= len(accepted) < LIVE_LIMIT + 2, [r.text for r in answers]
    assert len(accepted) + len(refused) == LIVE_LIMIT + 2
    assert "SEEKGRAPH_MAX_LIVE_RUNS_PER_KEY" in refused[0].text


# 3 -------------------------------------------------------------------------------------


def test_a_queue_on_one_thread_is_bounded_and_holds_no_worker(world) -> None:
    """One key's runs enqueued behind its run: the waiting ones are bounded, and another
    user's background run starts while they wait (they hold no worker's slot)."""
    a, b = world["a"].url, world["b"].url
    key, other = new_key(world), new_key(world, "bob")
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, a, key)
        body = {**QUESTION, "stream": False}
        first = c.post(f"{a}/threads/{thread}/runs", json=body, headers=auth(key)).json()
        until(lambda: record(c, a, key, thread, first["run_id"])["status"] == "running", 30,
              "the first run runs")  # fmt: skip
        queued = [
            c.post(f"{(a, b)[i % 2]}/threads/{thread}/runs",
                   json={**body, "multitask_strategy": "enqueue"}, headers=auth(key))
            for i in range(WAITING_PER_THREAD + 1)
        ]  # fmt: skip
        bobs_thread = new_thread(c, b, other)
        bobs = c.post(f"{b}/threads/{bobs_thread}/runs", json=body, headers=auth(other))
        assert bobs.status_code == 202, bobs.text
        bobs_run = bobs.json()["run_id"]
        until(lambda: record(c, b, other, bobs_thread, bobs_run)["status"] != "pending", 20,
              "bob's run starts")  # fmt: skip
        first_then = record(c, a, key, thread, first["run_id"])["status"]
        for r in [first, *[q.json() for q in queued if q.status_code == 202]]:
            c.post(f"{a}/threads/{thread}/runs/{r['run_id']}/join", headers=auth(key),
                   timeout=120)  # fmt: skip
        c.post(f"{b}/threads/{bobs_thread}/runs/{bobs_run}/join", headers=auth(other),
               timeout=120)  # fmt: skip
    codes = [q.status_code for q in queued]
    assert codes == [202] * WAITING_PER_THREAD + [429], [q.text for q in queued]
    assert "SEEKGRAPH_MAX_WAITING_RUNS_PER_THREAD" in queued[-1].text
    assert first_then == "running"  # bob did not wait for alice's queue to drain


# 4 -------------------------------------------------------------------------------------


def png(width: int, height: int) -> bytes:
    """A valid, all-transparent RGBA PNG of ``width`` × ``height`` (small: it compresses)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" * (1 + 4 * width)
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


def test_an_image_with_too_many_pixels_is_refused_before_it_is_decoded(world) -> None:
    """A small PNG of 9,000 × 9,000 pixels (324 MB decoded): 422 naming the bound, fast,
    and another client's health check is answered meanwhile."""
    a, key = world["a"].url, new_key(world)
    image = base64.b64encode(png(9000, 9000)).decode()
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, a, key)
        with health_probed(a) as health:
            started = time.monotonic()
            r = c.post(f"{a}/threads/{thread}/runs", headers=auth(key),
                       json={**QUESTION, "stream": False, "images": [image] * 3})  # fmt: skip
            took = time.monotonic() - started
    assert r.status_code == 422, r.text
    assert "SEEKGRAPH_MAX_IMAGE_PIXELS_PER_REQUEST" in r.json()["detail"]
    assert took < 3.0
    assert max(health) < 1.0, health


# 5 -------------------------------------------------------------------------------------


def test_a_trickling_body_is_cut_off_at_the_request_deadline(world) -> None:
    """A byte a second, with a valid key: answered 408 (and closed) past the whole request's
    deadline, though no single pause reaches the body timeout (30 s)."""
    key = new_key(world)
    with httpx.Client(timeout=30) as c:
        thread = new_thread(c, world["a"].url, key)
    sock = raw_request(
        world["a"],
        f"POST /threads/{thread}/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n",
    )
    started, answer = time.monotonic(), ""
    try:
        while time.monotonic() - started < REQUEST_TIMEOUT + 8:
            try:
                sock.sendall(b" ")
            except OSError:
                break
            answer = response_within(sock, 1.0)
            if answer:
                break
        took = time.monotonic() - started
    finally:
        sock.close()
    assert answer.startswith("HTTP/1.1 408"), f"{answer[:200]!r} after {took:.1f} s"
    assert "SEEKGRAPH_REQUEST_TIMEOUT_SECONDS" in answer
    assert took < REQUEST_TIMEOUT + 3


def test_connections_past_the_bound_are_refused(world, tmp_path: Path) -> None:
    """With SEEKGRAPH_MAX_CONNECTIONS=4, four idle connections leave no room for a fifth."""
    app = start_app(tmp_path, "few", {**world["env"], "SEEKGRAPH_MAX_CONNECTIONS": 4})
    idle = []
    try:
        for _ in range(4):
            idle.append(socket.create_connection(("127.0.0.1", port_of(app)), timeout=5))
        # (a connection is counted once the server has accepted it)
        r = until(lambda: (h := httpx.get(f"{app.url}/healthz", timeout=5)).status_code == 503
                  and h, 5, "a fifth connection is refused")  # fmt: skip
    finally:
        for s in idle:
            s.close()
        app.stop()
    assert r.status_code == 503
