"""Every event a run streams, typed once, and the one fold that turns events into a snapshot.

Nodes emit ``node``, ``sources``, ``token`` and ``error`` with the stream writer; the run
driver (``graph/run.py``) adds ``node_start``, ``answer`` and ``waiting``; the server adds
``end`` and, for a reconnecting client, ``snapshot``. Every event is a dict with an ``event``
key naming its type; on the SSE wire the type is the ``event:`` line and the rest the data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from seekgraph.state.models import Citation, Conflict


class NodeStartEvent(TypedDict):
    """A node began (the driver sees its task start)."""

    event: Literal["node_start"]
    node: str


class NodeEvent(TypedDict):
    """A node finished: a one-line summary of what it decided, and the details."""

    event: Literal["node"]
    node: str
    summary: str
    detail: dict[str, Any]


class SourcesEvent(TypedDict):
    """Passages a search branch found (titles only; the evidence is in state)."""

    event: Literal["sources"]
    source: str
    query: str
    titles: list[str]
    outbound: NotRequired[bool]
    """The query left the deployment (a web search): exactly what was sent is ``query``."""


class TokenEvent(TypedDict):
    """A piece of the answer as it is written."""

    event: Literal["token"]
    text: str


class ErrorEvent(TypedDict):
    """A failure: recoverable (a source timed out) or the one that stopped the run."""

    event: Literal["error"]
    node: str
    message: str


class AnswerEvent(TypedDict):
    """The run's output (the answer keys of ``OutputState``)."""

    event: Literal["answer"]
    answer: str
    status: str | None
    """``answered``, ``passages``, ``partial`` or ``not_found`` (``nodes.reader``); none for
    a research report."""
    mode: str | None
    citations: list[Citation]
    conflicts: list[Conflict]
    unanswered: list[str]
    notes: list[str]
    references: list[dict[str, Any]] | None
    """A research report's numbered references (``[n]`` → its passage); none for an answer."""


class WaitingEvent(TypedDict):
    """The run paused for a person (``interrupt()``): what it asks, and how to resume."""

    event: Literal["waiting"]
    interrupts: list[dict[str, Any]]


class EndEvent(TypedDict):
    """The run stopped: ``done``, ``waiting``, ``error``, ``interrupted`` or ``lost``."""

    event: Literal["end"]
    status: str


class SnapshotEvent(TypedDict, total=False):
    """Everything a run showed so far, folded (sent instead of a replay on reconnect)."""

    event: Literal["snapshot"]
    seq: int


NodeStreamEvent = NodeEvent | SourcesEvent | TokenEvent | ErrorEvent
"""What nodes write to the stream."""
StreamEvent = (
    NodeStartEvent
    | NodeEvent
    | SourcesEvent
    | TokenEvent
    | ErrorEvent
    | AnswerEvent
    | WaitingEvent
    | EndEvent
    | SnapshotEvent
)
EVENT_TYPES = frozenset(
    ("node_start", "node", "sources", "token", "error", "answer", "waiting", "end", "snapshot")
)
ANSWER_KEYS = (
    "answer",
    "status",
    "mode",
    "citations",
    "conflicts",
    "unanswered",
    "notes",
    "references",
)
"""What a person receives from a run (``AnswerEvent``'s keys, the snapshot's answer part)."""


def node_event(node: str, summary: str, **detail: Any) -> NodeEvent:
    """Build a ``node`` event."""
    return {"event": "node", "node": node, "summary": summary, "detail": detail}


def answer_event(values: dict[str, Any]) -> AnswerEvent:
    """The ``answer`` event of a run's final state."""
    return {"event": "answer", **{k: values.get(k) for k in ANSWER_KEYS}}  # type: ignore[typeddict-item]


def empty_fold(run_id: str, thread_id: str) -> dict[str, Any]:
    """The snapshot of a run that has shown nothing yet."""
    return {
        "run_id": run_id,
        "thread_id": thread_id,
        "status": "running",
        "steps": [],
        "sources": [],
        "answer": "",
        "citations": [],
        "conflicts": [],
        "unanswered": [],
        "notes": [],
        "mode": None,
        "answer_status": None,
        "errors": [],
        "interrupts": [],
    }


def fold_event(fold: dict[str, Any], kind: str, data: dict[str, Any]) -> None:
    """Fold one event (its type and its data without the ``event`` key) into a snapshot."""
    if kind == "node":
        fold["steps"].append({"node": data["node"], "summary": data["summary"]})
    elif kind == "sources":
        fold["sources"] = list(dict.fromkeys([*fold["sources"], *data.get("titles", [])]))
    elif kind == "token":
        fold["answer"] += data["text"]
    elif kind == "answer":
        # the answer's status is kept apart from the run's (``running``, ``done``…)
        fold.update({k: data[k] for k in ANSWER_KEYS if k in data and k != "status"})
        if "status" in data:
            fold["answer_status"] = data["status"]
    elif kind == "error":
        fold["errors"].append(data.get("message", ""))
    elif kind == "waiting":  # what the run asks of a person, for a page opened later
        fold["interrupts"] = data.get("interrupts", [])
    elif kind == "end":
        fold["status"] = data.get("status", "done")
    elif kind == "snapshot":
        fold.update({k: v for k, v in data.items() if k != "seq"})


def checkpoint_events(
    values: dict[str, Any], steps: Iterable[str]
) -> list[tuple[str, dict[str, Any]]]:
    """The events a run's last checkpoint stands for (a takeover folds them like live ones)."""
    events: list[tuple[str, dict[str, Any]]] = [
        ("node", {"node": n, "summary": "done (from checkpoint)", "detail": {}}) for n in steps
    ]
    titles = list(dict.fromkeys(e["title"] for e in values.get("evidence", [])))
    events.append(("sources", {"titles": titles}))
    answer: dict[str, Any] = {k: values[k] for k in ANSWER_KEYS if values.get(k) is not None}
    events.append(("answer", {**answer, "answer": values.get("answer") or ""}))
    return events
