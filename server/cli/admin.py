"""The ``seekgraph`` admin commands: ``index`` a folder, list or remove ``sources``, add ``keys``.

Kept apart from asking so ``seekgraph --help`` stays light; each imports what it uses.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from pathlib import Path

from seekgraph.server.cli.common import CliError, plural, settings_of, unknown_user
from seekgraph.server.settings import Settings
from seekgraph.sources.base import User
from seekgraph.sources.errors import WorkspaceError


def index_folder(args: argparse.Namespace) -> int:
    """Index a folder as a named source, re-indexing only what changed; print a summary."""
    from tqdm import tqdm

    from seekgraph.providers.embeddings import load_embedder
    from seekgraph.server.bootstrap import open_index, workspace_of
    from seekgraph.sources.ingestion.readers import checked_acl, unreadable_lines
    from seekgraph.sources.ingestion.slack_export import is_slack_export
    from seekgraph.sources.ingestion.workspace import (
        demo_workspace,
        load_config,
        people_of,
        register_source,
        sync_source,
        users_of,
    )

    settings = settings_of(args)
    folder = Path(args.path).expanduser().resolve()
    zipped = folder.is_file() and folder.suffix.lower() == ".zip"
    if not folder.exists():
        raise CliError(f"{args.path} does not exist (give a folder or a .zip export)")
    if not folder.is_dir() and not zipped:
        raise CliError(f"{args.path} is not a folder or a .zip export")
    if not args.acl and not zipped and not is_slack_export(folder):
        raise CliError("say who may read it: --acl group:everyone, --acl user:NAME, …")
    try:
        workspace = workspace_of(settings)
        config = load_config(workspace)
        checked_acl(list(args.acl), "--acl", people_of(config, lists=True))
    except WorkspaceError as exc:
        raise CliError(str(exc)) from None
    # Chat exports: channel membership is the ACL (the workspace's channel list, then the
    # export's own channels.json); --acl only covers channels that neither lists.
    channels = dict(config.get("channels", {})) if args.kind == "messages" else None
    if args.detach:
        people = people_of(config, lists=True)
        return _index_detached(args, settings, folder, channels, people, users_of(config))
    try:
        index = open_index(
            settings, workspace, load_embedder(settings.embedding_model, settings.embedding_threads)
        )
    except WorkspaceError as exc:
        raise CliError(str(exc)) from None
    files = 0 if zipped else sum(1 for p in folder.rglob("*") if p.is_file())
    bar = {"file": sys.stderr, "disable": None}  # no bars when stderr is not a terminal
    reading = tqdm(total=files, unit="file", desc=f"reading {args.source}", **bar)
    embedding = tqdm(total=0, unit="chunk", desc=f"embedding {args.source}", **bar)

    def embedded(done: int, total: int) -> None:
        embedding.total = total
        embedding.update(done - embedding.n)

    try:
        report = sync_source(
            index,
            folder,
            args.source,
            args.kind,
            list(args.acl),
            channels,
            progress=lambda _path: reading.update(1),
            embed_progress=embedded,
            people=people_of(config, lists=True),
            users=users_of(config),
        )
    except WorkspaceError as exc:
        raise CliError(str(exc)) from None
    finally:
        reading.close()
        embedding.close()
    register_source(
        index, {"name": args.source, "kind": args.kind, "path": str(folder), "acl": list(args.acl)}
    )
    for problem in report.problems:
        print(f"skipped: {problem}", file=sys.stderr)
    for renamed in report.renamed:
        print(f"renamed: {renamed}", file=sys.stderr)
    for channel, readers in sorted(report.channel_acls.items()):
        print(f"#{channel}: readable by {readers}")
    if report.passed:
        shown = ", ".join(report.passed[:5]) + (", …" if len(report.passed) > 5 else "")
        print(f"not read: {len(report.passed)} folders of build output, templates or tools "
              f"({shown})")  # fmt: skip
    if report.unsupported:
        kinds = Counter(Path(f).suffix.lower() or "(no suffix)" for f in report.unsupported)
        listed = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in kinds.most_common())
        print(f"not indexed: {len(report.unsupported)} files of types it does not read ({listed})")
    print(
        f"{args.source}: {plural(report.indexed, 'document')} indexed"
        f" ({plural(report.chunks, 'chunk')}), "
        f"{report.unchanged} unchanged, {report.removed} removed, "
        f"{len(report.problems)} skipped"
        + (f", {len(report.renamed)} renamed (two files, one id)" if report.renamed else "")
        + f", in {report.seconds:.1f} s"
    )
    for line in unreadable_lines(report.unreadable):
        print(line, file=sys.stderr)
    if workspace == demo_workspace().resolve():
        # a new user's own documents land beside the demo's: say so, and how to ask only them
        own = ", ".join(str(s["name"]) for s in config.get("sources", []))
        print(
            f"note: {args.source} was added to the bundled demo workspace, whose own sources "
            f"({own}) are searched with it; to search only yours: seekgraph ask … --source "
            f"{args.source}; a workspace of your own: --workspace (docs/sources.md)",
            file=sys.stderr,
        )
    return 0


def _index_detached(
    args: argparse.Namespace,
    settings: Settings,
    folder: Path,
    channels: dict[str, list[str]] | None,
    people: dict[str, str],
    users: list[User],
) -> int:
    """Read and chunk here; queue the embedding as batches for the workers; print the job."""
    from seekgraph.providers.embeddings import load_embedder
    from seekgraph.server.bootstrap import shared_index, workspace_of
    from seekgraph.server.runs.ingest import ingest_jobs
    from seekgraph.sources.ingestion.readers import unreadable, unreadable_lines
    from seekgraph.sources.ingestion.workspace import read_source

    if not settings.redis_url or settings.index_backend != "redis":
        raise CliError(
            "--detach hands the embedding to `seekgraph worker` processes through Redis: set "
            "SEEKGRAPH_REDIS_URL and SEEKGRAPH_INDEX_BACKEND=redis (or index without --detach)"
        )
    try:
        index = shared_index(
            settings,
            workspace_of(settings),
            load_embedder(settings.embedding_model, settings.embedding_threads),
        )
        read = read_source(folder, args.source, args.kind, list(args.acl), channels, people=people)
    except WorkspaceError as exc:
        raise CliError(str(exc)) from None
    assert index is not None
    spec = {"name": args.source, "kind": args.kind, "path": str(folder), "acl": list(args.acl)}
    try:
        job_id, batches = ingest_jobs(index.r, settings.ingest_queue).plan(
            index, spec, read.documents, read.problems
        )
    finally:
        index.close()
    for problem in read.problems:
        print(f"skipped: {problem}", file=sys.stderr)
    for renamed in read.renamed:
        print(f"renamed: {renamed}", file=sys.stderr)
    print(
        f"{args.source}: {len(read.documents)} documents read; ingest job {job_id} queued "
        f"({batches} embedding batches for the workers)"
    )
    print(f"follow it: seekgraph ingest show {job_id}", file=sys.stderr)
    for line in unreadable_lines(unreadable(read.documents, users)):
        print(line, file=sys.stderr)
    return 0


def ingest_command(args: argparse.Namespace) -> int:
    """``seekgraph ingest list|show``: the ingest jobs and their progress (Redis)."""
    import json

    import redis

    from seekgraph.server.runs.ingest import ingest_jobs

    settings = settings_of(args)
    if not settings.redis_url:
        raise CliError("ingest jobs live in Redis: set SEEKGRAPH_REDIS_URL")
    client = redis.Redis.from_url(settings.redis_url)
    try:
        jobs = ingest_jobs(client, settings.ingest_queue)
        if args.ingest_command == "list":
            for job in jobs.recent(args.limit):
                print(f"{job['job_id']}\t{job.get('source', '')}\t{job['status']}\t"
                      f"{job['done']}/{job['batches']} batches")  # fmt: skip
            return 0
        found = jobs.status(args.job_id)
        if found is None:
            raise CliError(f"no ingest job {args.job_id!r} (jobs are kept 7 days)")
        print(json.dumps(found, indent=2, sort_keys=True))
        return 1 if found["status"] == "failed" else 0
    finally:
        client.close()


def manage_sources(args: argparse.Namespace) -> int:
    """List the workspace's and the added sources, or remove an added one."""
    from seekgraph.providers.embeddings import load_embedder
    from seekgraph.server.bootstrap import open_index, workspace_of
    from seekgraph.sources.ingestion.readers import readable_counts
    from seekgraph.sources.ingestion.workspace import (
        load_config,
        registered_sources,
        unregister_source,
        users_of,
    )

    settings = settings_of(args)
    workspace = workspace_of(settings)
    try:
        config = load_config(workspace)
    except WorkspaceError as exc:
        raise CliError(str(exc)) from None
    try:
        index = open_index(
            settings, workspace, load_embedder(settings.embedding_model, settings.embedding_threads)
        )
    except WorkspaceError as exc:
        raise CliError(str(exc)) from None
    try:
        if args.action == "list":
            users = users_of(config)
            listed = [(spec, "workspace") for spec in config["sources"]] + [
                (spec, f"added from {spec['path']}") for spec in registered_sources(index)
            ]
            for spec, origin in listed:
                documents = index.count(spec["name"])[0]
                counts = readable_counts(index, spec["name"], users) if documents else {}
                readers = (
                    f"{plural(documents, 'document')}; readable by "
                    + ", ".join(f"{u}: {n}" for u, n in counts.items())
                    if documents
                    else "no documents indexed yet"
                )
                print(f"{spec['name']}\t{spec['kind']}\t{origin}\t{readers}")
            if not settings.workspace:  # not someone's own workspace: say whose it is
                print(
                    "seekgraph: the bundled demo workspace's sources; pass --workspace DIR, or"
                    " set SEEKGRAPH_WORKSPACE, for the workspace you indexed into",
                    file=sys.stderr,
                )
            if not listed:  # not a silent nothing: a data directory other than the one indexed?
                print(
                    f"seekgraph: no sources in workspace {workspace} with the index in "
                    f"{settings.data_dir} (SEEKGRAPH_DATA_DIR); add a folder with "
                    "`seekgraph index FOLDER --source NAME`",
                    file=sys.stderr,
                )
            return 0
        if not args.name:
            raise CliError("say which source to remove: seekgraph sources remove NAME")
        try:
            removed = unregister_source(index, args.name)
        except WorkspaceError as exc:
            raise CliError(str(exc)) from None
        print(f"{args.name}: removed with its {plural(removed, 'document')}")
        return 0
    finally:
        index.close()


