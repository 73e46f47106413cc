"""Who can read what was indexed: ACLs checked at index time, documents nobody can read.

A document whose ACL names no workspace user answers nobody's question, and its readers
only learn it from "Nothing in your sources matched". Index time says so instead: an ACL
entry in no known form is refused with its fix, the summary names the documents no
workspace user can read (per reason, with what to add to ``workspace.json``), and
``seekgraph sources list`` counts per source what each user can read.
"""

from __future__ import annotations

from typing import Any

from seekgraph.sources.base import User
from seekgraph.sources.errors import WorkspaceError
from seekgraph.sources.indexes.index_source import IndexedDocument


def checked_acl(acl: list[str], where: str, users: dict[str, Any] | None = None) -> list[str]:
    """``acl`` when every entry is ``group:NAME`` or ``user:NAME``, else ``WorkspaceError``.

    An entry in no known form would make the documents readable by nobody, silently; the
    error says which entry and what it probably meant (``everyone`` → ``group:everyone``).
    """
    for entry in acl:
        kind, colon, name = str(entry).partition(":")
        if colon and kind in ("user", "group") and name.strip() and name == name.strip():
            continue
        word = (name if colon else kind).strip() or "NAME"
        guess = f"user:{word}" if word in (users or {}) else f"group:{word}"
        raise WorkspaceError(
            f"{where}: ACL entry {entry!r} is not group:NAME or user:NAME, so nobody could "
            f"read what it covers; did you mean {guess}?"
        )
    return acl


def unreadable(documents: list[IndexedDocument], users: list[User]) -> dict[str, list[str]]:
    """The documents no workspace user may read, by why (what their ACLs name)."""
    granted = frozenset().union(*(u.principals for u in users))
    out: dict[str, list[str]] = {}
    for doc in documents:
        if granted & set(doc.acl):
            continue
        out.setdefault(_why_unreadable(doc.acl), []).append(doc.doc_id)
    return out


def _why_unreadable(acl: list[str]) -> str:
    if not acl:
        return "with an empty ACL: index them with --acl group:NAME (or list who may read them)"
    reasons = []
    if any(a.startswith("user:slack:") for a in acl):
        reasons.append(
            "Slack users no workspace user is: give those users their Slack handle in "
            'workspace.json ("users": {"NAME": {"slack": "their handle or U… id"}}) and index again'
        )
    if any(a.startswith("user:") and "@" in a for a in acl):
        reasons.append(
            'addresses no workspace user or group has: add each as a user\'s "email" (a '
            'list\'s as a group\'s: "groups": {"NAME": {"email": "list@…"}}) in workspace.json '
            "and index again"
        )
    if any(a.startswith("group:") for a in acl):
        named = sorted({a for a in acl if a.startswith("group:")})[:3]
        reasons.append(
            f"groups no workspace user is in ({', '.join(named)}): add the group to users' "
            '"groups" in workspace.json, or index with --acl naming a group they are in'
        )
    if not reasons:
        named = sorted(acl)[:3]
        reasons.append(
            f'users workspace.json does not list ({", ".join(named)}): add them to its "users"'
        )
    return "readable only by " + "; or by ".join(reasons)


def unreadable_lines(nobody: dict[str, list[str]], shown: int = 5) -> list[str]:
    """The summary's warning: how many documents nobody can read, why, which, how to fix."""
    total = sum(len(ids) for ids in nobody.values())
    if not total:
        return []
    lines = [f"warning: {total} documents are readable by no workspace user:"]
    for why, ids in sorted(nobody.items(), key=lambda kv: -len(kv[1])):
        listed = ", ".join(ids[:shown]) + (
            f", … ({len(ids) - shown} more)" if len(ids) > shown else ""
        )
        lines.append(f"  {len(ids)} {why} — {listed}")
    return lines


def readable_counts(index: Any, source: str, users: list[User]) -> dict[str, int]:
    """How many documents of ``source`` each of ``users`` may read (by user name)."""
    allowed = getattr(index, "_allowed_docs", None)
    if allowed is not None:  # the embedded index: its own ACL query, once per user
        return {u.name: len(allowed(source, u)) for u in users}
    acls = []  # the Redis index: each document's ACL, checked here
    for doc_id in index.r.hkeys(f"{index.prefix}hashes:{source}"):
        name = doc_id.decode() if isinstance(doc_id, bytes) else str(doc_id)
        doc = index.r.json().get(f"{index.prefix}doc:{name}")
        if doc:
            acls.append(set(doc["acl"]))
    return {u.name: sum(1 for acl in acls if u.may_read(acl)) for u in users}
