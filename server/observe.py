"""What operators see of the runs: Prometheus metrics and OpenTelemetry traces.

``Metrics`` holds the ``seekgraph_*`` series of one process (``GET /metrics``; the HTTP
doors add their ``http_*`` series to its registry, ``server.http.telemetry``); ``Telemetry``
is the metrics and the tracer provider an app hands to what reports.
``RunObserver`` watches one run — the graph's task starts and ends, its updates, its model
calls (a LangChain callback) — and turns them into a trace (one per run, its trace id the
run's id; a span per node, per source search, per model call, per document read) and into
the metrics. Traces are exported only when the standard ``OTEL_*`` variables name an
exporter; span attributes carry ids and counts, never a question, passage or answer unless
``SEEKGRAPH_TRACE_CONTENT`` is on.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.outputs import LLMResult
from opentelemetry import trace
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
    TracerProvider,
)
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: Latency buckets (seconds) of nodes and source searches.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    """The process's ``seekgraph_*`` series, in a registry of their own."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.runs_started = Counter(
            "seekgraph_runs_started", "Runs started, by flow.", ["flow"], registry=r
        )
        self.runs_finished = Counter(
            "seekgraph_runs_finished",
            "Runs that ended, by flow and status (done, waiting, error, interrupted, lost).",
            ["flow", "status"],
            registry=r,
        )
        self.node_seconds = Histogram(
            "seekgraph_node_seconds", "Wall time of a node.", ["node"], buckets=BUCKETS, registry=r
        )
        self.source_seconds = Histogram(
            "seekgraph_source_seconds",
            "Wall time of one search of one source.",
            ["source"],
            buckets=BUCKETS,
            registry=r,
        )
        self.model_tokens = Counter(
            "seekgraph_model_tokens",
            "Model tokens, by model and user.",
            ["model", "user"],
            registry=r,
        )
        self.model_cost = Counter(
            "seekgraph_model_cost_usd",
            "Estimated model cost in US dollars (SEEKGRAPH_MODEL_PRICES), by model and user.",
            ["model", "user"],
            registry=r,
        )
        self.limited = Counter(
            "seekgraph_requests_limited",
            "Requests refused with 429, by reason (rate, live_runs, daily_tokens).",
            ["reason"],
            registry=r,
        )
        self.sse_open = Gauge("seekgraph_sse_streams_open", "SSE streams open now.", registry=r)
        self.takeovers = Counter(
            "seekgraph_lock_takeovers",
            "Runs continued here after the instance running them stopped.",
            registry=r,
        )
        self.index_documents = Gauge(
            "seekgraph_index_documents", "Documents indexed, by source.", ["source"], registry=r
        )
        self.index_chunks = Gauge(
            "seekgraph_index_chunks", "Chunks indexed, by source.", ["source"], registry=r
        )
        self.synced_at = Gauge(
            "seekgraph_index_synced_at_seconds",
            "When the source's folder was last synced into the index (epoch seconds).",
            ["source"],
            registry=r,
        )
        self.sync_problems = Gauge(
            "seekgraph_index_sync_problems",
            "Files the source's last sync could not read (seekgraph index names them).",
            ["source"],
            registry=r,
        )
        self.queue_runs = Gauge(
            "seekgraph_queue_runs",
            "Runs in the run queue: pending (no worker took them yet) or claimed (in work).",
            ["state"],
            registry=r,
        )
        self.store_bytes = Gauge(
            "seekgraph_store_bytes",
            "Redis memory of each key family (MEMORY USAGE summed), at the last scrape.",
            ["family"],
            registry=r,
        )
        self.store_measured_at = 0.0
        """When the store's sizes were last measured (``time.monotonic()``)."""
        self.store_keys = Gauge(
            "seekgraph_store_keys", "Redis keys of each key family.", ["family"], registry=r
        )
        self.threads_past_half = Gauge(
            "seekgraph_threads_past_half_retention",
            "Threads with less than half their retention left (not read or continued for "
            "more than half of SEEKGRAPH_RETENTION_MINUTES).",
            registry=r,
        )
        self.threads_unmanaged = Gauge(
            "seekgraph_threads_without_expiry",
            "Threads whose record has no expiry (kept for ever, or written before retention "
            "was on: `seekgraph admin storage --prune` applies it).",
            registry=r,
        )
        self.connector_failing = Gauge(
            "seekgraph_connector_failing",
            "1 while a live connector's last sync failed (expired token, service down: "
            "`seekgraph sync` says what to fix); its last good state is what is searched.",
            ["source"],
            registry=r,
        )


def prices_of(text: str | None) -> dict[str, float]:
    """``SEEKGRAPH_MODEL_PRICES`` (``{"model": USD per million tokens}``) as a dict."""
    if not text:
        return {}
    data = json.loads(text)
    return {str(k): float(v) for k, v in data.items()}


