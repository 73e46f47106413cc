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
Feishu's code 99991400) are waited out (``x-ogw-ratelimit-reset``/``Retry-After``) and retried;
refused app credentials are reported with what to set, and the last good sync stays.
"""

from __future__ import annotations

import json
import time
from typing import Any

from sources.connector import (
    Connector,
    ConnectorError,
    Snapshot,
    Versions,
    connector_document,
    named,
)
from sources.conversations import with_context
from sources.index_source import IndexedDocument
from sources.slack_export import slack_message

#: Items read per listing at most, so one huge chat or folder cannot stall a sync.
MAX_ITEMS = 20_000
#: Longest wait a rate limit may ask for before the sync gives up on this round.
MAX_WAIT_S = 30.0
RATE_LIMITED = {99991400}
TOKEN_INVALID = {99991661, 99991663, 99991664, 99991668, 99991671}
LINK_READERS = {"tenant_readable", "tenant_editable", "anyone_readable", "anyone_editable"}


class FeishuClient:
    """One ``lark-oapi`` client, the people it knows, and paging shared by the three."""

    def __init__(
        self,
        app_id: str,
        app_secret: str,
        people: dict[str, str],
        *,
        base_url: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        import lark_oapi as lark

        self.app_id = app_id
        self.people = people
        self.client = (
            lark.Client.builder()
            .app_id(app_id)
            .app_secret(app_secret)
            .domain(base_url or lark.FEISHU_DOMAIN)
            .timeout(timeout)
            .log_level(lark.LogLevel.ERROR)
            .build()
        )
        self._users: dict[str, str | None] = {}
        self._groups: dict[str, set[str]] = {}

    def begin(self) -> None:
        """Forget who is who (read again at each sync)."""
        self._users, self._groups = {}, {}

    def call(
        self, method: str, uri: str, query: dict[str, Any] | None = None, body: Any = None
    ) -> Any:
        """One request; JSON's ``data``, or the bytes of a file. Raises ``ConnectorError``."""
        import lark_oapi as lark
        from lark_oapi.core.exception import ObtainAccessTokenException
        from requests import RequestException

        request = (
            lark.BaseRequest.builder()
            .http_method(lark.HttpMethod[method])
            .uri(uri)
            .token_types({lark.AccessTokenType.TENANT})
            .queries([(k, str(v)) for k, v in (query or {}).items() if v is not None])
            .body(body)
            .build()
        )
        renewed = False
        for _ in range(4):
            try:
                response = self.client.request(request)
            except ObtainAccessTokenException:
                raise ConnectorError(self._refused("the app credentials")) from None
            except (RequestException, OSError) as exc:
                raise ConnectorError(
                    f"Feishu is unreachable ({type(exc).__name__}); retried next sync"
                ) from None
            raw = response.raw
            headers = {k.lower(): v for k, v in raw.headers.items()}
            body = {}
            if headers.get("content-type", "").startswith("application/json") and raw.content:
                body = json.loads(raw.content)
            code = int(body.get("code") or 0)
            if raw.status_code == 429 or code in RATE_LIMITED:
                wait = float(
                    headers.get("x-ogw-ratelimit-reset") or headers.get("retry-after") or 1
                )
                if wait > MAX_WAIT_S:
                    break
                time.sleep(wait)
                continue
            if code in TOKEN_INVALID and not renewed:  # revoked: fetch a new one
                from lark_oapi.core.token.manager import TokenManager

                TokenManager.cache.set(f"self_tenant_token:{self.app_id}", "", 0)
                renewed = True
                continue
            if code in TOKEN_INVALID:
                raise ConnectorError(self._refused(f"its token (code {code})"))
            if code or raw.status_code >= 400:
                raise ConnectorError(f"Feishu {uri} failed ({raw.status_code}, code {code})")
            return body.get("data") or {} if body else raw.content or b""
        raise ConnectorError(f"Feishu kept rate-limiting {uri}; retried next sync")

    @staticmethod
    def _refused(what: str) -> str:
        return (
            f"Feishu refused {what}: set SEEKGRAPH_FEISHU_APP_ID and SEEKGRAPH_FEISHU_APP_SECRET "
            "to an app with the im:message, im:chat, docx:document:readonly, drive:drive:readonly, "
            "minutes:minutes:readonly and contact:user.base:readonly scopes"
        )

    def pages(self, uri: str, key: str = "items", method: str = "GET", **query: Any) -> list[Any]:
        """Every item of a paged listing (``page_token``, ``has_more``)."""
        items: list[Any] = []
        token = None
        while True:
            page_query = {**query, "page_size": query.get("page_size", 50), "page_token": token}
            data = self.call(method, uri, page_query, {} if method == "POST" else None)
            items += data.get(key) or []
            token = data.get("page_token") or data.get("next_page_token")
            if not data.get("has_more") or not token or len(items) >= MAX_ITEMS:
                return items

    def user(self, open_id: str, name: str | None = None) -> str | None:
        """The workspace user a Feishu user is (by e-mail, else by name)."""
        if open_id not in self._users:
            try:
                info = (
                    self.call(
                        "GET", f"/open-apis/contact/v3/users/{open_id}", {"user_id_type": "open_id"}
                    ).get("user")
                    or {}
                )
            except ConnectorError:
                info = {}
            self._users[open_id] = named(
                self.people, info.get("email"), info.get("enterprise_email"), info.get("name"), name
            )
        return self._users[open_id]

    def chat_members(self, chat_id: str) -> set[str]:
        """The workspace users in a chat."""
        if f"chat:{chat_id}" not in self._groups:
            found = self.pages(
                f"/open-apis/im/v1/chats/{chat_id}/members", member_id_type="open_id"
            )
            self._groups[f"chat:{chat_id}"] = {
                u for m in found if (u := self.user(str(m.get("member_id")), m.get("name")))
            }
        return self._groups[f"chat:{chat_id}"]

    def department(self, department: str) -> set[str]:
        """The workspace users in a department."""
        if f"dept:{department}" not in self._groups:
            found = self.pages(
                "/open-apis/contact/v3/users/find_by_department",
                department_id=department,
                department_id_type="open_department_id",
            )
            self._groups[f"dept:{department}"] = {
                u
                for m in found
                if (
                    u := named(
                        self.people, m.get("email"), m.get("enterprise_email"), m.get("name")
                    )
                )
            }
        return self._groups[f"dept:{department}"]

    def readers(self, token: str, kind: str) -> set[str]:
        """Who may read a document or minutes: its collaborators and its link sharing."""
        may: set[str] = set()
        granted = self.pages(f"/open-apis/drive/v1/permissions/{token}/members", type=kind)
        for member in granted:
            who, ident = member.get("member_type"), str(member.get("member_id") or "")
            if who == "openid":
                may |= {u for u in [self.user(ident)] if u}
            elif who == "email":
                may |= {u for u in [named(self.people, ident)] if u}
            elif who == "openchat":
                may |= self.chat_members(ident)
            elif who == "opendepartmentid":
                may |= self.department(ident)
        public = self.call("GET", f"/open-apis/drive/v1/permissions/{token}/public", {"type": kind})
        if (public.get("permission_public") or {}).get("link_share_entity") in LINK_READERS:
            may |= set(self.people.values())
        return may


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
                groups[f"feishu:doc:{token}"] = sorted(self.feishu.readers(token, "docx"))
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
                    f"# {title}\n\n{body}",
                    [f"group:feishu:doc:{token}"],
                    url=file.get("url"),
                    updated_at=_when(file.get("modified_time")),
                    version=version,
                )
                docs += versions.read(token, version, [doc] if body else [])
        return Snapshot(docs, groups, versions.cursor(), versions.kept)


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
        return Snapshot(docs, groups)


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
            groups[f"feishu:minutes:{token}"] = sorted(self.feishu.readers(token, "minutes"))
            minute = (
                self.feishu.call("GET", f"/open-apis/minutes/v1/minutes/{token}").get("minute")
                or {}
            )
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
                f"# {title}\n\n{text}",
                [f"group:feishu:minutes:{token}"],
                url=minute.get("url"),
                updated_at=_when(minute.get("create_time")),
                version=version,
            )
            docs += versions.read(token, version, [doc] if text else [])
        return Snapshot(docs, groups, versions.cursor(), versions.kept)


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
