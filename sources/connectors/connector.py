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
import os
import re
import socket
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from seekgraph.sources.base import link_url
from seekgraph.sources.indexes.index_source import IndexedDocument, apply_documents, id_prefixes
from seekgraph.sources.ingestion.chunking import IngestError, chunk_markdown, rename


class ConnectorError(RuntimeError):
    """The system refused or failed; the message says what to fix."""


@dataclass
class Snapshot:
    """What a connector sees now."""

    documents: list[IndexedDocument]
    groups: dict[str, list[str]] = field(default_factory=dict)
    """Group name (``slack:C123``; its principal is ``group:slack:C123``) → workspace users."""
    cursor: str | None = None
    kept: set[str] = field(default_factory=set)
    """Documents the connector knows are unchanged and did not read again (their ids)."""
    problems: list[str] = field(default_factory=list)
    """Items that could not be read (skipped, the rest synced)."""
    unknown: set[str] = field(default_factory=set)
    """People the system shares with who are no workspace user (they read nothing here)."""


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
    problems: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    """People the system shares with who are no workspace user (see ``Snapshot.unknown``)."""
    busy: bool = False
    """Skipped: another process or instance is syncing this connector now."""


def _state_key(name: str) -> str:
    return f"connector:{name}"


def connector_state(index: Any, name: str) -> dict[str, Any]:
    """The connector's kept state: ``cursor``, ``at`` (last good sync), ``error``, counts."""
    return dict(json.loads(index.get_meta(_state_key(name)) or "{}"))


#: How long one sync may hold its connector's lease (a crashed instance's lapses after it).
SYNC_LEASE_S = 30 * 60


def sync_connector(index: Any, connector: Connector) -> SyncResult:
    """Apply what the connector sees now to the index; a failure changes nothing.

    One sync of a connector at a time across every process and instance sharing the index:
    the sync takes the connector's lease first, and a sync that finds it held by another is
    skipped (``SyncResult.busy``) — the other one is doing the work.
    """
    owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    lease = f"sync:{connector.name}"
    if not index.claim(lease, owner, SYNC_LEASE_S):
        return SyncResult(connector.name, busy=True)
    try:
        return _sync(index, connector)
    finally:
        index.release(lease, owner)


def _sync(index: Any, connector: Connector) -> SyncResult:
    started = time.perf_counter()
    state = connector_state(index, connector.name)
    result = SyncResult(connector.name)
    try:
        snap = connector.snapshot(state.get("cursor"))
        if snap.kept and not snap.kept <= held_ids(index, connector.name):
            snap = connector.snapshot(None)  # the index lost what the cursor says it holds
    except ConnectorError as exc:
        result.error = str(exc)
        failed = {**state, "error": str(exc), "failed_at": time.time()}
        index.set_meta(_state_key(connector.name), json.dumps(failed))
        result.seconds = time.perf_counter() - started
        return result
    result.indexed, result.removed, _ = apply_documents(
        index, connector.name, snap.documents, kept=snap.kept
    )
    set_groups(index, connector.name, snap.groups)
    result.unchanged = len(snap.documents) + len(snap.kept) - result.indexed
    result.groups = len(snap.groups)
    result.problems = list(snap.problems)
    result.unknown = sorted(snap.unknown)
    result.seconds = time.perf_counter() - started
    index.set_meta(
        _state_key(connector.name),
        json.dumps(
            {
                "cursor": snap.cursor,
                "at": time.time(),
                "error": None,
                "documents": len(snap.documents) + len(snap.kept),
                "groups": len(snap.groups),
                "seconds": round(result.seconds, 3),
                "problems": snap.problems[:50],
                "unknown": len(snap.unknown),
            }
        ),
    )
    return result


def held_ids(index: Any, source: str) -> set[str]:
    """Every id (and id prefix) the index holds for ``source``, without the source."""
    cut = len(source) + 1
    return {p[cut:] for d in index.document_hashes(source) for p in id_prefixes(d)}


def set_groups(index: Any, connector: str, groups: dict[str, list[str]]) -> None:
    """Replace the groups one connector knows (kept with the index), and who is in which."""
    index.set_meta(f"groups:{connector}", json.dumps({g: sorted(m) for g, m in groups.items()}))
    member_of: dict[str, list[str]] = {}
    for group, members in sorted(groups.items()):
        for user in set(members):
            member_of.setdefault(user, []).append(group)
    index.set_meta(f"member_of:{connector}", json.dumps(member_of))


