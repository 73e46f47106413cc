"""What every ``seekgraph`` command shares: its error type and its settings."""

from __future__ import annotations

import argparse
import sys
import types
from dataclasses import Field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin, get_type_hints

from seekgraph.graph.api import UnknownUserError
from seekgraph.graph.context import GROUPS, REQUEST_GROUPS, Context
from seekgraph.server.settings import Settings

if TYPE_CHECKING:
    from seekgraph.nodes.plumbing.services import Services


class CliError(Exception):
    """A problem the person can fix; printed as one line, exit code 2."""


def settings_of(args: argparse.Namespace) -> Settings:
    """Settings from the environment, with the command's ``--workspace`` when given."""
    settings = Settings()
    if getattr(args, "workspace", None):
        settings = settings.model_copy(update={"workspace": Path(args.workspace)})
    return settings


def _request_fields() -> list[tuple[str, Field[Any], Any]]:
    """Every knob a run request sets: its dest (``research.report_words``), field and type."""
    out: list[tuple[str, Field[Any], Any]] = []
    for group, kind in (("", Context), *((g, GROUPS[g]) for g in REQUEST_GROUPS)):
        hints = get_type_hints(kind)
        for f in fields(kind):
            if f.metadata.get("request"):
                out.append((f"{group}.{f.name}" if group else f.name, f, hints[f.name]))
    return out


def add_knobs(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """One option per per-run knob of ``Context`` (the run request's), described as there.

    A tuple knob (``sources``) is a repeatable singular option (``--source``); a grouped knob
    is named by its own name (``research.report_words`` is ``--report-words``).
    """
    for dest, f, kind in _request_fields():
        if f.name in skip:
            continue
        if get_origin(kind) in (Union, types.UnionType):  # X | None
            kind = next(a for a in get_args(kind) if a is not type(None))
        options: dict[str, Any] = {"dest": dest, "help": f.metadata["description"]}
        flag = "--" + f.name.replace("_", "-")
        if get_origin(kind) is tuple:
            flag = flag.removesuffix("s")
            options |= {"action": "append", "default": [], "metavar": flag[2:].upper()}
        elif get_origin(kind) is Literal:
            options |= {"choices": list(get_args(kind)), "default": f.default}
        elif kind is bool:
            options |= {"action": "store_true"}
        else:
            options |= {"type": kind, "default": None, "metavar": f.name.upper()}
        parser.add_argument(flag, **options)


def knobs_of(args: argparse.Namespace) -> dict[str, Any]:
    """The knobs given on the command line, grouped, ready for ``Context(**knobs)``."""
    knobs: dict[str, Any] = {}
    for dest, _, _ in _request_fields():
        value = getattr(args, dest, None)
        if value is None:
            continue
        value = tuple(value) if isinstance(value, list) else value
        group, _, name = dest.rpartition(".")
        (knobs.setdefault(group, {}) if group else knobs)[name] = value
    return knobs


def plural(count: int, word: str) -> str:
    """A count and its noun: 1 document, 2 documents."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def unknown_user(name: str, users: list[str], settings: Settings) -> CliError:
    """An unknown user's error; on the bundled demo workspace, how to name one's own."""
    demo = (
        ""
        if settings.workspace
        else "; these are the bundled demo's users: pass --workspace DIR, or set"
        " SEEKGRAPH_WORKSPACE, for the workspace you indexed into"
    )
    return CliError(f"unknown user {name!r} (users here: {', '.join(users)}){demo}")


def user_of_args(args: argparse.Namespace, settings: Settings, services: Services) -> str:
    """The asking user: ``--user`` or ``SEEKGRAPH_USER``, known to the workspace."""
    name = args.user or settings.user
    known = [u.name for u in services.registry.users()]
    if not name:
        raise CliError(f"say who is asking with --user NAME (users here: {', '.join(known)})")
    try:
        services.registry.user(name)
    except UnknownUserError:
        raise unknown_user(name, known, settings) from None
    return str(name)


def services_and_user(args: argparse.Namespace, settings: Settings) -> tuple[Any, Any, str]:
    """The workspace's services (indexing what changed), its sync report, the asking user.

    A workspace that cannot be used, or an unknown user, is a ``CliError`` saying what to fix.
    """
    from seekgraph.graph.api import WorkspaceError, workspace_users

    try:  # an unknown user is told so before anything is indexed, or the graph loaded
        users = workspace_users(settings.workspace)
    except WorkspaceError as exc:
        raise CliError(str(exc)) from None
    name = args.user or settings.user
    if not name:
        raise CliError(f"say who is asking with --user NAME (users here: {', '.join(users)})")
    if name not in users:
        raise unknown_user(name, list(users), settings)
    from seekgraph.server.bootstrap import build_services

    def progress(line: str) -> None:
        print(f"[index] {line}", file=sys.stderr, flush=True)

    try:
        services, report = build_services(settings, progress)
    except WorkspaceError as exc:
        raise CliError(str(exc)) from None
    return services, report, user_of_args(args, settings, services)
