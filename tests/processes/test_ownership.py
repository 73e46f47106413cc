"""No way around ownership: each finding of the security review, tried as an attacker would.

Real processes (Redis with its search module, the test model server, two seekgraph instances
started with ``seekgraph serve``); alice owns threads, bob holds a valid key and tries to
reach them, or to take a server down with one request.
"""

from __future__ import annotations

import base64
import io
import os
import random
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import httpx
import pytest
import redis

from seekgraph.server.auth import add_key_to_file
from tests.support import RESTRICTED_MARKERS
from tests.support.mcp_client import over_mcp
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

NIGHTJAR = {"question": "What did the Nightjar penetration test find?"}
BAD_IDS = ["..", "a..b%2F..%2Fc", "x" * 129, "a%0d%0aSet-Cookie:%20x=1", "a%00b", "caf%C3%A9"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("ownership")
    procs: list[Proc] = []
    try:
        redis_url = shared_redis(tmp, procs)
        model = start_model_server(tmp, delay=0.05, tokens=60, first_delay=0.3)
        procs.append(model)
        keys = tmp / "keys.json"
        env = llm_server_env(
            redis_url,
            model,
            keys,
            SEEKGRAPH_MAX_REQUEST_BYTES=8_000_000,
            SEEKGRAPH_MAX_THREAD_IMAGE_BYTES=3_000,
            SEEKGRAPH_HEADER_TIMEOUT_SECONDS=2,
            SEEKGRAPH_BODY_TIMEOUT_SECONDS=2,
        )
        w = {
            "tmp": tmp,
            "env": env,
            "keys": keys,
            "alice": add_key_to_file(keys, "alice"),
            "bob": add_key_to_file(keys, "bob"),
        }
        w["a"], w["b"] = start_together(
            procs, *(partial(start_app, tmp, name, env) for name in ("own-a", "own-b"))
        )
        with httpx.Client(timeout=120) as c:
            w["thread"] = new_thread(c, w["a"].url, w["alice"])
            done = read(
                c,
                "POST",
                f"{w['a'].url}/threads/{w['thread']}/runs",
                json=NIGHTJAR,
                headers=auth(w["alice"]),
            )
            assert done.of("end")[0].data["status"] == "done"
        yield w
    finally:
        for p in reversed(procs):
            p.stop()


def leaked(text: str) -> list[str]:
    return [m for m in RESTRICTED_MARKERS if m.lower() in text.lower()]


def test_the_same_id_in_upper_case_is_the_same_thread_and_still_alices(world) -> None:
    """Finding 1: RediSearch matches the checkpoint tag without case; ids are canonical."""
    a, thread = world["a"].url, world["thread"]
    upper = thread.upper()
    bob = {"x-api-key": world["bob"]}
    with httpx.Client(timeout=30) as c:
        # bob cannot create the upper-case id as his own thread …
        created = c.post(f"{a}/langgraph/threads", json={"thread_id": upper}, headers=bob)
        assert created.status_code == 422, created.text
        assert "chosen by the server" in created.json()["detail"]
        # … nor read or write alice's through it, on any endpoint
        reads = [
            c.get(f"{a}/threads/{upper}/state", headers=auth(world["bob"])),
            c.get(f"{a}/threads/{upper}/history", headers=auth(world["bob"])),
            c.get(f"{a}/langgraph/threads/{upper}/state", headers=bob),
            c.post(f"{a}/langgraph/threads/{upper}/history", json={}, headers=bob),
            c.post(
                f"{a}/langgraph/threads/{upper}/state",
                json={"values": {"answer": "bob was here"}, "as_node": "remember"},
                headers=bob,
            ),
        ]
        for r in reads:
            assert r.status_code == 404, (r.request.url, r.text)
            assert not leaked(r.text)
        # alice's own thread answers under either spelling, and bob wrote nothing into it
        mine = c.get(f"{a}/threads/{upper}/state", headers=auth(world["alice"]))
        assert mine.status_code == 200 and mine.json()["thread_id"] == thread
        assert leaked(mine.text)  # the finding was real: the restricted answer is there
        assert "bob was here" not in mine.text


def test_ids_that_are_not_ids_are_refused_on_every_door(world) -> None:
    """Finding 2: ``..``, ``/``, CR/LF, NUL, non-ASCII and overlong ids never reach a store."""
    a, key = world["a"].url, world["bob"]
    with httpx.Client(timeout=30) as c:
        for bad in BAD_IDS:
            raw = bad.replace("%0d%0a", "\r\n").replace("%00", "\x00")
            tries = [
                c.get(f"{a}/threads/{bad}/state", headers=auth(key)),
                c.get(f"{a}/threads/{bad}/stream", headers=auth(key)),
                c.get(f"{a}/langgraph/threads/{bad}", headers={"x-api-key": key}),
                c.post(
                    f"{a}/langgraph/threads",
                    json={"thread_id": raw},
                    headers={"x-api-key": key},
                ),
                c.post(
                    f"{a}/v1/chat/completions",
                    json={
                        "model": "seekgraph-search",
                        "messages": [{"role": "user", "content": "vpn?"}],
                        "thread_id": raw,
                    },
                    headers=auth(key),
                ),
                c.get(
                    f"{a}/internal/threads/{bad}/stream",
                    headers={"X-Seekgraph-Internal": "test-internal-secret"},
                ),
            ]
            for r in tries:
                assert 400 <= r.status_code < 500, (bad, r.request.url, r.status_code, r.text)
                assert "\r" not in r.text and "\x00" not in r.text


async def test_mcp_refuses_a_thread_id_that_is_not_one(world) -> None:
    async with over_mcp(world["a"].url, world["bob"]) as client:
        result = await client.call_tool(
            "ask", {"question": "vpn?", "thread_id": world["thread"].upper()}
        )
        traversal = await client.call_tool("ask", {"question": "vpn?", "thread_id": "x/../y"})
    assert result.is_error and f"no thread {world['thread']}" in result.content[0].text
    assert traversal.is_error and "not a thread id" in traversal.content[0].text


def test_a_forward_serves_only_the_run_and_user_it_was_asked_for(world) -> None:
    """Finding 2's second half: the origin checks the run and user the forward names."""
    a, b = world["a"].url, world["b"].url
    internal = {"X-Seekgraph-Internal": "test-internal-secret"}
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, a, world["alice"])
        first = read(
            c,
            "POST",
            f"{a}/threads/{thread}/runs",
            json=NIGHTJAR,
            headers=auth(world["alice"]),
            until="token",
        )
        run_id = first.frames[0].id.split(":")[0]
        # bob's own thread id with alice's behind `..`: refused before anything is looked up
        mine = new_thread(c, b, world["bob"])
        sneaky = c.get(f"{b}/threads/{mine}%2F..%2F{thread}/stream", headers=auth(world["bob"]))
        assert sneaky.status_code in (404, 422) and not leaked(sneaky.text)
        # the token alone is not enough: the live run must be the one named, of its user
        base = f"{a}/internal/threads/{thread}/stream"
        for params in (
            {},
            {"run_id": run_id, "owner": "bob"},
            {"run_id": "0" * 12, "owner": "alice"},
        ):
            r = c.get(base, params=params, headers=internal)
            assert r.status_code == 404 and not leaked(r.text), params
        followed = read(
            c,
            "GET",
            base,
            params={"run_id": run_id, "owner": "alice"},
            headers=internal,
            stop_after=1,
        )
        assert followed.status == 200 and followed.frames[0].event == "snapshot"
        # and alice's reconnect through the other instance is still forwarded to her run
        again = read(c, "GET", f"{b}/threads/{thread}/stream", headers=auth(world["alice"]))
        assert again.frames[0].id.startswith(run_id + ":")
        assert again.of("end")[0].data["status"] == "done"


