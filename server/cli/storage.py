"""``seekgraph admin storage``: what the deployment's Redis holds, and retention applied now."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from seekgraph.server.settings import Settings


def add_admin_parser(sub: Any) -> None:
    """``seekgraph admin storage [--prune] [--json]``."""
    admin = sub.add_parser("admin", help="operate a deployment: what its Redis holds")
    admin_sub = admin.add_subparsers(dest="admin_command", required=True)
    storage = admin_sub.add_parser(
        "storage",
        help="Redis size by key family, threads past half their retention; --prune applies "
        "the retention now (without it: a dry run saying what would go)",
    )
    storage.add_argument("--prune", action="store_true", help="delete and renew, not a dry run")
    storage.add_argument("--json", action="store_true")


async def storage_command(args: argparse.Namespace, settings: Settings) -> int:
    """Print sizes by key family and the threads past half their retention; prune if asked."""
    from langgraph.checkpoint.redis.aio import AsyncRedisSaver

    from seekgraph.server.cli.run_records import redis_of
    from seekgraph.server.runs.retention import RedisRetention, prune, seconds_of, threads_past_half
    from seekgraph.server.runs.storage import family_sizes

    client = await redis_of(settings, "admin storage")
    keep_s = seconds_of(settings.retention_minutes)
    try:
        saver: Any = AsyncRedisSaver(redis_client=client)
        await saver.asetup()
        retention = RedisRetention(client, saver, keep_s, settings.queue)
        sizes = await family_sizes(client)
        past, unmanaged = await threads_past_half(client, keep_s)
        report = await prune(retention, dry_run=not args.prune)
        after = await family_sizes(client) if args.prune else None
    finally:
        await client.aclose()
    out = {
        "retention_minutes": settings.retention_minutes,
        "families": {f: {"keys": sizes.keys[f], "bytes": sizes.bytes[f]} for f in sizes.keys},
        "total": {"keys": sizes.total_keys, "bytes": sizes.total_bytes},
        "threads_past_half_retention": past,
        "threads_without_expiry": unmanaged,
        "prune": {
            "dry_run": not args.prune,
            **{k: len(v) if isinstance(v, list) else v for k, v in asdict(report).items()},
        },
    }
    if after is not None:
        out["after"] = {"keys": after.total_keys, "bytes": after.total_bytes}
    if args.json:
        print(json.dumps(out, indent=2))  # noqa: T201 - the command's output
        return 0
    keep = (
        "kept for ever (SEEKGRAPH_RETENTION_MINUTES=0)"
        if keep_s is None
        else f"{settings.retention_minutes:g} minutes after last use"
    )
    lines = [f"retention: {keep}", "", f"{'family':<20} {'keys':>9} {'bytes':>13}"]
    for family in sorted(sizes.keys, key=lambda f: -sizes.bytes[f]):
        lines.append(f"{family:<20} {sizes.keys[family]:>9} {sizes.bytes[family]:>13,}")
    lines.append(f"{'total':<20} {sizes.total_keys:>9} {sizes.total_bytes:>13,}")
    lines += [
        "",
        f"threads past half their retention: {past}",
        f"threads without expiry: {unmanaged}",
        "",
        ("pruned" if args.prune else "dry run — would prune")
        + f": {len(report.expired)} of {report.threads} threads ({report.keys} keys, "
        f"{report.bytes:,} bytes) past retention or orphaned; {len(report.renewed)} renewed "
        f"(keys without expiry); {report.running} held by a run, left alone",
    ]
    if not args.prune and (report.expired or report.renewed):
        lines.append("run with --prune to do it")
    print("\n".join(lines))  # noqa: T201 - the command's output
    return 0
