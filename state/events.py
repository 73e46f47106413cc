"""Progress events nodes emit with the stream writer; they become the SSE protocol unchanged.

Every event is a dict with an ``event`` key naming its type.
"""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict


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


class TokenEvent(TypedDict):
    """A piece of the answer as it is written."""

    event: Literal["token"]
    text: str


class ErrorEvent(TypedDict):
    """A recoverable failure, e.g. a source that timed out."""

    event: Literal["error"]
    node: str
    message: str


StreamEvent = NodeEvent | SourcesEvent | TokenEvent | ErrorEvent


def node_event(node: str, summary: str, **detail: Any) -> NodeEvent:
    """Build a ``node`` event."""
    return {"event": "node", "node": node, "summary": summary, "detail": detail}
