"""Operating it: traces to an OTLP collector, /metrics, the audit trail, limits and cost.

Real processes: Redis, the test model server (it reports token usage), two seekgraph
instances started with ``seekgraph serve``, and an OTLP/HTTP collector on loopback that
decodes what it receives with OpenTelemetry's own protobuf messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from prometheus_client.parser import text_string_to_metric_families

from seekgraph.server.auth import add_key_to_file
from tests.support.mcp_client import over_mcp
from tests.support.processes import (
    Proc,
    auth,
    free_port,
    llm_server_env,
    new_thread,
    shared_redis,
    start_app,
    start_model_server,
)
from tests.support.sse_client import read
from tests.support.waiting import wait_until

VPN = {"question": "How do I connect to the VPN from a new laptop?"}
NIGHTJAR = {"question": "What did the Nightjar penetration test find?"}
OPERATOR = {"Authorization": "Bearer test-internal-secret"}


class Collector(ThreadingHTTPServer):
    """An OTLP/HTTP trace collector: every span it received, decoded."""

    spans: list[Any]


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                self.server.spans.extend(scope.spans)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("operations")
    procs: list[Proc] = []
    collector = Collector(("127.0.0.1", free_port()), _Handler)
    collector.spans = []
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        redis_url = shared_redis(tmp, procs)
        model = start_model_server(tmp, delay=0.01, tokens=30)
        procs.append(model)
        keys = tmp / "keys.json"
        env = llm_server_env(
            redis_url,
            model,
            keys,
            SEEKGRAPH_MODEL_PRICES=json.dumps({"test-model": 2.0}),
            OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{collector.server_port}",
            OTEL_BSP_SCHEDULE_DELAY=100,
        )
        w = {
            "tmp": tmp,
            "env": env,
            "redis_url": redis_url,
            "collector": collector,
            "keys": keys,
            "alice": add_key_to_file(keys, "alice"),
            "bob": add_key_to_file(keys, "bob"),
        }
        w["a"] = start_app(tmp, "ops-a", env)
        procs.append(w["a"])
        yield w
    finally:
        collector.shutdown()
        collector.server_close()
        for p in reversed(procs):
            p.stop()


def ask(w: dict, user: str, body: dict) -> Any:
    with httpx.Client(timeout=120) as c:
        thread = new_thread(c, w["a"].url, w[user])
        s = read(c, "POST", f"{w['a'].url}/threads/{thread}/runs", json=body, headers=auth(w[user]))
    assert s.of("end")[0].data["status"] == "done", s.frames[-3:]
    return thread, s


def test_a_run_is_one_trace_with_a_span_per_node_source_and_model_call(world) -> None:
    _, s = ask(world, "alice", VPN)
    run_id = s.frames[0].id.split(":")[0]
    trace_id = int(run_id, 16).to_bytes(16, "big")

    def exported() -> list[Any] | None:
        spans = [x for x in world["collector"].spans if x.trace_id == trace_id]
        return spans if any(x.name == "seekgraph.run" for x in spans) else None

    spans = wait_until(exported, timeout=10, what="the run's trace exported")
    names = [x.name for x in spans]
    assert names.count("seekgraph.run") == 1
    for node in ("prepare", "expand_query", "search_source", "filter_results", "integrate"):
        assert node in names, names
    ids = {x.span_id for x in spans}
    root = next(x for x in spans if x.name == "seekgraph.run")
    assert all(x.parent_span_id in ids for x in spans if x is not root)  # one tree
    attributes = {
        x.name: {a.key: a.value for a in x.attributes} for x in spans if x.name != "model_call"
    }
    searches = [x for x in spans if x.name == "search_source"]
    assert {
        a.value.string_value for x in searches for a in x.attributes if a.key == "seekgraph.source"
    } >= {"kb"}
    models = [x for x in spans if x.name == "model_call"]
    assert models, "no model call span"
    by_id = {x.span_id: x for x in spans}
    assert all(by_id[m.parent_span_id].name not in ("seekgraph.run", "model_call") for m in models)
    # nothing private unless the operator asks: no question text in any attribute
    flat = json.dumps([str(v) for a in attributes.values() for v in a.values()])
    assert "VPN from a new laptop" not in flat


def scrape(w: dict) -> dict[str, float]:
    r = httpx.get(w["a"].url + "/metrics", headers=OPERATOR)
    assert r.status_code == 200
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            out[f"{sample.name}{{{labels}}}"] = sample.value
    return out


def test_metrics_are_served_to_the_operator_only_and_count_runs_tokens_and_latency(
    world,
) -> None:
    assert httpx.get(world["a"].url + "/metrics").status_code == 403
    assert httpx.get(world["a"].url + "/metrics", headers=auth(world["alice"])).status_code == 403
    before = scrape(world).get("seekgraph_runs_finished_total{flow=search,status=done}", 0)
    ask(world, "bob", VPN)
    m = scrape(world)
    assert m["seekgraph_runs_finished_total{flow=search,status=done}"] == before + 1
    assert m["seekgraph_runs_started_total{flow=search}"] >= before + 1
    assert m["seekgraph_model_tokens_total{model=test-model,user=bob}"] > 0
    assert m["seekgraph_model_cost_usd_total{model=test-model,user=bob}"] > 0
    assert m["seekgraph_node_seconds_count{node=integrate}"] >= 1
    assert m["seekgraph_source_seconds_count{source=kb}"] >= 1
    assert m["seekgraph_index_documents{source=kb}"] == 5
    assert time.time() - 3600 < m["seekgraph_index_synced_at_seconds{source=kb}"] <= time.time()
    assert m["seekgraph_index_sync_problems{source=chat}"] == 0
    assert m["seekgraph_sse_streams_open{}"] == 0


def test_the_audit_trail_has_what_was_shown_and_not_what_was_refused(world) -> None:
    thread, s = ask(world, "alice", NIGHTJAR)
    cited = {c["doc_id"] for c in s.of("answer")[0].data["citations"]}
    assert "docs/security/nightjar-pentest" in cited
    ask(world, "bob", NIGHTJAR)  # bob may not read it: nothing of it is shown to him
    entries = httpx.get(world["a"].url + "/admin/audit", headers=OPERATOR).json()
    alices = [e for e in entries if e["user"] == "alice" and e["thread_id"] == thread]
    assert alices and cited <= set(alices[0]["shown"]) and alices[0]["door"] == "native"
    assert alices[0]["key_id"] and world["alice"] not in json.dumps(entries)  # ids, not keys
    bobs = [e for e in entries if e["user"] == "bob"]
    assert bobs and all(
        "docs/security/nightjar-pentest" not in e["shown"] + e["listed"] for e in bobs
    )
    # the CLI reads the same store
    env = {**os.environ, "SEEKGRAPH_REDIS_URL": world["redis_url"]}
    out = subprocess.run(
        [str(Path(sys.executable).parent / "seekgraph"), "audit", "--doc",
         "docs/security/nightjar-pentest", "--since", "1h", "--json"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert {e["user"] for e in json.loads(out.stdout)} == {"alice"}
    run_id = alices[0]["run_id"]
    show = subprocess.run(
        [str(Path(sys.executable).parent / "seekgraph"), "runs", "show", run_id],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert show.returncode == 0 and "cost_usd: " in show.stdout and "status: done" in show.stdout


async def test_mcp_reads_are_audited_and_a_refused_read_is_not(world) -> None:
    doc = "docs/security/nightjar-pentest"
    async with over_mcp(world["a"].url, world["bob"]) as client:
        refused = await client.call_tool("read_document", {"doc_id": doc})
    async with over_mcp(world["a"].url, world["alice"]) as client:
        read_ok = await client.call_tool("read_document", {"doc_id": doc})
    assert refused.is_error and not read_ok.is_error
    entries = httpx.get(
        world["a"].url + "/admin/audit", params={"doc": doc}, headers=OPERATOR
    ).json()
    reads = [e for e in entries if e["action"] == "read_document"]
    assert [(e["user"], e["door"]) for e in reads] == [("alice", "mcp")]


def test_the_run_reports_its_tokens_and_cost(world) -> None:
    thread, s = ask(world, "alice", VPN)
    usage = s.of("end")[0].data["usage"]
    assert usage["tokens"] > 0
    assert usage["cost_usd"] == pytest.approx(usage["tokens"] * 2.0 / 1e6, rel=1e-3)
    env = {**os.environ, "SEEKGRAPH_REDIS_URL": world["redis_url"]}
    out = subprocess.run(
        [str(Path(sys.executable).parent / "seekgraph"), "audit", "--usage", "--json",
         "--user", "alice"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    today = json.loads(out.stdout)[-1]
    assert today["user"] == "alice" and today["tokens"] >= usage["tokens"]
    history = httpx.get(
        f"{world['a'].url}/threads/{thread}/history", headers=auth(world["alice"])
    ).json()
    assert any(h["summary"].get("usage", {}).get("cost_usd", 0) > 0 for h in history)


def test_every_door_answers_429_with_retry_after_past_the_rate(world, tmp_path: Path) -> None:
    app = start_app(tmp_path, "rated", {**world["env"], "SEEKGRAPH_RATE_LIMIT_PER_MINUTE": 2})
    fresh = add_key_to_file(world["keys"], "alice")  # a key no other test has counted
    try:
        key = world["bob"]
        with httpx.Client(timeout=60) as c:
            for _ in range(3):
                c.get(f"{app.url}/me", headers=auth(key))
            native = c.get(f"{app.url}/threads", headers=auth(key))
            openai = c.get(f"{app.url}/v1/models", headers=auth(key))
            lg = c.post(
                f"{app.url}/langgraph/assistants/search", json={}, headers={"x-api-key": key}
            )
            mcp = c.post(f"{app.url}/mcp", json={}, headers=auth(key))
            other = c.get(f"{app.url}/me", headers=auth(fresh))
    finally:
        app.stop()
    for r in (native, openai, lg, mcp):
        assert r.status_code == 429, (r.request.url, r.status_code)
        assert 1 <= int(r.headers["retry-after"]) <= 60
    assert (
        openai.json()["error"]["code"] in (429, "429", "rate_limit_exceeded")
        or openai.json()["error"]["type"]
    )
    assert other.status_code == 200  # another key is not held back


def test_a_spent_daily_token_budget_cuts_a_run_then_refuses_the_next(world, tmp_path: Path) -> None:
    env = {k: v for k, v in world["env"].items() if k != "SEEKGRAPH_REDIS_URL"}
    app = start_app(tmp_path, "budget", {**env, "SEEKGRAPH_DAILY_TOKENS_PER_USER": 40})
    try:
        with httpx.Client(timeout=120) as c:
            thread = new_thread(c, app.url, world["alice"])
            first = read(
                c,
                "POST",
                f"{app.url}/threads/{thread}/runs",
                json=VPN,
                headers=auth(world["alice"]),
            )
            second = c.post(
                f"{app.url}/threads/{thread}/runs", json=VPN, headers=auth(world["alice"])
            )
            bobs = c.post(
                f"{app.url}/threads/{new_thread(c, app.url, world['bob'])}/runs",
                json=VPN,
                headers=auth(world["bob"]),
            )
    finally:
        app.stop()
    assert first.of("end")[0].data["status"] == "done"
    cut = first.of("answer")[0].data
    assert "token budget is spent" in cut["answer"] and any(
        "of 40 tokens" in n for n in cut["notes"]
    )
    assert second.status_code == 429 and "daily model budget of 40 tokens" in second.text
    assert int(second.headers["retry-after"]) <= 86_400
    assert bobs.status_code == 200
    # one instance without Redis keeps its audit trail in the data directory
    env = {k: v for k, v in os.environ.items() if k != "SEEKGRAPH_REDIS_URL"}
    out = subprocess.run(
        [str(Path(sys.executable).parent / "seekgraph"), "audit", "--user", "alice", "--json"],
        capture_output=True, text=True, timeout=60,
        env={**env, "SEEKGRAPH_DATA_DIR": str(tmp_path / "data-budget")},
    )  # fmt: skip
    runs = [e for e in json.loads(out.stdout) if e["action"] == "run"]
    assert len(runs) == 1 and runs[0]["tokens"] >= 40 and "kb/vpn-access" in runs[0]["shown"]