def test_ten_thousand_sources_are_refused_at_once_and_the_server_stays_up(world) -> None:
    """Finding 3: a request that would fan out without bound is refused before any work."""
    a, key = world["a"].url, world["bob"]
    with httpx.Client(timeout=30) as c:
        thread = new_thread(c, a, key)
        started = time.monotonic()
        r = c.post(
            f"{a}/threads/{thread}/runs",
            json={"question": "vpn?", "sources": ["kb"] * 10_000},
            headers=auth(key),
        )
        refused_in = time.monotonic() - started
        assert r.status_code == 422 and "at most 32" in r.text
        health = c.get(f"{a}/healthz")
        assert health.status_code == 200 and health.elapsed.total_seconds() < 1
        openai = c.post(
            f"{a}/v1/chat/completions",
            json={
                "model": "seekgraph-search",
                "messages": [{"role": "user", "content": "vpn?"}],
                "sources": ["kb"] * 10_000,
            },
            headers=auth(key),
        )
        assert openai.status_code == 422
        # a name repeated is searched once: the run's sources are the distinct names
        ok = read(
            c,
            "POST",
            f"{a}/threads/{thread}/runs",
            json={"question": "How do I connect to the VPN?", "sources": ["kb", "kb", "kb"]},
            headers=auth(key),
        )
        assert ok.of("end")[0].data["status"] == "done"
        searched = {f.data.get("source") for f in ok.of("sources")} - {None}
        assert searched <= {"kb"}
    assert refused_in < 2.0


