"""The ``seekgraph`` operator commands: ``audit`` (who saw what) and ``runs show`` (a run's cost).

Both read the audit store the server writes: the Redis stream when ``SEEKGRAPH_REDIS_URL`` is
set, otherwise ``audit.sqlite`` under the data directory.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import re
import time
from typing import Any

from seekgraph.server.audit import AuditEntry, AuditLog, RedisAuditLog, SqliteAuditLog
from seekgraph.server.cli.common import CliError, settings_of
from seekgraph.server.settings import Settings

_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd])$")


def since_of(text: str | None) -> float | None:
    """``--since``: ``24h``, ``7d``, ``30m``, an ISO date or time (UTC), or epoch seconds."""
    if not text:
        return None
    ago = _AGO.match(text.strip())
    if ago:
        unit = {"s": 1, "m": 60, "h": 3600, "d": 86_400}[ago.group(2)]
        return time.time() - float(ago.group(1)) * unit
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise CliError(
            f"--since {text!r}: give 24h, 7d, 30m, an ISO date (2026-12-01) or epoch seconds"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()


def open_audit(settings: Settings) -> AuditLog:
    """The store the server writes."""
    if settings.redis_url:
        import redis.asyncio as aioredis

        return RedisAuditLog(aioredis.from_url(settings.redis_url), settings.audit_retention_days)
    return SqliteAuditLog(settings.data_dir / "audit.sqlite", settings.audit_retention_days)


def line_of(entry: AuditEntry) -> str:
    """One entry as a line a person reads."""
    when = dt.datetime.fromtimestamp(entry.ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    what = f"{entry.action} {entry.flow} {entry.run_id}".strip()
    cost = f" {entry.tokens} tokens ${entry.cost_usd:.4f}" if entry.tokens else ""
    shown = ", ".join(entry.shown) or "nothing"
    return f"{when} {entry.user} (key {entry.key_id or '-'}, {entry.door}) {what}: {shown}{cost}"


async def audit_command(args: argparse.Namespace) -> int:
    """``seekgraph audit``: entries, oldest first."""
    entries = await open_audit(settings_of(args)).query(
        user=args.user, doc=args.doc, since=since_of(args.since), limit=args.limit
    )
    if args.usage:
        return print_usage(entries, args.json)
    if args.json:
        print(json.dumps([dataclasses.asdict(e) for e in entries], ensure_ascii=False, indent=1))
    else:
        for entry in entries:
            print(line_of(entry))
    return 0


def print_usage(entries: list[AuditEntry], as_json: bool) -> int:
    """Runs, model tokens and estimated cost per user per day (UTC)."""
    days: dict[tuple[str, str], dict[str, Any]] = {}
    for e in entries:
        if e.action != "run":
            continue
        day = dt.datetime.fromtimestamp(e.ts, dt.UTC).date().isoformat()
        row = days.setdefault((day, e.user), {"day": day, "user": e.user, "runs": 0})
        row["runs"] += 1
        row["tokens"] = row.get("tokens", 0) + e.tokens
        row["cost_usd"] = round(row.get("cost_usd", 0.0) + e.cost_usd, 6)
    rows = [days[k] for k in sorted(days)]
    if as_json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            spent = f"{r['tokens']} tokens, ${r['cost_usd']:.4f}"
            print(f"{r['day']} {r['user']}: {r['runs']} runs, {spent}")
    return 0


async def runs_show(args: argparse.Namespace) -> int:
    """``seekgraph runs show RUN``: who ran it, how it ended, what it showed and cost."""
    entries = [
        e
        for e in await open_audit(settings_of(args)).query(limit=100_000)
        if e.action == "run" and e.run_id == args.run_id
    ]
    if not entries:
        raise CliError(f"no run {args.run_id!r} in the audit trail")
    out: dict[str, Any] = dataclasses.asdict(entries[-1])
    if args.json:
        print(json.dumps(out, ensure_ascii=False, indent=1))
    else:
        for key in ("run_id", "thread_id", "flow", "user", "door", "status", "tokens", "cost_usd"):
            print(f"{key}: {out[key]}")
        print(f"shown: {', '.join(out['shown']) or 'nothing'}")
    return 0
