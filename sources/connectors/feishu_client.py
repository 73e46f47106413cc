"""Feishu / Lark's Open API through the official ``lark-oapi`` client, as the connectors use it.

One client (an app's tenant token) for the three Feishu connectors (``feishu_connector.py``):
requests with rate limits waited out (HTTP 429 or code 99991400: ``x-ogw-ratelimit-reset`` or
``Retry-After``) and a revoked token renewed once, paged listings, and who a Feishu user,
chat, department or document's collaborators are in the workspace.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from seekgraph.sources.connectors.connector import ConnectorError, named

#: Items read per listing at most, so one huge chat or folder cannot stall a sync.
MAX_ITEMS = 20_000
#: Longest wait a rate limit may ask for before the sync gives up on this round.
MAX_WAIT_S = 30.0
RATE_LIMITED = {99991400}
TOKEN_INVALID = {99991661, 99991663, 99991664, 99991668, 99991671}
LINK_READERS = {"tenant_readable", "tenant_editable", "anyone_readable", "anyone_editable"}


def _lark() -> Any:
    """``lark_oapi``, imported without the event loop its websocket module opens on import.

    Imported off an event loop (a sync runs in a worker thread), ``lark_oapi.ws`` makes a
    loop for the thread and never closes it; this client never uses websockets, so that
    loop is closed again.
    """
    import asyncio
    import sys

    fresh = "lark_oapi.ws.client" not in sys.modules
    import lark_oapi

    if fresh:
        loop = sys.modules["lark_oapi.ws.client"].loop
        if not loop.is_running() and not loop.is_closed():
            loop.close()
            asyncio.set_event_loop(None)
    return lark_oapi


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
        self.app_id = app_id
        self.people = people
        self._settings = (app_secret, base_url, timeout)
        self._client: Any = None
        self._building = threading.Lock()
        self._users: dict[str, str | None] = {}
        self._groups: dict[str, set[str]] = {}
        self.unknown: set[str] = set()

    @property
    def client(self) -> Any:
        """The ``lark-oapi`` client, built at the first request.

        Importing ``lark_oapi`` takes seconds, which a process that never syncs
        (``seekgraph ask``) need not spend.
        """
        with self._building:
            if self._client is None:
                lark = _lark()
                app_secret, base_url, timeout = self._settings
                self._client = (
                    lark.Client.builder()
                    .app_id(self.app_id)
                    .app_secret(app_secret)
                    .domain(base_url or lark.FEISHU_DOMAIN)
                    .timeout(timeout)
                    .log_level(lark.LogLevel.ERROR)
                    .build()
                )
            return self._client

    def begin(self) -> None:
        """Forget who is who (read again at each sync)."""
        self._users, self._groups, self.unknown = {}, {}, set()

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
            if self._users[open_id] is None:
                self.unknown.add(str(info.get("email") or info.get("name") or name or open_id))
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
            people = {
                str(m.get("email") or m.get("name") or m.get("open_id")): named(
                    self.people, m.get("email"), m.get("enterprise_email"), m.get("name")
                )
                for m in found
            }
            self._groups[f"dept:{department}"] = {u for u in people.values() if u}
            self.unknown |= {shown for shown, u in people.items() if not u}
        return self._groups[f"dept:{department}"]

    def readers(self, token: str, kind: str, owner: object = None) -> set[str]:
        """Who may read a document or minutes: its owner, collaborators and link sharing."""
        may: set[str] = set()
        if owner and (owns := self.user(str(owner))):
            may.add(owns)
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
