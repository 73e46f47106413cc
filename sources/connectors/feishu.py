"""Feishu / Lark, live, through the official ``lark-oapi`` client (an app's tenant token).

The three sources of the system this project started from, each its own connector (and
source) over one client:

- ``feishu-docs`` (kind ``docs``): the documents (docx) in the configured folders and their
  sub-folders (``drive/v1/files``), read as text (``docx/v1/documents/{id}/raw_content``);
- ``feishu-chat`` (kind ``messages``): every chat the app's bot is in (``im/v1/chats``), its
  messages (``im/v1/messages``: text and rich-text posts; a reply is read with its thread);
- ``feishu-minutes`` (kind ``notes``): meeting minutes (``minutes/v1/minutes/search``, each
  minute's ``transcript`` as text with its speakers).

**Who may read** is what Feishu says: a chat's members (``im/v1/chats/{id}/members``) for its
messages; for a document or minutes, its collaborators (``drive/v1/permissions/{token}/members``:
users, chats — their members — and departments — theirs, ``contact/v3/users/find_by_department``)
and its link sharing (``…/public``: readable in the tenant → every workspace user). Each chat,
document and minutes is its own group resolved at each sync, so a member removed or a document
unshared takes effect at the next sync without re-reading anything. A Feishu user is the
workspace user of the same e-mail (``contact/v3/users``) or name. Rate limits (HTTP 429, or
Feishu's code 99991400) are waited out and retried (``feishu_client.py``); refused app
credentials are reported with what to set, and the last good sync stays.
"""

from __future__ import annotations

import json
from typing import Any

from seekgraph.sources.connectors.connector import (
    Connector,
    Snapshot,
    Versions,
    connector_document,
)
from seekgraph.sources.connectors.feishu_client import FeishuClient
from seekgraph.sources.indexes.index_source import IndexedDocument
from seekgraph.sources.ingestion.conversations import with_context
from seekgraph.sources.ingestion.slack_export import slack_message


class FeishuDocs:
    """Documents in the configured Feishu folders (and their sub-folders)."""

    kind = "docs"

    def __init__(self, feishu: FeishuClient, folders: list[str], name: str = "feishu-docs") -> None:
        self.feishu, self.folders, self.name = feishu, folders or [""], name

    def snapshot(self, cursor: str | None) -> Snapshot:
        """Every docx with its readers; one whose modified time did not change is not re-read."""
        self.feishu.begin()
        versions = Versions(cursor)
        docs: list[IndexedDocument] = []
        groups: dict[str, list[str]] = {}
        folders, seen_folders = list(self.folders), set()
        while folders:
            folder = folders.pop(0)
            if folder in seen_folders:
                continue
            seen_folders.add(folder)
            listed = self.feishu.pages(
                "/open-apis/drive/v1/files", key="files", page_size=200, folder_token=folder or None
            )
            for file in listed:
                token = str(file["token"])
                if file.get("type") == "folder":
                    folders.append(token)
                    continue
                if file.get("type") != "docx":
                    continue
                readers = self.feishu.readers(token, "docx", file.get("owner_id"))
                groups[f"feishu:doc:{token}"] = sorted(readers)
                version = str(file.get("modified_time") or "")
                if versions.unchanged(token, version):
                    continue
                text = self.feishu.call("GET", f"/open-apis/docx/v1/documents/{token}/raw_content")
                title = str(file.get("name") or token)
                body = str(text.get("content") or "").strip()
                doc = connector_document(
                    self.name,
                    self.kind,
                    token,
                    title,
                    body,
                    [f"group:feishu:doc:{token}"],
                    url=file.get("url"),
                    updated_at=_when(file.get("modified_time")),
                    version=version,
                )
                docs += versions.read(token, version, [doc] if body else [])
        unknown = self.feishu.unknown
        return Snapshot(docs, groups, versions.cursor(), versions.kept, unknown=unknown)


