"""A workspace: a folder with ``workspace.json`` (users, sources, channels) and the files.

Opening one syncs it into an embedded index (only what changed is re-indexed) and returns a
``SourceRegistry`` over it. The demo workspace ships inside this package.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from seekgraph.providers.embeddings import Embedder
from seekgraph.sources.base import User
from seekgraph.sources.errors import WorkspaceError as WorkspaceError
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.index_source import EmbeddedSource, apply_documents
from seekgraph.sources.ingestion.archives import unzipped
from seekgraph.sources.ingestion.chunking import IngestError
from seekgraph.sources.ingestion.ingest import Ingested, files_under, read_folder
from seekgraph.sources.ingestion.readers import checked_acl, unreadable, unreadable_lines
from seekgraph.sources.registry import SourceRegistry


@dataclass
class SyncReport:
    """What a sync did."""

    indexed: int
    unchanged: int
    removed: int
    chunks: int
    seconds: float
    problems: list[str] = field(default_factory=list)
    files: int = 0
    channel_acls: dict[str, str] = field(default_factory=dict)
    """Chat channel → where its ACL came from."""
    unsupported: list[str] = field(default_factory=list)
    """Files of types the ingester does not read."""
    unreadable: dict[str, list[str]] = field(default_factory=dict)
    """Why no workspace user can read them → the documents (``unreadable``)."""
    renamed: list[str] = field(default_factory=list)
    """Documents indexed under another id than their file's (two files, one id)."""
    passed: list[str] = field(default_factory=list)
    """Folders not read: hidden ones, a build's output, templates (``files_under``)."""

    def plus(self, other: SyncReport) -> SyncReport:
        """Two reports added up."""
        return SyncReport(
            self.indexed + other.indexed,
            self.unchanged + other.unchanged,
            self.removed + other.removed,
            self.chunks + other.chunks,
            self.seconds + other.seconds,
            [*self.problems, *other.problems],
            self.files + other.files,
            {**self.channel_acls, **other.channel_acls},
            [*self.unsupported, *other.unsupported],
            {
                why: [*self.unreadable.get(why, []), *other.unreadable.get(why, [])]
                for why in {**self.unreadable, **other.unreadable}
            },
            [*self.renamed, *other.renamed],
            [*self.passed, *other.passed],
        )


def demo_workspace() -> Path:
    """The folder of the bundled demo workspace (its real path: a checkout reaches it by a link)."""
    return Path(str(resources.files("seekgraph.sources").joinpath("demo"))).resolve()


def workspace_folder(chosen: Path | None) -> Path:
    """The workspace folder in use: the one chosen, else the bundled demo."""
    return (chosen or demo_workspace()).expanduser().resolve()


def user_names(root: Path) -> list[str]:
    """The users ``workspace.json`` lists (read without indexing anything)."""
    return list(load_config(root)["users"])


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
INDEX_FORMAT = "7"


def _fingerprint(root: Path) -> str:
    digest = hashlib.sha256(INDEX_FORMAT.encode())
    for path in files_under(root)[0]:
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


KINDS = ("kb", "docs", "messages", "notes")


def people_of(config: dict[str, Any], lists: bool = False) -> dict[str, str]:
    """Who an e-mail address or a chat handle is (keys in lower case).

    From ``users.<name>.email`` (a string or a list) and ``users.<name>.slack`` (a handle or
    a Slack id); the user's own name counts as a handle. With ``lists``, a group's addresses
    too (``groups.<name>.email``), as ``group:<name>``: files read here (mail to a list);
    live connectors map people only.
    """
    out: dict[str, str] = {}
    for name, info in config.get("users", {}).items():
        out[name.lower()] = name
        if not isinstance(info, dict):
            continue
        emails = info.get("email") or []
        for value in [emails] if isinstance(emails, str) else emails:
            out[str(value).lower()] = name
        if isinstance(info.get("slack"), str):
            out[info["slack"].lower()] = name
    # a group's addresses (a mailing list): mail to one is readable by the group's members
    for group, info in (config.get("groups") or {}).items() if lists else []:
        emails = info.get("email") or [] if isinstance(info, dict) else []
        for value in [emails] if isinstance(emails, str) else emails:
            out.setdefault(str(value).lower(), f"group:{group}")
    return out


