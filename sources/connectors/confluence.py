"""Confluence Cloud, live, through ``atlassian-python-api``'s REST client (an API token).

Every page of the configured spaces (or of every space the account sees) with its body, its
version and its place in the page tree (``/wiki/rest/api/content``, ``expand`` of
``body.storage``, ``version``, ``ancestors`` and the page's read restrictions), each page's
attachments read by their type (in the listing's ``children.attachment``, or
``…/child/attachment`` for a page with more; downloaded only when their version changed),
the spaces' read permissions (``/wiki/api/v2/spaces/{id}/permissions``) and the members of
the groups they name (``/wiki/rest/api/group/{id}/membersByGroupId``).

**Who may read a page** is what Confluence says: the space's readers (users granted, and the
members of groups granted), narrowed by every read restriction on the page or on a page
above it (a restricted parent restricts its children). A page's ACL is a group —
``group:confluence:space:ENG`` for an unrestricted page, ``group:confluence:page:123`` for a
restricted one — whose members are computed at each sync, so a restriction added, a space
permission removed or a person leaving a group takes effect at the next sync without
re-reading a page. A Confluence user is the workspace user of the same e-mail or public name.
429s are retried after their ``Retry-After`` (the client's retry adapter); a refused token is
reported with what to set and the last good sync stays.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from seekgraph.sources.connectors.connector import (
    ConnectorError,
    Snapshot,
    Versions,
    connector_document,
    file_documents,
    named,
)
from seekgraph.sources.indexes.index_source import IndexedDocument

#: Pages read per space at most, so one huge space cannot stall a sync.
MAX_PAGES = 20_000
PAGE_EXPAND = (
    "body.storage,version,ancestors,space,children.attachment.version,"
    "restrictions.read.restrictions.user,restrictions.read.restrictions.group"
)


class ConfluenceConnector:
    """A ``Connector`` over Confluence Cloud's REST API."""

    kind = "kb"

    def __init__(
        self,
        url: str,
        user: str,
        token: str,
        people: dict[str, str],
        *,
        spaces: list[str] | None = None,
        name: str = "confluence",
        timeout: int = 30,
    ) -> None:
        from atlassian.rest_client import AtlassianRestAPI

        self.name = name
        self.people = people
        self.spaces = spaces or []
        self.problems: list[str] = []
        self.unknown: set[str] = set()
        self.api = AtlassianRestAPI(
            url.rstrip("/"),
            username=user,
            password=token,
            cloud=True,
            timeout=timeout,
            backoff_and_retry=True,  # 429 and 503: wait for Retry-After (bounded), then retry
            max_backoff_retries=3,
            max_backoff_seconds=30,
        )

    # -- calls ---------------------------------------------------------------------------

    def _get(self, path: str, **params: Any) -> Any:
        from requests import RequestException
        from requests.exceptions import HTTPError

        try:
            return self.api.get(path, params=params)
        except HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else 0
            if status in (401, 403):
                raise ConnectorError(
                    f"Confluence refused the credentials ({status}): set "
                    "SEEKGRAPH_CONFLUENCE_USER to the account's e-mail and "
                    "SEEKGRAPH_CONFLUENCE_TOKEN to an API token it may read the spaces with"
                ) from None
            raise ConnectorError(f"Confluence {path} failed ({status})") from None
        except (RequestException, OSError) as exc:
            raise ConnectorError(
                f"Confluence is unreachable ({type(exc).__name__}); retried next sync"
            ) from None

    def _v1(self, path: str, **params: Any) -> list[Any]:
        """Every result of a v1 collection (``start``/``limit``, ``_links.next``)."""
        items: list[Any] = []
        start = 0
        while True:
            page = self._get(path, start=start, limit=100, **params) or {}
            results = page.get("results") or []
            items += results
            start += len(results)
            if not results or not (page.get("_links") or {}).get("next") or start >= MAX_PAGES:
                return items

    def _v2(self, path: str, **params: Any) -> list[Any]:
        """Every result of a v2 collection (``cursor`` from ``_links.next``)."""
        items: list[Any] = []
        cursor = None
        while True:
            extra: dict[str, str] = {"cursor": cursor} if cursor else {}
            page = self._get(path, limit=250, **params, **extra) or {}
            items += page.get("results") or []
            following = (page.get("_links") or {}).get("next")
            cursor = (
                parse_qs(urlsplit(following).query).get("cursor", [None])[0] if following else None
            )
            if not cursor:
                return items

    # -- people --------------------------------------------------------------------------

    def _person(self, user: dict[str, Any], cache: dict[str, str | None]) -> str | None:
        account = str(user.get("accountId") or "")
        if account not in cache:
            cache[account] = named(
                self.people, user.get("email"), user.get("publicName"), user.get("username")
            )
            if cache[account] is None:
                self.unknown.add(str(user.get("email") or user.get("publicName") or account))
        return cache[account]

    def _account(self, account: str, cache: dict[str, str | None]) -> str | None:
        if account not in cache:
            cache[account] = self._person(
                self._get("wiki/rest/api/user", accountId=account) or {"accountId": account}, cache
            )
        return cache[account]

    def _group(
        self, group: str, groups: dict[str, set[str]], cache: dict[str, str | None]
    ) -> set[str]:
        if group not in groups:
            members = self._v1(f"wiki/rest/api/group/{group}/membersByGroupId")
            groups[group] = {u for m in members if (u := self._person(m, cache))}
        return groups[group]

    # -- the snapshot --------------------------------------------------------------------

    def snapshot(self, cursor: str | None) -> Snapshot:
        """Every page and attachment of the spaces, and who may read each."""
        people: dict[str, str | None] = {}
        members: dict[str, set[str]] = {}
        spaces = self._v2(
            "wiki/api/v2/spaces", **({"keys": ",".join(self.spaces)} if self.spaces else {})
        )
        docs: list[IndexedDocument] = []
        groups: dict[str, list[str]] = {}
        versions = Versions(cursor)
        self.problems, self.unknown = [], set()
        for space in spaces:
            key = str(space["key"])
            readers: set[str] = set()
            for grant in self._v2(f"wiki/api/v2/spaces/{space['id']}/permissions"):
                if (grant.get("operation") or {}).get("key") != "read":
                    continue
                principal = grant.get("principal") or {}
                if principal.get("type") == "user":
                    readers |= {u for u in [self._account(str(principal["id"]), people)] if u}
                elif principal.get("type") == "group":
                    readers |= self._group(str(principal["id"]), members, people)
            groups[f"confluence:space:{key}"] = sorted(readers)
            pages = self._v1("wiki/rest/api/content", spaceKey=key, type="page", expand=PAGE_EXPAND)
            allowed = {str(p["id"]): self._restricted(p, members, people) for p in pages}
            titles = {str(p["id"]): str(p.get("title") or "") for p in pages}
            for page in pages:
                pid = str(page["id"])
                path = [*(str(a["id"]) for a in page.get("ancestors") or []), pid]
                rules = [r for a in path if (r := allowed.get(a)) is not None]
                acl = [f"group:confluence:space:{key}"]
                if rules:  # restricted here or above: the space's readers the rules all let in
                    groups[f"confluence:page:{pid}"] = sorted(readers.intersection(*rules))
                    acl = [f"group:confluence:page:{pid}"]
                docs.append(self._page(key, page, titles, acl))
                for attachment in self._attachments(page):
                    aid = f"{key}/{pid}/{attachment['id']}"
                    number = (attachment.get("version") or {}).get("number", "")
                    version = f"{number} {acl[0]}"  # read again when its page's ACL changes
                    if not versions.unchanged(aid, version):
                        docs += versions.read(aid, version, self._attachment(aid, attachment, acl))
        return Snapshot(docs, groups, versions.cursor(), versions.kept, self.problems, self.unknown)

    def _attachments(self, page: dict[str, Any]) -> list[Any]:
        """A page's attachments: from the listing's expansion, or asked for when it has more."""
        listed = (page.get("children") or {}).get("attachment")
        if listed is not None and not (listed.get("_links") or {}).get("next"):
            return list(listed.get("results") or [])
        path = f"wiki/rest/api/content/{page['id']}/child/attachment"
        return self._v1(path, expand="version")

    def _restricted(
        self, page: dict[str, Any], members: dict[str, set[str]], people: dict[str, str | None]
    ) -> set[str] | None:
        """Who a page's own read restriction lets read it (``None``: no restriction)."""
        rules = ((page.get("restrictions") or {}).get("read") or {}).get("restrictions") or {}
        users = (rules.get("user") or {}).get("results") or []
        named_groups = (rules.get("group") or {}).get("results") or []
        if not users and not named_groups:
            return None
        may = {u for user in users if (u := self._person(user, people))}
        for group in named_groups:
            may |= self._group(str(group.get("id") or group.get("name")), members, people)
        return may

    def _page(
        self, key: str, page: dict[str, Any], titles: dict[str, str], acl: list[str]
    ) -> IndexedDocument:
        from bs4 import BeautifulSoup

        from seekgraph.sources.ingestion.ingest import html_markdown

        storage = ((page.get("body") or {}).get("storage") or {}).get("value") or ""
        trail = [titles.get(str(a["id"]), "") for a in page.get("ancestors") or []]
        title = str(page.get("title") or page["id"])
        body = html_markdown(BeautifulSoup(storage, "html.parser"))
        heading = " › ".join([t for t in trail if t] + [title])
        version = page.get("version") or {}
        base = str((page.get("_links") or {}).get("base") or self.api.url)
        webui = (page.get("_links") or {}).get("webui")
        return connector_document(
            self.name,
            self.kind,
            f"{key}/{page['id']}",
            title,
            body,
            acl,
            url=f"{base}{webui}" if webui else None,
            updated_at=version.get("when"),
            version=version.get("number"),
            heading=heading,
        )

    def _attachment(
        self, aid: str, attachment: dict[str, Any], acl: list[str]
    ) -> list[IndexedDocument]:
        download = (attachment.get("_links") or {}).get("download")
        if not download:
            return []
        from requests import RequestException

        try:
            response = self.api.get(f"wiki{download}", not_json_response=True)
        except (RequestException, OSError) as exc:
            self.problems.append(
                f"{attachment.get('title')}: not downloaded ({type(exc).__name__})"
            )
            return []
        version = attachment.get("version") or {}
        return file_documents(
            self.name,
            self.kind,
            aid,
            str(attachment.get("title") or "attachment"),
            bytes(response or b""),
            acl,
            self.problems,
            url=f"{self.api.url}/wiki{download}",
            updated_at=version.get("when"),
        )