class FeishuChats:
    """Messages of every chat the app's bot is in."""

    kind = "messages"

    def __init__(self, feishu: FeishuClient, name: str = "feishu-chat") -> None:
        self.feishu, self.name = feishu, name

    def snapshot(self, cursor: str | None) -> Snapshot:
        """Every message of every chat, and the chats' members."""
        self.feishu.begin()
        docs: list[IndexedDocument] = []
        groups: dict[str, list[str]] = {}
        threads: dict[tuple[str, str], list[int]] = {}
        for chat in self.feishu.pages("/open-apis/im/v1/chats", page_size=100):
            cid, title = str(chat["chat_id"]), str(chat.get("name") or chat["chat_id"])
            groups[f"feishu:chat:{cid}"] = sorted(self.feishu.chat_members(cid))
            messages = self.feishu.pages(
                "/open-apis/im/v1/messages",
                container_id_type="chat",
                container_id=cid,
                sort_type="ByCreateTimeAsc",
            )
            stamp = {str(m["message_id"]): _ts(m) for m in messages}
            shown = {}
            for msg in messages:
                sender = str((msg.get("sender") or {}).get("id") or "")
                shown[sender] = (self.feishu.user(sender) or "someone", "")
            for msg in messages:
                text = _message_text(msg)
                if msg.get("deleted") or not text:
                    continue
                root = str(msg.get("root_id") or "")
                as_slack = {
                    "type": "message",
                    "ts": stamp[str(msg["message_id"])],
                    "text": text,
                    "user": str((msg.get("sender") or {}).get("id") or ""),
                    "thread_ts": stamp.get(root) if root else None,
                    "edited": bool(msg.get("updated")),
                }
                doc = slack_message(
                    as_slack,
                    title,
                    self.name,
                    self.kind,
                    [f"group:feishu:chat:{cid}"],
                    shown,
                    {},
                    cid,
                )
                if doc is not None:
                    docs.append(doc)
                    thread = stamp.get(root) if root else as_slack["ts"]
                    threads.setdefault((cid, str(thread)), []).append(len(docs) - 1)
        with_context(docs, threads)
        return Snapshot(docs, groups, unknown=self.feishu.unknown)


class FeishuMinutes:
    """Meeting minutes (妙记) the app may read, their transcripts with speakers."""

    kind = "notes"

    def __init__(self, feishu: FeishuClient, name: str = "feishu-minutes") -> None:
        self.feishu, self.name = feishu, name

    def snapshot(self, cursor: str | None) -> Snapshot:
        """Every minutes with its readers; a transcript is read once."""
        self.feishu.begin()
        versions = Versions(cursor)
        docs: list[IndexedDocument] = []
        groups: dict[str, list[str]] = {}
        found = self.feishu.pages("/open-apis/minutes/v1/minutes/search", method="POST")
        for item in found:
            token = str(item["token"])
            minute = (
                self.feishu.call("GET", f"/open-apis/minutes/v1/minutes/{token}").get("minute")
                or {}
            )
            readers = self.feishu.readers(token, "minutes", minute.get("owner_id"))
            groups[f"feishu:minutes:{token}"] = sorted(readers)
            version = str(minute.get("create_time") or "")
            if versions.unchanged(token, version):
                continue
            transcript = self.feishu.call(
                "GET",
                f"/open-apis/minutes/v1/minutes/{token}/transcript",
                {"need_speaker": "true", "file_format": "txt"},
            )
            text = bytes(transcript).decode("utf-8", "replace").strip()
            title = str(minute.get("title") or token)
            doc = connector_document(
                self.name,
                self.kind,
                token,
                title,
                text,
                [f"group:feishu:minutes:{token}"],
                url=minute.get("url"),
                updated_at=_when(minute.get("create_time")),
                version=version,
            )
            docs += versions.read(token, version, [doc] if text else [])
        unknown = self.feishu.unknown
        return Snapshot(docs, groups, versions.cursor(), versions.kept, unknown=unknown)


def feishu_connectors(
    app_id: str,
    app_secret: str,
    people: dict[str, str],
    *,
    folders: list[str] | None = None,
    base_url: str | None = None,
) -> list[Connector]:
    """The three Feishu connectors over one client."""
    feishu = FeishuClient(app_id, app_secret, people, base_url=base_url)
    return [FeishuDocs(feishu, folders or []), FeishuChats(feishu), FeishuMinutes(feishu)]


def _message_text(msg: dict[str, Any]) -> str:
    """A text or rich-text (post) message's words."""
    try:
        content = json.loads(str((msg.get("body") or {}).get("content") or "{}"))
    except ValueError:
        return ""
    if msg.get("msg_type") == "text":
        return str(content.get("text") or "").strip()
    if msg.get("msg_type") == "post":
        post = content if "content" in content else next(iter(content.values()), {})
        words = [post.get("title") or ""]
        for line in post.get("content") or []:
            words.append(" ".join(str(e.get("text") or "") for e in line if isinstance(e, dict)))
        return " ".join(w for w in words if w).strip()
    return ""


def _ts(msg: dict[str, Any]) -> str:
    """A message's time in Slack's ``seconds.micro`` form (Feishu gives milliseconds)."""
    return f"{int(msg.get('create_time') or 0) / 1000:.6f}"


def _when(value: object) -> str | None:
    """Feishu's epoch (seconds or milliseconds, as text) as ISO time."""
    from datetime import UTC, datetime

    try:
        number = int(str(value))
    except ValueError:
        return None
    return datetime.fromtimestamp(number / 1000 if number > 10**11 else number, tz=UTC).isoformat()