def list_members(config: dict[str, Any]) -> dict[str, set[str]]:
    """A workspace group's addresses (``groups.<name>.email``) → the users in that group."""
    out: dict[str, set[str]] = {}
    for address, principal in people_of(config, lists=True).items():
        if principal.startswith("group:"):
            group = principal.removeprefix("group:")
            out[address] = {u.name for u in users_of(config) if group in u.groups}
    return out


def read_source(
    folder: Path,
    name: str,
    kind: str,
    acl: list[str],
    channels: dict[str, list[str]] | None = None,
    progress: Callable[[Path], None] | None = None,
    people: dict[str, str] | None = None,
) -> Ingested:
    """Read one source folder or zip into documents with their chunks (nothing embedded)."""
    if kind not in KINDS:
        raise WorkspaceError(f"source {name!r}: kind must be one of {', '.join(KINDS)}")
    checked_acl(acl, f"source {name!r}", people)
    for channel, readers in (channels or {}).items():
        if isinstance(readers, list):
            checked_acl(readers, f"channel {channel!r}", people)
    if folder.is_file() and folder.suffix.lower() == ".zip":
        try:
            with unzipped(folder) as root:
                return read_folder(root, name, kind, acl, channels, progress, people)
        except IngestError as exc:
            raise WorkspaceError(f"source {name!r}: {exc}") from None
    if folder.is_dir():
        return read_folder(folder, name, kind, acl, channels, progress, people)
    raise WorkspaceError(f"source {name!r}: folder {folder} does not exist")


def sync_source(
    index: EmbeddedIndex,
    folder: Path,
    name: str,
    kind: str,
    acl: list[str],
    channels: dict[str, list[str]] | None = None,
    progress: Callable[[Path], None] | None = None,
    embed_progress: Callable[[int, int], None] | None = None,
    people: dict[str, str] | None = None,
    users: list[User] | None = None,
) -> SyncReport:
    """Index what changed in one source folder or zip (by content hash); remove what is gone.

    With the workspace's ``users``, the report names the documents none of them may read.
    """
    started = time.perf_counter()
    read = read_source(folder, name, kind, acl, channels, progress, people)
    changed, gone, chunks = apply_documents(index, name, read.documents, embed_progress)
    # the source's sync state, kept with the index (operators read it: GET /metrics)
    state = {"at": time.time(), "indexed": changed, "problems": len(read.problems)}
    index.set_meta(f"synced:{name}", json.dumps(state))
    return SyncReport(
        indexed=changed,
        unchanged=len(read.documents) - changed,
        removed=gone,
        chunks=chunks,
        seconds=time.perf_counter() - started,
        problems=read.problems,
        files=read.files,
        channel_acls=read.channel_acls,
        unsupported=read.unsupported,
        unreadable=unreadable(read.documents, users) if users is not None else {},
        renamed=read.renamed,
        passed=read.passed,
    )


def sync_workspace(
    root: Path, index: EmbeddedIndex, progress: Callable[[str], None] | None = None
) -> SyncReport:
    """Index what changed in the workspace; remove what disappeared.

    ``progress`` hears one line per source as it is done.
    """
    started = time.perf_counter()
    config = load_config(root)
    total = SyncReport(0, 0, 0, 0, 0.0)
    for n, spec in enumerate(config["sources"], start=1):
        channels = config.get("channels", {}) if spec.get("format") == "chat" else None
        report = sync_source(
            index,
            root / spec.get("path", spec["name"]),
            spec["name"],
            spec["kind"],
            spec.get("acl", []),
            channels,
            people=people_of(config, lists=True),
            users=users_of(config),
        )
        total = total.plus(report)
        if progress is not None:
            progress(
                f"{spec['name']} ({n}/{len(config['sources'])}): {report.indexed} documents "
                f"indexed, {report.unchanged} unchanged ({report.chunks} chunks) in "
                f"{report.seconds:.1f} s"
            )
    index.set_meta("fingerprint", _fingerprint(root))
    total.seconds = time.perf_counter() - started
    if progress is not None:
        for line in unreadable_lines(total.unreadable):
            progress(line)
    return total