def member_groups(index: Any, connectors: list[str], user: str) -> frozenset[str]:
    """The connector groups ``user`` belongs to now (read at each question)."""
    out: set[str] = set()
    for name in connectors:
        member_of = index.get_meta(f"member_of:{name}")
        if member_of is not None:
            out.update(json.loads(member_of).get(user, []))
        else:  # kept by a version before the inverse map: read the groups themselves
            groups = json.loads(index.get_meta(f"groups:{name}") or "{}")
            out.update(g for g, members in groups.items() if user in members)
    return frozenset(out)


def named(people: dict[str, str], *keys: object) -> str | None:
    """The workspace user a system's person is: the first of ``keys`` (e-mail, handle) known."""
    for key in keys:
        if isinstance(key, str) and key.strip().lower() in people:
            return people[key.strip().lower()]
    return None


def connector_document(
    source: str,
    kind: str,
    doc_id: str,
    title: str,
    body: str,
    acl: list[str],
    *,
    url: str | None = None,
    updated_at: str | None = None,
    version: object = None,
    heading: str | None = None,
) -> IndexedDocument:
    """A page, doc or minutes a connector read, chunked like a file of the same text.

    Its text opens with ``# heading`` (the title unless a page tree gives a trail).
    """
    doc_id = f"{source}/{doc_id}"
    text = f"# {heading or title}\n\n{body}"
    return IndexedDocument(
        doc_id=doc_id,
        source=source,
        kind=kind,
        title=title,
        text=text,
        chunks=chunk_markdown(text, doc_id),
        acl=acl,
        url=link_url(url),
        updated_at=updated_at,
        version=None if version is None else str(version),
    )


def file_documents(
    source: str,
    kind: str,
    doc_id: str,
    name: str,
    data: bytes,
    acl: list[str],
    problems: list[str],
    *,
    url: str | None = None,
    updated_at: str | None = None,
) -> list[IndexedDocument]:
    """A file a system holds (an attachment, a Drive file), read by its type under ``acl``.

    The system's permission is the file's: an e-mail attached to a page is readable by who
    may read the page, not by its recipients. A type no reader handles gives nothing; a file
    that cannot be read is one problem line.
    """
    from seekgraph.sources.ingestion.ingest import read_file

    stem = re.sub(r"[^\w. -]+", "-", Path(name).stem).strip(" .-") or "file"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{stem}{Path(name).suffix.lower()}"
        path.write_bytes(data)
        try:
            docs = read_file(Path(tmp), path, source, kind, acl, problems, {}) or []
        except IngestError as exc:
            problems.append(str(exc).replace(str(path), name))
            return []
    read_as = f"{source}/{stem}"  # the id the reader gave; the system's id replaces it
    for doc in docs:
        rename(doc, f"{source}/{doc_id}{doc.doc_id.removeprefix(read_as)}")
        doc.acl, doc.origin = list(acl), None
        doc.url = link_url(url) or doc.url
        doc.updated_at = updated_at or doc.updated_at
        if doc.title == stem.replace("-", " "):
            doc.title = name
    return docs


class Versions:
    """Which version of each item the last sync read (kept in the connector's cursor).

    An item read at the version it has now is not read again: ``kept`` when it gave documents
    (the index holds them), skipped when it gave none (an image, an unreadable file).
    """

    def __init__(self, cursor: str | None) -> None:
        self.before = versions_of(cursor)
        self.seen: dict[str, str] = {}
        self.kept: set[str] = set()

    def unchanged(self, key: str, version: str) -> bool:
        """True when ``key`` was read at ``version`` already (nothing to read now)."""
        was = self.before.get(key)
        if was in (version, f"empty {version}"):
            self.seen[key] = str(was)
            if was == version:
                self.kept.add(key)
            return True
        return False

    def read(self, key: str, version: str, docs: list[IndexedDocument]) -> list[IndexedDocument]:
        """Record that ``key`` was read at ``version`` and gave ``docs``."""
        self.seen[key] = version if docs else f"empty {version}"
        return docs

    def cursor(self) -> str:
        """The cursor that records them."""
        return json.dumps({"versions": self.seen})


def versions_of(cursor: str | None) -> dict[str, str]:
    """The item versions a connector's last cursor recorded (``{}`` for none)."""
    try:
        return dict(json.loads(cursor or "{}").get("versions", {}))
    except (ValueError, AttributeError):
        return {}