def add_key(args: argparse.Namespace) -> int:
    """Create an API key, store its hash, print the key once."""
    from seekgraph.server.auth import add_key_to_file
    from seekgraph.server.bootstrap import workspace_of
    from seekgraph.sources.ingestion.workspace import load_config

    settings = settings_of(args)
    try:
        users = sorted(load_config(workspace_of(settings))["users"])
    except WorkspaceError as exc:
        raise CliError(str(exc)) from None
    if args.user not in users:
        raise unknown_user(args.user, users, settings)
    if args.redis:
        if not settings.redis_url:
            raise CliError("--redis needs SEEKGRAPH_REDIS_URL")
        from seekgraph.server.auth import add_key_to_redis

        print(asyncio.run(add_key_to_redis(settings.redis_url, args.user)))
        return 0
    path = Path(args.file) if args.file else settings.api_keys_file
    if path is None:
        raise CliError("say where keys are kept: --file PATH, --redis or SEEKGRAPH_API_KEYS_FILE")
    print(add_key_to_file(path, args.user))
    if path != settings.api_keys_file:
        print(
            f"seekgraph: start the server with SEEKGRAPH_API_KEYS_FILE={path.resolve()}",
            file=sys.stderr,
        )
    return 0


def sync_connectors(args: argparse.Namespace) -> int:
    """Sync every configured connector once; print what each did (exit 1 when one failed)."""
    from seekgraph.graph.api import sync_connector
    from seekgraph.server.bootstrap import build_services

    services, _ = build_services(settings_of(args))
    connectors = services.registry.connectors
    if not connectors:
        raise CliError(
            "no live connector is configured (set SEEKGRAPH_SLACK_TOKEN, "
            "SEEKGRAPH_CONFLUENCE_URL, SEEKGRAPH_GDRIVE_CREDENTIALS or SEEKGRAPH_FEISHU_APP_ID)"
        )
    failed = 0
    for connector, index in connectors:
        done = sync_connector(index, connector)
        if done.busy:
            print(f"{done.source}: another instance is syncing it now; skipped")
            continue
        if done.error:
            failed += 1
            print(
                f"{done.source}: failed — {done.error}; the last good sync stays", file=sys.stderr
            )
            continue
        print(
            f"{done.source}: {done.indexed} documents indexed, {done.unchanged} unchanged, "
            f"{done.removed} removed, {done.groups} groups, {done.seconds:.1f} s"
        )
        for problem in done.problems:
            print(f"{done.source}: skipped {problem}", file=sys.stderr)
        if done.unknown:
            print(
                f"{done.source}: {len(done.unknown)} people it shares with are no workspace user "
                f"and read nothing here (`seekgraph connect` names them)",
                file=sys.stderr,
            )
    return 1 if failed else 0