def registered_sources(index: EmbeddedIndex) -> list[dict[str, Any]]:
    """Sources added with ``seekgraph index`` (kept in the index itself)."""
    return list(json.loads(index.get_meta("extra_sources") or "[]"))


def register_source(index: EmbeddedIndex, spec: dict[str, Any]) -> None:
    """Remember a source added with ``seekgraph index`` so every run can search it."""
    specs = [s for s in registered_sources(index) if s["name"] != spec["name"]]
    index.set_meta("extra_sources", json.dumps([*specs, spec]))


def unregister_source(index: EmbeddedIndex, name: str) -> int:
    """Forget a source added with ``seekgraph index`` and delete its documents; how many."""
    specs = registered_sources(index)
    if name not in {s["name"] for s in specs}:
        raise WorkspaceError(
            f"no source {name!r} was added with seekgraph index "
            f"(added: {', '.join(s['name'] for s in specs) or 'none'}); sources of the "
            "workspace itself are removed from its workspace.json"
        )
    doc_ids = list(index.document_hashes(name))
    index.delete(doc_ids)
    index.set_meta("extra_sources", json.dumps([s for s in specs if s["name"] != name]))
    return len(doc_ids)


def open_workspace(
    root: Path,
    index_path: Path,
    embedder: Embedder,
    index: Any = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[SourceRegistry, SyncReport | None]:
    """A registry over the workspace, syncing its index first when any file changed.

    ``index`` may be given (a ``RedisIndex``); by default the embedded SQLite index at
    ``index_path`` is used. ``progress`` hears what indexing does (nothing when no file
    changed): a first line, then one per source.
    """
    config = load_config(root)
    if index is None:
        try:
            index = EmbeddedIndex(index_path, embedder)
        except Exception as exc:  # sqlite3 raises several unrelated types for an unusable file
            raise WorkspaceError(f"cannot open index {index_path}: {exc}") from None
    report = None
    known = index.get_meta("fingerprint")
    if known != _fingerprint(root):
        if progress is not None and config["sources"]:  # (a workspace of added sources only:
            # `seekgraph index` indexed them; nothing of its own to index)
            what = "the demo workspace" if root == demo_workspace() else f"workspace {root}"
            progress(
                f"indexing {what} (first run only)…"
                if known is None
                else f"indexing what changed in {what}…"
            )
        report = sync_workspace(root, index, progress)
    specs = [*config["sources"], *registered_sources(index)]
    registry = SourceRegistry(
        sources=[EmbeddedSource(index, s["name"], s["kind"]) for s in specs],
        users=users_of(config),
    )
    registry.refresh = added_sources_follower(index, {s["name"] for s in config["sources"]})
    return registry, report


def added_sources_follower(index: Any, fixed: set[str]) -> Callable[[SourceRegistry], None]:
    """A registry refresh that follows the sources added to ``index``.

    What ``seekgraph index`` (or an ingest job) added since is searched, what ``sources
    remove`` took away is not; the workspace's own sources (``fixed``) stay.
    """
    followed: set[str] = set()

    def refresh(registry: SourceRegistry) -> None:
        specs = {s["name"]: s for s in registered_sources(index) if s["name"] not in fixed}
        for name in followed - set(specs):
            registry.remove(name)
            followed.discard(name)
        for name, spec in specs.items():
            if name not in followed:
                registry.add(EmbeddedSource(index, name, spec["kind"]))
                followed.add(name)

    return refresh