def tracer_provider_from_env() -> TracerProvider | None:
    """A tracer provider exporting as the standard ``OTEL_*`` variables say; None when none is set.

    ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) exports
    OTLP over HTTP; ``OTEL_TRACES_EXPORTER=console`` prints spans. ``OTEL_SERVICE_NAME``
    names the service (``seekgraph`` by default).
    """
    exporter_name = os.environ.get("OTEL_TRACES_EXPORTER", "")
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if exporter_name == "none" or not (endpoint or exporter_name):
        return None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SpanExporter,
    )

    exporter: SpanExporter
    if exporter_name == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    service = os.environ.get("OTEL_SERVICE_NAME", "seekgraph")
    provider = SdkTracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


@dataclass(frozen=True)
class Telemetry:
    """What a process reports to operators: its metrics, and where its traces go.

    Built once per app (``create_app``) and handed to what reports: the HTTP doors (a span
    and the ``http_*`` series per request) and the runs (a trace each).
    """

    metrics: Metrics = field(default_factory=Metrics)
    tracer_provider: TracerProvider | None = None
    """None: no traces (no ``OTEL_*`` exporter set)."""

    @classmethod
    def from_env(cls) -> Telemetry:
        """Fresh metrics, and traces exported as the ``OTEL_*`` variables say."""
        return cls(Metrics(), tracer_provider_from_env())

    @property
    def tracer(self) -> Tracer | None:
        """The runs' tracer (None without traces)."""
        if self.tracer_provider is None:
            return None
        return self.tracer_provider.get_tracer("seekgraph")


def trace_id_of(run_id: str) -> int:
    """The OTel trace id of a run: its hex run id as a number (the id you search for)."""
    try:
        value = int(run_id, 16)
    except ValueError:
        value = int.from_bytes(run_id.encode()[:16].ljust(16, b"\0"), "big")
    return value or 1


class RunObserver:
    """One run's trace and metrics, fed by the graph's stream and its model callbacks."""

    def __init__(
        self,
        metrics: Metrics,
        tracer: Tracer | None,
        *,
        run_id: str,
        thread_id: str,
        flow: str,
        user: str,
        prices: dict[str, float],
        content: bool = False,
        models: bool = True,
    ) -> None:
        self.metrics, self.tracer = metrics, tracer
        self.models = models
        """Whether a chat model may be called (model spans need a LangChain callback, whose
        dispatch costs on every step of a run that calls none)."""
        self.run_id, self.thread_id, self.flow, self.user = run_id, thread_id, flow, user
        self.prices, self.content = prices, content
        self.tokens = 0
        self.cost = 0.0
        self.by_model: dict[str, dict[str, float]] = {}
        self._started: dict[str, tuple[float, str, str | None, Span | None]] = {}
        self.root: Span | None = None
        if tracer is not None:
            parent = NonRecordingSpan(
                SpanContext(
                    trace_id=trace_id_of(run_id),
                    span_id=secrets.randbits(64) or 1,
                    is_remote=True,
                    trace_flags=TraceFlags(TraceFlags.SAMPLED),
                )
            )
            # the HTTP request that started the run (when it runs in that request's context):
            # a link, not the parent, since the run's trace id is its own id
            request = trace.get_current_span().get_span_context()
            self.root = tracer.start_span(
                "seekgraph.run",
                context=trace.set_span_in_context(parent),
                kind=SpanKind.SERVER,
                links=[Link(request)] if request.is_valid else None,
                attributes={
                    "seekgraph.run_id": run_id,
                    "seekgraph.thread_id": thread_id,
                    "seekgraph.flow": flow,
                    "seekgraph.user": user,
                },
            )
        metrics.runs_started.labels(flow).inc()

    def _child(self, name: str, parent: Span | None, attributes: dict[str, Any]) -> Span | None:
        if self.tracer is None:
            return None
        above = parent or self.root
        context = trace.set_span_in_context(above) if above is not None else None
        return self.tracer.start_span(name, context=context, attributes=attributes)

    def on_task(self, namespace: tuple[str, ...], chunk: dict[str, Any]) -> None:
        """A node (or a search branch) started or finished."""
        name, task_id = str(chunk.get("name", "")), str(chunk.get("id", ""))
        if name.startswith("__"):
            return
        if "input" in chunk:  # started
            source = None
            attributes: dict[str, Any] = {"seekgraph.node": name, "seekgraph.task_id": task_id}
            if name == "search_source" and isinstance(chunk["input"], dict):
                source = str(chunk["input"].get("source", ""))
                attributes["seekgraph.source"] = source
                if self.content:
                    attributes["seekgraph.query"] = str(chunk["input"].get("query", ""))
            span = self._child(name, None, attributes)
            self._started[task_id] = (time.perf_counter(), name, source, span)
            return
        started = self._started.pop(task_id, None)
        if started is None:
            return
        began, name, source, span = started
        seconds = time.perf_counter() - began
        if source is not None:
            self.metrics.source_seconds.labels(source).observe(seconds)
        else:
            self.metrics.node_seconds.labels(name).observe(seconds)
        result = chunk.get("result")
        writes = result if isinstance(result, dict) else {}
        self._count(writes.get("model_calls") or [])
        if span is not None:
            if chunk.get("error"):
                span.set_status(Status(StatusCode.ERROR, str(chunk["error"])[:200]))
            for doc_id in writes.get("documents_read") or []:  # a span per document read
                child = self._child("read_document", span, {"seekgraph.doc_id": str(doc_id)})
                if child is not None:
                    child.end()
            span.end()

    def span_of_task(self, task_id: str) -> Span | None:
        """The open span of a task (a model call's parent)."""
        started = self._started.get(task_id)
        return started[3] if started else None

    def _count(self, calls: list[dict[str, Any]]) -> None:
        """The model calls a task wrote count as tokens and cost.

        Only a task's own writes count: a resumed run's replayed steps are not tasks again.
        """
        for call in calls:
            if isinstance(call, dict):
                tokens = int(call.get("tokens") or 0)
                model = str(call.get("model") or "none")
                if not tokens:
                    continue
                cost = tokens * self.prices.get(model, 0.0) / 1_000_000
                self.tokens += tokens
                self.cost += cost
                entry = self.by_model.setdefault(model, {"tokens": 0, "cost_usd": 0.0})
                entry["tokens"] += tokens
                entry["cost_usd"] += cost
                self.metrics.model_tokens.labels(model, self.user).inc(tokens)
                if cost:
                    self.metrics.model_cost.labels(model, self.user).inc(cost)

    def usage(self) -> dict[str, Any]:
        """Tokens and estimated cost of the run so far."""
        return {
            "tokens": self.tokens,
            "cost_usd": round(self.cost, 6),
            "by_model": {
                m: {"tokens": int(v["tokens"]), "cost_usd": round(v["cost_usd"], 6)}
                for m, v in self.by_model.items()
            },
        }

    def finish(self, status: str) -> None:
        """The run ended with ``status``."""
        self.metrics.runs_finished.labels(self.flow, status).inc()
        for _, _, _, span in self._started.values():
            if span is not None:
                span.end()
        self._started.clear()
        if self.root is not None:
            self.root.set_attribute("seekgraph.status", status)
            self.root.set_attribute("seekgraph.tokens", self.tokens)
            self.root.set_attribute("seekgraph.cost_usd", round(self.cost, 6))
            if status not in ("done", "waiting"):
                self.root.set_status(Status(StatusCode.ERROR, status))
            self.root.end()


