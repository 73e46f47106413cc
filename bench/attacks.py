"""The ownership campaign: the security review's attacks, replayed against live instances.

Part of ``bench.faults`` (``--only ownership``). bob holds a valid key and tries to reach
alice's thread (case aliasing on Redis, ``..`` through the forward path, the internal
stream), to take a server down with one request (10,000 sources, a 64 MB body before any
key), to lift a quota through ``update_state``, and to start more runs than one key may.
Each case records the status seen and whether any restricted text came back.
"""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from bench.fault_inputs import CANARIES
from tests.support.processes import auth, new_thread, script_model
from tests.support.sse_client import read

NIGHTJAR = {"question": "What did the Nightjar penetration test find?"}
BAD_IDS = ["..", "a%2F..%2Fb", "x" * 129, "a%0d%0ab", "a%00b", "caf%C3%A9"]


def _leaks(text: str) -> list[str]:
    return [m for m in CANARIES if m.lower() in text.lower()]


def _raw_status(base: str, head: bytes) -> tuple[int, float]:
    """Send a request head (and a little body) on a socket; the status and the seconds."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(head + b"{" * 65536)
        status = int(s.recv(64).split(b" ")[1])
    return status, round(time.monotonic() - started, 3)


def ownership(w: dict[str, Any]) -> dict[str, Any]:
    """Every attack of the review; ``held`` counts the cases refused without a leak."""
    a, b, alice, bob = w["a"].url, w["b"].url, w["alice"], w["bob"]
    cases: list[dict[str, Any]] = []

    def case(name: str, status: int, want: set[int], text: str = "", **extra: Any) -> None:
        leaked = _leaks(text)
        cases.append(
            {"case": name, "status": status, "held": status in want and not leaked, **extra}
            | ({"leaked": leaked} if leaked else {})
        )

    with httpx.Client(timeout=120) as c:
        script_model(w["model"])
        thread = new_thread(c, a, alice)
        read(c, "POST", f"{a}/threads/{thread}/runs", json=NIGHTJAR, headers=auth(alice))
        upper, lg_bob = thread.upper(), {"x-api-key": bob}
        r = c.post(f"{a}/langgraph/threads", json={"thread_id": upper}, headers=lg_bob)
        case("case alias: bob creates alice's id in upper case", r.status_code, {409, 422})
        for path in (f"/threads/{upper}/state", f"/threads/{upper}/history"):
            r = c.get(a + path, headers=auth(bob))
            case(f"case alias: GET {path.split('/')[-1]}", r.status_code, {404}, r.text)
        r = c.post(
            f"{a}/langgraph/threads/{upper}/state",
            json={"values": {"answer": "bob"}, "as_node": "remember"},
            headers=lg_bob,
        )
        case("case alias: update_state", r.status_code, {404}, r.text)
        for bad in BAD_IDS:
            for door, url in (
                ("native", f"{a}/threads/{bad}/state"),
                ("langgraph", f"{a}/langgraph/threads/{bad}"),
                ("internal", f"{a}/internal/threads/{bad}/stream"),
            ):
                r = c.get(url, headers={**auth(bob), **lg_bob, "X-Seekgraph-Internal": "x"})
                case(f"bad id {bad[:12]!r} on {door}", r.status_code, set(range(400, 500)), r.text)
        # a live run of alice's on a, followed through b by bob's id with `..`
        script_model(w["model"])
        live = new_thread(c, a, alice)
        first = read(
            c,
            "POST",
            f"{a}/threads/{live}/runs",
            json=NIGHTJAR,
            headers=auth(alice),
            until="token",
        )
        run_id = first.frames[0].id.split(":")[0] if first.frames else ""
        mine = new_thread(c, b, bob)
        r = c.get(f"{b}/threads/{mine}%2F..%2F{live}/stream", headers=auth(bob))
        case("forward: bob's id/../alice's live thread", r.status_code, {404, 422}, r.text)
        r = c.get(
            f"{a}/internal/threads/{live}/stream",
            params={"run_id": run_id, "owner": "bob"},
            headers={"X-Seekgraph-Internal": w["env"]["SEEKGRAPH_INTERNAL_TOKEN"]},
        )
        case("internal stream: the token with another owner", r.status_code, {404}, r.text)
        read(c, "GET", f"{a}/threads/{live}/stream", headers=auth(alice))  # let it finish
        # one request that fans out without bound
        target = new_thread(c, a, bob)
        started = time.monotonic()
        r = c.post(
            f"{a}/threads/{target}/runs",
            json={"question": "vpn?", "sources": ["kb"] * 10_000},
            headers=auth(bob),
        )
        refused_s = round(time.monotonic() - started, 3)
        health = c.get(f"{a}/healthz")
        case(
            "10,000 sources",
            r.status_code,
            {422},
            r.text,
            seconds=refused_s,
            healthz_seconds=round(health.elapsed.total_seconds(), 3),
        )
        status, seconds = _raw_status(
            a,
            b"POST /threads/x/runs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {64 * 1024 * 1024}\r\n\r\n".encode(),
        )
        case("64 MB body, no key", status, {413}, seconds=seconds)
        r = c.post(
            f"{a}/langgraph/threads/{thread}/state",
            json={"values": {"turns": [{"images": [{"sha256": "0" * 64, "bytes": -(10**12)}]}]}},
            headers={"x-api-key": alice},
        )
        case("update_state writes a negative image size", r.status_code, {422}, r.text)
        r = c.post(
            f"{a}/langgraph/threads/{thread}/runs/stream",
            json={"assistant_id": "search", "input": {"question": 42}},
            headers={"x-api-key": alice},
        )
        case("LangGraph door: a question that is a number", r.status_code, {422}, r.text)
        r = c.post(
            f"{a}/langgraph/threads/{thread}/state",
            json={"values": {"answer": "x"}, "as_node": "nope"},
            headers={"x-api-key": alice},
        )
        case("LangGraph door: unknown as_node", r.status_code, {422}, r.text)
        # 30 runs at once with one key: the key's live-run limit holds, the rest get 429
        script_model(w["model"])
        threads = [new_thread(c, a, bob) for _ in range(30)]

    def start(t: str) -> int:
        with (
            httpx.Client(timeout=120) as own,
            own.stream(
                "POST",
                f"{a}/threads/{t}/runs",
                json={"question": "How do I connect to the VPN?"},
                headers=auth(bob),
            ) as response,
        ):
            response.read()
            return response.status_code

    with ThreadPoolExecutor(30) as pool:
        statuses = list(pool.map(start, threads))
    accepted, limited = statuses.count(200), statuses.count(429)
    cases.append(
        {
            "case": "30 runs at once with one key",
            "accepted": accepted,
            "refused_429": limited,
            "held": limited > 0 and accepted + limited == 30,
        }
    )
    held = sum(1 for c_ in cases if c_["held"])
    return {"cases": cases, "held": f"{held}/{len(cases)}"}