async def test_mcp_search_refuses_thousands_of_sources(world) -> None:
    async with over_mcp(world["a"].url, world["bob"]) as client:
        result = await client.call_tool("search", {"query": "vpn", "sources": ["kb"] * 2000})
    assert result.is_error and "32" in result.content[0].text


def test_a_huge_unauthenticated_body_is_refused_before_it_is_read(world) -> None:
    """Finding 4: 413 from the declared length, or while a chunked body is being read."""
    a = world["a"].url
    declared = 64 * 1024 * 1024
    with socket.create_connection(("127.0.0.1", int(a.rsplit(":", 1)[1])), timeout=5) as s:
        started = time.monotonic()
        s.sendall(
            b"POST /threads/x/runs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {declared}\r\n\r\n".encode()
            + b"{" * 65536
        )
        status = s.recv(64).split(b" ")[1]
        assert status == b"413" and time.monotonic() - started < 1.0

    def chunks() -> Iterator[bytes]:
        for _ in range(64):
            yield b" " * (1024 * 1024)

    with httpx.Client(timeout=30) as c:
        started = time.monotonic()  # without a key: refused before the body is read at all
        r = c.post(f"{a}/threads/x/runs", content=chunks())
        assert r.status_code == 401 and time.monotonic() - started < 5.0
        started = time.monotonic()  # with one: refused once the body passes the bound
        r = c.post(f"{a}/threads/x/runs", content=chunks(), headers=auth(world["alice"]))
        assert r.status_code == 413 and "larger than 8000000 bytes" in r.text
        assert time.monotonic() - started < 5.0