class ModelSpans(AsyncCallbackHandler):
    """A span per chat-model call (model, tokens, latency, outcome), under its node's span."""

    # Only model events are wanted: LangChain skips this handler for every other run.
    ignore_chain = True
    ignore_agent = True
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True

    def __init__(self, observer: RunObserver) -> None:
        self.observer = observer
        self.spans: dict[UUID, Span] = {}

    def _open(self, run_id: UUID, serialized: dict[str, Any], metadata: Any) -> None:
        ns = str((metadata or {}).get("langgraph_checkpoint_ns", ""))
        task_id = ns.rsplit("|", 1)[-1].split(":", 1)[-1] if ns else ""
        params = (serialized or {}).get("kwargs", {}) if isinstance(serialized, dict) else {}
        model = str(params.get("model_name") or params.get("model") or "")
        span = self.observer._child(
            "model_call",
            self.observer.span_of_task(task_id),
            {
                "gen_ai.request.model": model,
                "seekgraph.node": str((metadata or {}).get("langgraph_node", "")),
            },
        )
        if span is not None:
            self.spans[run_id] = span

    async def on_chat_model_start(
        self, serialized: dict[str, Any], messages: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        """A model call began."""
        self._open(run_id, serialized, kwargs.get("metadata"))

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call ended: its model and tokens."""
        span = self.spans.pop(run_id, None)
        if span is None:
            return
        output = response.llm_output or {}
        usage = output.get("token_usage") or {}
        span.set_attribute("gen_ai.response.model", str(output.get("model_name", "")))
        span.set_attribute("gen_ai.usage.total_tokens", int(usage.get("total_tokens") or 0))
        span.end()

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call failed (the chat factory may fail over to the backup)."""
        span = self.spans.pop(run_id, None)
        if span is not None:
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
            span.end()


def name_run(run_id: str) -> None:
    """Put the run's id (its trace's id) on the request's span: from the request to the run."""
    trace.get_current_span().set_attribute("seekgraph.run_id", run_id)
