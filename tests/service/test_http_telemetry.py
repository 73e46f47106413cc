"""What operators see of HTTP traffic: a span per request, ``http_*`` series on ``/metrics``.

The app in process (httpx's ASGI transport) on the bundled demo workspace, its spans kept by
OpenTelemetry's in-memory exporter. Both name a request by its route template, and neither
keeps what a person wrote or who they are.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from seekgraph.server.auth import add_key_to_file
from seekgraph.server.http.app import create_app
from seekgraph.server.observe import Metrics, Telemetry, trace_id_of
from seekgraph.server.settings import Settings

QUESTION = "How do I connect to the VPN from a new laptop?"
OPERATOR = {"Authorization": "Bearer test-internal-secret"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One data folder (the demo indexed once) and one API key of the user ``bob``."""
    tmp = tmp_path_factory.mktemp("telemetry")
    return tmp, add_key_to_file(tmp / "keys.json", "bob")


@asynccontextmanager
async def serving(
    workdir: tuple[Path, str],
) -> AsyncIterator[tuple[httpx.AsyncClient, InMemorySpanExporter]]:
    """The app with its traces kept in memory, its lifespan entered in the test's task."""
    tmp, key = workdir
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = Settings(
        data_dir=tmp / "data",
        api_keys_file=tmp / "keys.json",
        redis_url=None,
        internal_token="test-internal-secret",
    )
    app = create_app(settings, Telemetry(Metrics(), provider))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://test", headers=headers, timeout=120
        ) as client:
            yield client, exporter


def http_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if "http.route" in (s.attributes or {})]


def everything_in(spans: list[ReadableSpan]) -> str:
    """Every span's name, attributes and events, as one text to search."""
    return json.dumps(
        [
            [s.name, dict(s.attributes or {}), [dict(e.attributes or {}) for e in s.events]]
            for s in spans
        ],
        default=str,
    )


async def test_a_request_is_a_server_span_named_by_its_route_and_keeps_no_persons_data(
    workdir,
) -> None:
    async with serving(workdir) as (api, exporter):
        thread = (await api.post("/threads")).json()["thread_id"]
        run = await api.post(f"/threads/{thread}/runs", json={"question": QUESTION})
        assert run.status_code == 200
        await api.get(f"/threads/{thread}/state")
        audit = await api.get(
            "/admin/audit", params={"user": "bob", "doc": "kb/vpn-setup"}, headers=OPERATOR
        )
        assert audit.status_code == 200
        await api.get("/healthz")
        await api.get("/metrics", headers=OPERATOR)
        spans = http_spans(exporter)
        routes = [s.attributes["http.route"] for s in spans if s.attributes]
        assert "/threads/{thread_id}/runs" in routes and "/threads/{thread_id}/state" in routes
        assert "/admin/audit" in routes
        assert not {"/healthz", "/metrics"} & set(routes)  # probes and scrapes are not traffic
        started = next(
            s for s in spans if s.attributes["http.route"] == "/threads/{thread_id}/runs"
        )
        assert started.name == "POST /threads/{thread_id}/runs"
        assert started.attributes["http.status_code"] == 200
        # the request names its run; the run's trace (its id is the run's) links back to it
        run_id = str(started.attributes["seekgraph.run_id"])
        root = next(
            s
            for s in exporter.get_finished_spans()
            if s.name == "seekgraph.run" and s.context.trace_id == trace_id_of(run_id)
        )
        assert [link.context.span_id for link in root.links] == [started.context.span_id]
        # no question, user name, document or credential in any HTTP span
        text = everything_in(spans)
        for private in ("VPN from a new laptop", "bob", "kb/vpn-setup", "Bearer", workdir[1]):
            assert private not in text, private


async def test_metrics_count_requests_by_route_template_method_and_status(workdir) -> None:
    async with serving(workdir) as (api, _):
        thread = (await api.post("/threads")).json()["thread_id"]
        for _ in range(2):
            assert (await api.get(f"/threads/{thread}/state")).status_code == 200
        unknown = await api.get("/me", headers={"Authorization": "Bearer sg_nobody"})
        assert unknown.status_code == 401
        await api.get("/no/such/page")
        await api.get("/healthz")
        scraped = await api.get("/metrics", headers=OPERATOR)
        second = await api.get("/metrics", headers=OPERATOR)
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(second.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value

    def value(name: str, **labels: str) -> float:
        return samples.get((name, frozenset(labels.items())), 0.0)

    state = {"handler": "/threads/{thread_id}/state", "method": "GET"}
    assert value("http_requests_total", **state, status="200") == 2
    assert value("http_requests_total", handler="/me", method="GET", status="401") == 1
    assert value("http_requests_total", handler="none", method="GET", status="404") == 1
    assert value("http_request_duration_seconds_count", **state) == 2
    assert value("seekgraph_runs_started_total", flow="search") == 0  # beside the domain ones
    handlers = {dict(labels).get("handler") for _, labels in samples}
    assert "/metrics" not in handlers and "/healthz" not in handlers
    assert scraped.status_code == 200 and thread not in second.text  # templates, never ids
    assert "bob" not in second.text