def test_a_request_head_sent_slowly_is_cut_off(world) -> None:
    a = world["a"].url
    port = int(a.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        started = time.monotonic()
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
        try:
            while True:
                s.sendall(b"X-Slow: 1\r\n")
                time.sleep(0.3)  # the scenario: a client that sends its head slowly
                if time.monotonic() - started > 8:
                    break
        except OSError:
            pass  # the server closed the connection
        closed_after = time.monotonic() - started
    assert closed_after < 6, "a slow request head was not timed out"
    assert httpx.get(f"{a}/healthz").status_code == 200


def test_a_body_that_stops_arriving_gets_408(world) -> None:
    port = int(world["a"].url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        started = time.monotonic()
        s.sendall(
            b"POST /threads/x/runs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {world['alice']}\r\n".encode()  # (no key: 401 at once)
            + b"Content-Length: 100\r\n\r\n"
            + b'{"question": '
        )
        answer = s.recv(4096)
        waited = time.monotonic() - started
        while b"stopped arriving" not in answer and (more := s.recv(4096)):
            answer += more  # the body may come in a packet of its own
    assert answer.split(b" ")[1] == b"408" and b"stopped arriving" in answer
    assert 1.5 < waited < 5


def test_a_client_written_image_size_cannot_lift_the_quota(world) -> None:
    """Finding 5: state a client writes is not what quotas are counted from."""
    a, key = world["a"].url, world["alice"]
    lg = {"x-api-key": key}
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, a, key)
        image = png(2000)
        first = read(
            c,
            "POST",
            f"{a}/threads/{thread}/runs",
            json={"question": "What is in this picture?", "images": [image]},
            headers=auth(key),
        )
        assert first.of("end")[0].data["status"] == "done"
        forged = c.post(
            f"{a}/langgraph/threads/{thread}/state",
            json={
                "values": {
                    "turns": [
                        {
                            "question": "q",
                            "answer": "a",
                            "mode": "x",
                            "images": [{"sha256": "0" * 64, "bytes": -(10**12)}],
                        }
                    ]
                },
                "as_node": "remember",
            },
            headers=lg,
        )
        assert forged.status_code == 422 and "only answer may be edited" in forged.text
        second = c.post(
            f"{a}/threads/{thread}/runs",
            json={"question": "And this one?", "images": [png(1500, seed=1)]},
            headers=auth(key),
        )
        assert second.status_code == 422 and "limit is 3000" in second.text


def test_the_langgraph_door_answers_bad_input_with_4xx(world) -> None:
    a, lg = world["a"].url, {"x-api-key": world["alice"]}
    with httpx.Client(timeout=30) as c:
        thread = c.post(f"{a}/langgraph/threads", json={}, headers=lg).json()["thread_id"]
        bad_run = c.post(
            f"{a}/langgraph/threads/{thread}/runs/stream",
            json={"assistant_id": "search", "input": {"question": 42, "max_rounds": 1000}},
            headers=lg,
        )
        assert bad_run.status_code == 422 and "max_rounds" in bad_run.text
        bad_node = c.post(
            f"{a}/langgraph/threads/{world['thread']}/state",
            json={"values": {"answer": "x"}, "as_node": "no_such_node"},
            headers=lg,
        )
        assert bad_node.status_code == 422 and "no node 'no_such_node'" in bad_node.text
        # an id the caller does not own answers alike whether or not it exists
        taken = c.post(
            f"{a}/langgraph/threads",
            json={"thread_id": world["thread"]},
            headers={"x-api-key": world["bob"]},
        )
        free = c.post(
            f"{a}/langgraph/threads",
            json={"thread_id": "not-taken-by-anyone"},
            headers={"x-api-key": world["bob"]},
        )
        assert (taken.status_code, taken.json()) == (free.status_code, free.json())
        own = c.post(
            f"{a}/langgraph/threads",
            json={"thread_id": world["thread"].upper(), "if_exists": "do_nothing"},
            headers=lg,
        )
        assert own.status_code == 200 and own.json()["thread_id"] == world["thread"]


def test_the_page_cannot_be_framed_and_runs_only_its_own_scripts(world) -> None:
    r = httpx.get(world["a"].url + "/")
    assert r.headers["x-frame-options"] == "DENY"
    csp = r.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp


def test_the_keys_file_is_readable_by_its_owner_only(world) -> None:
    assert stat.S_IMODE(os.stat(world["keys"]).st_mode) == 0o600


@pytest.fixture(scope="module")
def one_live_run(world) -> Iterator[Proc]:
    """A third instance on the same Redis that lets a key have one live run at a time."""
    env = {**world["env"], "SEEKGRAPH_MAX_LIVE_RUNS_PER_KEY": 1}
    app = start_app(world["tmp"], "one-live-run", env)
    yield app
    app.stop()


def test_a_user_past_the_live_runs_allowed_gets_429(world, one_live_run: Proc) -> None:
    """Counted in Redis, so across instances: the limit is the user's, not the process's."""
    app = one_live_run
    with httpx.Client(timeout=60) as c:
        t1 = new_thread(c, app.url, world["alice"])
        t2 = new_thread(c, app.url, world["alice"])
        with c.stream(
            "POST", f"{app.url}/threads/{t1}/runs", json=NIGHTJAR, headers=auth(world["alice"])
        ) as first:
            assert first.status_code == 200
            second = c.post(
                f"{app.url}/threads/{t2}/runs", json=NIGHTJAR, headers=auth(world["alice"])
            )
            assert second.status_code == 429 and "live already" in second.text
            assert int(second.headers["retry-after"]) >= 1
            bobs = c.post(
                f"{app.url}/threads/{new_thread(c, app.url, world['bob'])}/runs",
                json={"question": "How do I connect to the VPN?"},
                headers=auth(world["bob"]),
            )
            assert bobs.status_code == 200  # bob is not held back by alice's runs
            first.read()
        # the slot is given back when the run ends
        again = read(
            c,
            "POST",
            f"{app.url}/threads/{t2}/runs",
            json=NIGHTJAR,
            headers=auth(world["alice"]),
        )
        assert again.status == 200


def test_a_user_over_the_request_rate_gets_429(world, tmp_path: Path) -> None:
    env = {k: v for k, v in world["env"].items() if k != "SEEKGRAPH_REDIS_URL"}
    app = start_app(tmp_path, "rate", {**env, "SEEKGRAPH_RATE_LIMIT_PER_MINUTE": 5})
    try:
        with httpx.Client(timeout=60) as c:
            statuses = [
                c.get(f"{app.url}/me", headers=auth(world["alice"])).status_code for _ in range(6)
            ]
            refused = c.get(f"{app.url}/me", headers=auth(world["alice"]))
            bobs = c.get(f"{app.url}/me", headers=auth(world["bob"]))
    finally:
        app.stop()
    assert statuses[:5] == [200] * 5 and statuses[5] == 429
    assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= 60
    assert bobs.status_code == 200


def test_sigterm_stops_a_server_with_live_runs_within_its_grace(world, tmp_path: Path) -> None:
    env = {**world["env"], "SEEKGRAPH_SHUTDOWN_GRACE_SECONDS": 3}
    app = start_app(tmp_path, "term", env)
    with httpx.Client(timeout=60) as c:
        thread = new_thread(c, app.url, world["alice"])
        with c.stream(
            "POST", f"{app.url}/threads/{thread}/runs", json=NIGHTJAR, headers=auth(world["alice"])
        ) as live:
            assert live.status_code == 200
            started = time.monotonic()
            app.popen.send_signal(signal.SIGTERM)
            try:
                app.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                app.stop()
                pytest.fail("the server did not stop within 15 s of SIGTERM")
    stopped_in = time.monotonic() - started
    app.stop()  # closes its log
    assert stopped_in < 3 + 5


def test_indexing_skips_links_to_files_outside_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "policy.md").write_text("# Policy\n\nThe travel policy caps hotels.\n")
    secret = tmp_path / "outside-secret.md"
    secret.write_text("# Secret\n\nroot:x:0:0 the password file.\n")
    (folder / "passwd.md").symlink_to(secret)
    (folder / "alias.md").symlink_to(folder / "policy.md")  # inside: followed
    env = {**os.environ, "SEEKGRAPH_DATA_DIR": str(tmp_path / "data")}
    out = subprocess.run(
        [
            str(Path(sys.executable).parent / "seekgraph"),
            "index",
            str(folder),
            "--source",
            "linked",
            "--kind",
            "docs",
            "--acl",
            "group:everyone",
        ],  # fmt: skip
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert (
        "passwd.md: a link to a file outside the indexed folder; skipped" in out.stderr + out.stdout
    )
    assert " 2 documents indexed" in out.stdout
    assert "root:x:0:0" not in out.stdout + out.stderr


def png(size: int, seed: int = 0) -> str:
    """A real PNG of about ``size`` bytes (noise does not compress)."""
    from PIL import Image

    side = max(8, int((size / 3) ** 0.5))
    data = random.Random(seed).randbytes(side * side * 3)
    buffer = io.BytesIO()
    Image.frombytes("RGB", (side, side), data).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_a_document_url_that_is_not_a_link_never_reaches_a_client(tmp_path: Path) -> None:
    from seekgraph.sources.ingestion.ingest import read_folder

    (tmp_path / "evil.md").write_text(
        "---\ntitle: Evil\nurl: javascript:alert(document.cookie)\n---\nClick me.\n"
    )
    (tmp_path / "good.md").write_text(
        "---\ntitle: Good\nurl: https://wiki.example.com/good\n---\nA real link.\n"
    )
    read = read_folder(tmp_path, "docs", "docs", ["group:everyone"])
    urls = {d.title: d.url for d in read.documents}
    assert urls == {"Evil": None, "Good": "https://wiki.example.com/good"}


def test_a_repeated_source_is_searched_once_and_a_long_list_is_refused() -> None:
    from seekgraph.graph.api import MAX_SOURCES, UnknownSourceError
    from seekgraph.sources.indexes.memory import InMemorySource
    from seekgraph.sources.registry import SourceRegistry

    registry = SourceRegistry(
        [InMemorySource("kb", "kb", []), InMemorySource("chat", "messages", [])]
    )
    assert [s.name for s in registry.select(["kb", "chat", "kb"] * 1000)] == ["kb", "chat"]
    with pytest.raises(UnknownSourceError, match=f"at most {MAX_SOURCES}"):
        registry.select([f"s{i}" for i in range(MAX_SOURCES + 1)])


def lock_held(world: dict, thread: str) -> bool:
    client = redis.Redis.from_url(world["env"]["SEEKGRAPH_REDIS_URL"])
    try:
        return bool(client.exists(f"seekgraph:lock:{thread}"))
    finally:
        client.close()


def test_the_runs_of_a_dead_instance_stop_counting_once_their_locks_lapse(
    world, one_live_run: Proc, tmp_path: Path
) -> None:
    env = {**world["env"], "SEEKGRAPH_MAX_LIVE_RUNS_PER_KEY": 1}
    doomed = start_app(tmp_path, "doomed", env)
    other = one_live_run  # the same limit, on the same Redis
    try:
        with httpx.Client(timeout=60) as c:
            t1 = new_thread(c, doomed.url, world["alice"])
            t2 = new_thread(c, other.url, world["alice"])
            first = read(
                c,
                "POST",
                f"{doomed.url}/threads/{t1}/runs",
                json=NIGHTJAR,
                headers=auth(world["alice"]),
                until="token",
            )
            assert first.status == 200
            doomed.kill()  # its run never says it ended
            refused = c.post(
                f"{other.url}/threads/{t2}/runs", json=NIGHTJAR, headers=auth(world["alice"])
            )
            assert refused.status_code == 429
            wait_until(  # the dead run's lock lapses (the lock TTL of these instances)
                lambda: not lock_held(world, t1), timeout=30, what="the dead run's lock to lapse"
            )
            again = read(
                c,
                "POST",
                f"{other.url}/threads/{t2}/runs",
                json=NIGHTJAR,
                headers=auth(world["alice"]),
            )
            assert again.status == 200 and again.of("end")[0].data["status"] == "done"
    finally:
        doomed.stop()