def check_connectors(args: argparse.Namespace) -> int:
    """Check each configured connector live, without indexing: what it sees, whom it knows.

    Prints the sync state kept with the index (last good sync, last error), then reads the
    system once (items already read at their version are not downloaded again) and says how
    many documents and groups it sees, and which of the people it shares with are no
    workspace user (add them to ``workspace.json`` to let them read). Exit 1 when a
    connector cannot read its system; nothing is written.
    """
    import time

    from seekgraph.graph.api import ConnectorError, connector_state
    from seekgraph.server.bootstrap import build_services

    services, _ = build_services(settings_of(args))
    connectors = [(c, i) for c, i in services.registry.connectors if args.name in (None, c.name)]
    if not connectors:
        known = ", ".join(c.name for c, _ in services.registry.connectors) or "none"
        raise CliError(f"no live connector {args.name or ''} is configured (configured: {known})")
    failed = 0

    def when(at: float | None) -> str:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at)) if at else "never"

    for connector, index in connectors:
        kept = connector_state(index, connector.name)
        line = f"{connector.name} ({connector.kind}): last good sync {when(kept.get('at'))}"
        if kept.get("error"):
            line += f"; last failed {when(kept.get('failed_at'))}: {kept['error']}"
        print(line)
        try:
            snap = connector.snapshot(kept.get("cursor"))
        except ConnectorError as exc:
            failed += 1
            print(f"{connector.name}: cannot read it now — {exc}", file=sys.stderr)
            continue
        seen = len(snap.documents) + len(snap.kept)
        print(f"{connector.name}: ok — {seen} documents and {len(snap.groups)} groups visible")
        if snap.unknown:
            print(
                f"{connector.name}: no workspace user (they read nothing here; add their e-mail "
                f"to workspace.json users): {', '.join(sorted(snap.unknown))}"
            )
        for problem in snap.problems:
            print(f"{connector.name}: cannot read {problem}", file=sys.stderr)
    return 1 if failed else 0
