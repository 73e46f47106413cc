"""Every HTTP request as operators see it: a server span, and the ``http_*`` Prometheus series.

The series come from ``prometheus-fastapi-instrumentator`` into the app's own registry, beside
the ``seekgraph_*`` ones on ``GET /metrics``; the spans from OpenTelemetry's FastAPI
instrumentation, exported with the runs' traces (only when an ``OTEL_*`` exporter is set).
Both name a request by its route template (``/threads/{thread_id}``), never its path, so ids
do not multiply the series. Nothing a person wrote is kept: bodies are not read, a query
string's values (``/admin/audit?user=…``) are dropped, credentials are never captured.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.trace import Span
from prometheus_fastapi_instrumentator import Instrumentator, metrics

from seekgraph.server.observe import BUCKETS, Telemetry

#: Operator and probe endpoints: neither a span nor a series (a scrape is not traffic).
UNOBSERVED = ("/metrics", "/healthz", "/readyz")

#: Headers never captured, whatever ``OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_*`` asks.
SECRET_HEADERS = ["authorization", "x-api-key", "cookie", "set-cookie"]


def without_query(span: Span, scope: dict[str, Any]) -> None:
    """Drop the query string from the span's url: its values may name a person or a document."""
    if not scope.get("query_string") or not span.is_recording():
        return
    attributes = getattr(span, "attributes", None) or {}
    url = attributes.get("http.url")
    if isinstance(url, str):
        span.set_attribute("http.url", url.split("?", 1)[0])
    if "url.query" in attributes:  # the newer HTTP conventions (OTEL_SEMCONV_STABILITY_OPT_IN)
        span.set_attribute("url.query", "REDACTED")


def instrument_http(app: FastAPI, telemetry: Telemetry) -> None:
    """Count and time every request into ``telemetry.metrics``; trace it when traces are on.

    ``http_requests_total{method,handler,status}`` (the exact status: a 429 is not a 401) and
    ``http_request_duration_seconds{method,handler}``: the time until the response starts (a
    streamed run's length is in ``seekgraph_node_seconds``). A path no route matches is
    counted as ``handler="none"``.
    """
    registry = telemetry.metrics.registry
    instrumentator = Instrumentator(
        should_group_status_codes=False,
        excluded_handlers=[f"^{path}$" for path in UNOBSERVED],
        registry=registry,
    )
    instrumentator.add(
        metrics.requests(registry=registry),
        metrics.latency(
            should_include_status=False,
            should_exclude_streaming_duration=True,
            buckets=BUCKETS,
            registry=registry,
        ),
    )
    instrumentator.instrument(app)
    if telemetry.tracer_provider is not None:
        FastAPIInstrumentor.instrument_app(
            app,
            server_request_hook=without_query,
            tracer_provider=telemetry.tracer_provider,
            # the series above are the HTTP metrics: OTel's would carry raw paths
            meter_provider=NoOpMeterProvider(),
            excluded_urls=",".join(f"{path}$" for path in UNOBSERVED),
            http_capture_headers_sanitize_fields=SECRET_HEADERS,
            exclude_spans=["receive", "send"],  # one span per request, not one per chunk
        )
