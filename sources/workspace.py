"""A workspace: a folder with ``workspace.json`` (users, sources, channels) and the files.

Opening one syncs it into an embedded index (only what changed is re-indexed) and returns a
``SourceRegistry`` over it. The demo workspace ships inside this package.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from providers.embeddings import Embedder
from sources.base import User
from sources.embedded import EmbeddedIndex, EmbeddedSource, IndexedDocument
from sources.ingest import IngestError, read_chat_export, read_markdown_folder
from sources.registry import SourceRegistry


class WorkspaceError(ValueError):
    """A workspace folder that cannot be used; the message says what to fix."""


@dataclass
class SyncReport:
    """What a sync did."""

    indexed: int
    unchanged: int
    removed: int
    chunks: int
    seconds: float


def demo_workspace() -> Path:
    """The folder of the bundled demo workspace."""
    return Path(str(resources.files("sources").joinpath("demo")))


def load_config(root: Path) -> dict[str, Any]:
    """Read and check ``workspace.json``."""
    config_path = root / "workspace.json"
    if not root.is_dir():
        raise WorkspaceError(f"workspace {root} is not a readable folder")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorkspaceError(f"workspace {root} has no workspace.json") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise WorkspaceError(f"{config_path}: {exc}") from None
    if not isinstance(config.get("sources"), list) or not isinstance(config.get("users"), dict):
        raise WorkspaceError(f"{config_path}: needs a 'sources' list and a 'users' object")
    return dict(config)


def users_of(config: dict[str, Any]) -> list[User]:
    """The users listed in a workspace config."""
    return [
        User(name=name, groups=frozenset(info.get("groups", [])), display_name=info.get("name", ""))
        for name, info in config["users"].items()
    ]


#: Bump when ingestion changes what it writes, so existing indexes are rebuilt.
INDEX_FORMAT = "2"


def _fingerprint(root: Path) -> str:
    digest = hashlib.sha256(INDEX_FORMAT.encode())
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


def _documents(root: Path, spec: dict[str, Any], config: dict[str, Any]) -> list[IndexedDocument]:
    folder = root / spec.get("path", spec["name"])
    if not folder.is_dir():
        raise WorkspaceError(f"source {spec['name']!r}: folder {folder} does not exist")
    if spec.get("format") == "chat":
        return list(
            read_chat_export(folder, spec["name"], spec["kind"], config.get("channels", {}))
        )
    return list(read_markdown_folder(folder, spec["name"], spec["kind"], spec.get("acl", [])))


def sync_workspace(root: Path, index: EmbeddedIndex) -> SyncReport:
    """Index what changed in the workspace; remove what disappeared."""
    started = time.perf_counter()
    config = load_config(root)
    indexed = unchanged = removed = chunks = 0
    for spec in config["sources"]:
        try:
            docs = _documents(root, spec, config)
        except IngestError as exc:
            raise WorkspaceError(str(exc)) from None
        known = index.document_hashes(spec["name"])
        changed = [d for d in docs if known.get(d.doc_id) != d.content_hash]
        unchanged += len(docs) - len(changed)
        chunks += index.upsert(changed)
        indexed += len(changed)
        gone = set(known) - {d.doc_id for d in docs}
        index.delete(gone)
        removed += len(gone)
    index.set_meta("fingerprint", _fingerprint(root))
    return SyncReport(indexed, unchanged, removed, chunks, time.perf_counter() - started)


def open_workspace(
    root: Path, index_path: Path, embedder: Embedder
) -> tuple[SourceRegistry, SyncReport | None]:
    """A registry over the workspace, syncing its index first when any file changed."""
    config = load_config(root)
    try:
        index = EmbeddedIndex(index_path, embedder)
    except Exception as exc:  # sqlite3 raises several unrelated types for an unusable file
        raise WorkspaceError(f"cannot open index {index_path}: {exc}") from None
    report = None
    if index.get_meta("fingerprint") != _fingerprint(root):
        report = sync_workspace(root, index)
    registry = SourceRegistry(
        sources=[EmbeddedSource(index, s["name"], s["kind"]) for s in config["sources"]],
        users=users_of(config),
    )
    return registry, report
