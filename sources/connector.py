"""Live connectors: a source system listed as it is now, its permissions kept in sync.

A ``Connector`` reads a system (Slack, …) and answers a ``Snapshot``: every document the
connector can see with its ACL, and the **groups** the system knows with their members. A
document shared with a group carries the group's principal (``group:slack:C123``), never
the members themselves, so a membership change — someone removed from a channel — takes
effect at the next sync without re-reading or re-embedding a single document: membership is
resolved when a person asks (:func:`member_groups`, used by the registry).

``sync_connector`` applies a snapshot to the index: changed documents re-indexed (by content
hash), documents no longer listed deleted, the groups replaced, and the connector's state
(cursor, last run, counts, last error) kept with the index. A failing connector (expired
token, 5xx) is reported with what to fix and **changes nothing**: the last good documents
and memberships stay, and access is never widened by a failure.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from sources.index_source import IndexedDocument, apply_documents


class ConnectorError(RuntimeError):
    """The system refused or failed; the message says what to fix."""


@dataclass
class Snapshot:
    """What a connector sees now."""

    documents: list[IndexedDocument]
    groups: dict[str, list[str]] = field(default_factory=dict)
    """Group name (``slack:C123``; its principal is ``group:slack:C123``) → workspace users."""
    cursor: str | None = None


class Connector(Protocol):
    """A source system read whole (documents with ACLs, and its groups)."""

    name: str
    kind: str

    def snapshot(self, cursor: str | None) -> Snapshot:
        """Everything the connector may see now (``cursor``: where the last sync ended)."""
        ...


@dataclass
class SyncResult:
    """What one sync did."""

    source: str
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    groups: int = 0
    seconds: float = 0.0
    error: str | None = None


def _state_key(name: str) -> str:
    return f"connector:{name}"


def connector_state(index: Any, name: str) -> dict[str, Any]:
    """The connector's kept state: ``cursor``, ``at`` (last good sync), ``error``, counts."""
    return dict(json.loads(index.get_meta(_state_key(name)) or "{}"))


def sync_connector(index: Any, connector: Connector) -> SyncResult:
    """Apply what the connector sees now to the index; a failure changes nothing."""
    started = time.perf_counter()
    state = connector_state(index, connector.name)
    result = SyncResult(connector.name)
    try:
        snap = connector.snapshot(state.get("cursor"))
    except ConnectorError as exc:
        result.error = str(exc)
        failed = {**state, "error": str(exc), "failed_at": time.time()}
        index.set_meta(_state_key(connector.name), json.dumps(failed))
        result.seconds = time.perf_counter() - started
        return result
    result.indexed, result.removed, _ = apply_documents(index, connector.name, snap.documents)
    set_groups(index, connector.name, snap.groups)
    result.unchanged = len(snap.documents) - result.indexed
    result.groups = len(snap.groups)
    result.seconds = time.perf_counter() - started
    index.set_meta(
        _state_key(connector.name),
        json.dumps(
            {
                "cursor": snap.cursor,
                "at": time.time(),
                "error": None,
                "documents": len(snap.documents),
                "groups": len(snap.groups),
                "seconds": round(result.seconds, 3),
            }
        ),
    )
    return result


def set_groups(index: Any, connector: str, groups: dict[str, list[str]]) -> None:
    """Replace the groups one connector knows (kept with the index)."""
    index.set_meta(f"groups:{connector}", json.dumps({g: sorted(m) for g, m in groups.items()}))


def member_groups(index: Any, connectors: list[str], user: str) -> frozenset[str]:
    """The connector groups ``user`` belongs to now (read at each question)."""
    out: set[str] = set()
    for name in connectors:
        groups = json.loads(index.get_meta(f"groups:{name}") or "{}")
        out.update(g for g, members in groups.items() if user in members)
    return frozenset(out)
