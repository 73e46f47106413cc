"""A Slack export, read in place: the folder (or zip) a Slack admin downloads.

Layout (Slack's documented export): ``users.json``; ``channels.json`` (public channels),
``groups.json`` (private channels), ``mpims.json`` (group DMs), ``dms.json`` (DMs), each entry
with ``id``, ``name`` (not for DMs) and ``members`` (user ids); and one folder per
conversation (by name, DMs by id) of day files ``YYYY-MM-DD.json``, each a list of messages
``{"type", "user", "text", "ts", "thread_ts"?, "edited"?, "files"?, "subtype"?}``.

One document per message, like any chat export: the conversation's **members are its ACL**
(public channels too: a channel is read by its members, fail closed). A Slack user is the
workspace user of the same handle, Slack id or e-mail (a user's ``"slack"`` in
``workspace.json``: handle or id), or the one ``slack-users.json`` (``{"U123":
"alice"}``, beside ``users.json``) names; anyone else is ``user:slack:<id>`` (nobody).
Mentions show as names (``<@U123>`` → ``@Alice``), channel links as ``#name``, links by their
label; an edited message says so; a thread's replies are read with their thread.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from seekgraph.sources.indexes.index_source import IndexedDocument
from seekgraph.sources.ingestion.chunking import HARD_CHUNK_CHARS, IngestError
from seekgraph.sources.ingestion.conversations import with_context

CONVERSATION_FILES = {
    "channels.json": "public channel",
    "groups.json": "private channel",
    "mpims.json": "group message",
    "dms.json": "direct message",
}
MAPPING_FILE = "slack-users.json"
#: Message subtypes that are not something someone said.
SKIPPED = {"channel_join", "channel_leave", "channel_purpose", "channel_topic", "group_join",
           "group_leave", "pinned_item", "channel_archive"}  # fmt: skip


def is_slack_export(root: Path) -> bool:
    """A folder with Slack's ``users.json`` and ``channels.json``."""
    return (root / "users.json").is_file() and (root / "channels.json").is_file()


def _json(path: Path, problems: list[str]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{path}: not readable JSON ({exc}); skipped")
        return None


def workspace_users(root: Path, people: dict[str, str], problems: list[str]) -> dict[str, Any]:
    """Slack user id → (shown name, ACL principal)."""
    mapping = _json(root / MAPPING_FILE, problems) if (root / MAPPING_FILE).is_file() else {}
    users = _json(root / "users.json", problems) or []
    out: dict[str, Any] = {}
    for user in users if isinstance(users, list) else []:
        if not isinstance(user, dict) or "id" not in user:
            continue
        profile = user.get("profile") or {}
        handle = str(user.get("name") or "").lower()
        email = str(profile.get("email") or "").lower()
        shown = profile.get("display_name") or profile.get("real_name") or user.get("real_name")
        named = (
            (mapping or {}).get(user["id"])
            or people.get(str(user["id"]).lower())  # "slack": "U0BMM2FEH" in workspace.json
            or people.get(email)
            or people.get(handle)
        )
        if named and named.startswith("group:"):  # a list's address is nobody's own
            named = None
        principal = f"user:{named}" if named else f"user:slack:{user['id']}"
        out[user["id"]] = (str(shown or handle or user["id"]), principal)
    return out


def _readable(text: str, users: dict[str, Any], channels: dict[str, str]) -> str:
    def person(m: re.Match[str]) -> str:
        return "@" + str(users.get(m.group(1), (m.group(1),))[0])

    def channel(m: re.Match[str]) -> str:
        return "#" + (m.group(2) or channels.get(m.group(1), m.group(1)))

    text = re.sub(r"<@(\w+)(?:\|[^>]*)?>", person, text)
    text = re.sub(r"<#(\w+)\|?([^>]*)>", channel, text)
    text = re.sub(r"<(https?://[^|>]+)\|([^>]+)>", r"\2 (\1)", text)
    text = re.sub(r"<(https?://[^>]+)>", r"\1", text)
    text = re.sub(r"<!(here|channel|everyone)>", r"@\1", text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def slack_documents(
    root: Path, source: str, kind: str, people: dict[str, str], problems: list[str]
) -> tuple[list[IndexedDocument], dict[str, str]]:
    """Every message of the export, and who may read each conversation (for the summary)."""
    users = workspace_users(root, people, problems)
    conversations: list[tuple[str, str, list[str]]] = []  # (folder, kind, members)
    names: dict[str, str] = {}
    for file, what in CONVERSATION_FILES.items():
        if not (root / file).is_file():
            continue
        listed = _json(root / file, problems) or []
        for conv in listed if isinstance(listed, list) else []:
            if not isinstance(conv, dict) or "id" not in conv:
                continue
            folder = str(conv.get("name") or conv["id"])
            names[str(conv["id"])] = folder
            members = [str(m) for m in conv.get("members") or []]
            conversations.append((folder, what, members))
    docs: list[IndexedDocument] = []
    acls: dict[str, str] = {}
    groups: dict[tuple[str, str], list[int]] = {}
    for folder, what, members in conversations:
        acl = list(dict.fromkeys(users.get(m, ("", f"user:slack:{m}"))[1] for m in members))
        acls[folder] = f"{', '.join(acl) or 'nobody'} ({what} members)"
        days = sorted((root / folder).glob("*.json")) if (root / folder).is_dir() else []
        for day in days:
            messages = _json(day, problems)
            if not isinstance(messages, list):
                if messages is not None:
                    problems.append(f"{day}: expected a list of messages; skipped")
                continue
            for n, msg in enumerate(messages, start=1):
                doc = slack_message(msg, folder, source, kind, acl, users, names, f"{day}:{n}")
                if doc is None:
                    continue
                docs.append(doc)
                thread = str(msg.get("thread_ts") or msg.get("ts"))
                groups.setdefault((folder, thread), []).append(len(docs) - 1)
    if not conversations:
        raise IngestError(f"{root}: a Slack export without conversations in channels.json")
    with_context(docs, groups)
    return docs, acls


def slack_message(
    msg: Any,
    folder: str,
    source: str,
    kind: str,
    acl: list[str],
    users: dict[str, Any],
    channels: dict[str, str],
    where: str,
) -> IndexedDocument | None:
    """One Slack message as a document of its conversation (``None``: not something said)."""
    if not isinstance(msg, dict) or msg.get("type") != "message" or "ts" not in msg:
        return None
    if msg.get("subtype") in SKIPPED:
        return None
    who = users.get(str(msg.get("user")), (msg.get("username") or msg.get("user") or "someone",))
    author = str(who[0])
    text = _readable(str(msg.get("text") or ""), users, channels)
    for file in msg.get("files") or []:
        if isinstance(file, dict) and file.get("name"):
            text += f" [file: {file['name']}]"
    if not text.strip():
        return None
    if msg.get("edited"):
        text += " (edited)"
    from datetime import UTC, datetime

    when = datetime.fromtimestamp(float(msg["ts"]), tz=UTC).isoformat()
    said = f"{author}: {text}"[:HARD_CHUNK_CHARS]
    doc_id = f"{source}/{folder}/{msg['ts']}"
    reply = msg.get("thread_ts") and msg.get("thread_ts") != msg.get("ts")
    thread = f" (thread {msg['thread_ts']})" if reply else ""
    return IndexedDocument(
        doc_id=doc_id,
        source=source,
        kind=kind,
        title=f"#{folder} — {author}, {when[:10]}{thread}",
        text=said,
        chunks=[{"chunk_id": f"{doc_id}#0", "heading": "", "text": said}],
        acl=acl,
        updated_at=when,
        origin=where,
    )
