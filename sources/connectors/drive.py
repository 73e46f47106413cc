"""Google Drive, live, through the official ``google-api-python-client`` (Drive v3).

Every file the account can see (``files.list``, shared drives included), read by its kind:
Google Docs exported as HTML (headings kept), Sheets as CSV (a sheet's rows as records),
Slides as text, and other files (Word, PDF, Markdown, …) downloaded and read by their type.
A file is downloaded or exported again only when its Drive ``version`` changed.

**Who may read a file** is its Drive permissions (``permissions`` in the listing, or
``permissions.list`` where the listing leaves them out, as for shared drives): users by
e-mail, Google groups by their members (the Admin SDK Directory API, ``members.list`` with
derived membership; a group whose members cannot be read grants no one), a domain to every
workspace user of that domain, anyone-with-the-link to every workspace user. A file's ACL is
its own group (``group:gdrive:file:<id>``) whose members are computed at each sync, so a file
unshared or a person leaving a group takes effect at the next sync without re-reading a file.
Requests are retried on 429 and 5xx with backoff (the client's ``num_retries``); refused
credentials are reported with what to set, and the last good sync stays.
"""

from __future__ import annotations

from typing import Any

from seekgraph.sources.connectors.connector import (
    ConnectorError,
    Snapshot,
    Versions,
    connector_document,
    file_documents,
)
from seekgraph.sources.indexes.index_source import IndexedDocument

#: Files read at most, so one huge drive cannot stall a sync.
MAX_FILES = 20_000
#: Google's own formats and what they are exported as.
EXPORTS = {
    "application/vnd.google-apps.document": ("text/html", ".html"),
    "application/vnd.google-apps.spreadsheet": ("text/csv", ".csv"),
    "application/vnd.google-apps.presentation": ("text/plain", ".txt"),
}
FIELDS = (
    "nextPageToken, files(id, name, mimeType, modifiedTime, version, webViewLink, "
    "permissions(id, type, role, emailAddress, domain))"
)
PERMISSION_FIELDS = "nextPageToken, permissions(id, type, role, emailAddress, domain)"
READERS = {"owner", "organizer", "fileOrganizer", "writer", "commenter", "reader"}


class DriveConnector:
    """A ``Connector`` over the Drive v3 API (and the Directory API for group members)."""

    kind = "docs"

    def __init__(
        self,
        credentials: Any,
        people: dict[str, str],
        *,
        name: str = "gdrive",
        base_url: str | None = None,
        timeout: int = 30,
        retries: int = 3,
        lists: dict[str, set[str]] | None = None,
    ) -> None:
        import google_auth_httplib2
        import httplib2
        from googleapiclient.discovery import build

        self.name = name
        self.people = people
        self.lists = lists or {}
        """A workspace group's address → its members (``workspace.json``'s ``groups``)."""
        self.retries = retries
        self.problems: list[str] = []
        self.unknown: set[str] = set()

        def service(api: str, version: str, path: str) -> Any:
            # one authorised connection per service (httplib2 is not shared across threads)
            http = google_auth_httplib2.AuthorizedHttp(
                credentials, http=httplib2.Http(timeout=timeout)
            )
            options = {"api_endpoint": f"{base_url.rstrip('/')}/{path}"} if base_url else None
            return build(api, version, http=http, client_options=options, cache_discovery=False)

        self.drive = service("drive", "v3", "drive/v3/")
        self.directory = service("admin", "directory_v1", "")

    def close(self) -> None:
        """Close the connections to Google."""
        self.drive.close()
        self.directory.close()

    def _run(self, request: Any, what: str) -> Any:
        from google.auth.exceptions import RefreshError, TransportError
        from googleapiclient.errors import HttpError

        try:
            return request.execute(num_retries=self.retries)  # 429 and 5xx: backoff, again
        except RefreshError:
            raise ConnectorError(self._refused(401)) from None
        except HttpError as exc:
            status = int(exc.resp.status)
            if status in (401, 403) and what != "members":
                raise ConnectorError(self._refused(status)) from None
            raise ConnectorError(f"Google Drive {what} failed ({status})") from None
        except (TransportError, OSError) as exc:
            raise ConnectorError(
                f"Google Drive is unreachable ({type(exc).__name__}); retried next sync"
            ) from None

    @staticmethod
    def _refused(status: int) -> str:
        return (
            f"Google Drive refused the credentials ({status}): set SEEKGRAPH_GDRIVE_CREDENTIALS "
            "to a service account key file with the drive.readonly scope (and, for group "
            "members, admin.directory.group.member.readonly with SEEKGRAPH_GDRIVE_SUBJECT)"
        )

    def _pages(self, method: Any, key: str, what: str, **params: Any) -> list[Any]:
        items: list[Any] = []
        token = None
        while True:
            page = self._run(method(**params, **({"pageToken": token} if token else {})), what)
            items += page.get(key) or []
            token = page.get("nextPageToken")
            if not token or len(items) >= MAX_FILES:
                return items

    def _members(self, group: str, cache: dict[str, set[str] | None]) -> set[str]:
        """The workspace users in a Google group (none when its members cannot be read)."""
        if group not in cache:
            try:
                found = self._pages(
                    self.directory.members().list,
                    "members",
                    "members",
                    groupKey=group,
                    includeDerivedMembership=True,
                )
                emails = {str(m.get("email", "")).lower() for m in found}
                cache[group] = {self.people[e] for e in emails if e in self.people}
                self.unknown |= {e for e in emails if e and e not in self.people}
            except ConnectorError as exc:
                self.problems.append(
                    f"group {group}: its members could not be read ({exc}); it grants no one"
                )
                cache[group] = None
        return cache[group] or set()

    def _readers(
        self, permissions: list[dict[str, Any]], groups: dict[str, set[str] | None]
    ) -> set[str]:
        everyone = set(self.people.values())
        may: set[str] = set()
        for grant in permissions:
            if grant.get("role") not in READERS:
                continue
            kind, email = grant.get("type"), str(grant.get("emailAddress") or "").lower()
            if kind == "user" and email in self.people:
                may.add(self.people[email])
            elif kind == "user" and email in self.lists:  # shared with a list's address
                may |= self.lists[email]
            elif kind == "user" and email:
                self.unknown.add(email)
            elif kind == "group" and email:
                may |= self._members(email, groups) | self.lists.get(email, set())
            elif kind == "domain" and grant.get("domain"):
                domain = f"@{str(grant['domain']).lower()}"
                may |= {user for key, user in self.people.items() if key.endswith(domain)}
            elif kind == "anyone":
                may |= everyone
        return may

    def snapshot(self, cursor: str | None) -> Snapshot:
        """Every file with its readers; files whose version did not change are not read again."""
        versions = Versions(cursor)
        self.problems, self.unknown = [], set()
        files = self._pages(
            self.drive.files().list,
            "files",
            "files.list",
            q="trashed = false",
            fields=FIELDS,
            pageSize=1000,
            supportsAllDrives=True,
            includeItemsFromAllDrives=True,
        )
        group_cache: dict[str, set[str] | None] = {}
        docs: list[IndexedDocument] = []
        groups: dict[str, list[str]] = {}
        for file in files:
            fid, mime = str(file["id"]), str(file.get("mimeType", ""))
            if mime == "application/vnd.google-apps.folder":
                continue
            permissions = file.get("permissions")
            if permissions is None:  # left out of the listing (shared drives): asked for
                permissions = self._pages(
                    self.drive.permissions().list,
                    "permissions",
                    "permissions.list",
                    fileId=fid,
                    fields=PERMISSION_FIELDS,
                    supportsAllDrives=True,
                )
            groups[f"gdrive:file:{fid}"] = sorted(self._readers(permissions, group_cache))
            version = str(file.get("version") or file.get("modifiedTime") or "")
            if not versions.unchanged(fid, version):
                docs += versions.read(fid, version, self._read(file, [f"group:gdrive:file:{fid}"]))
        return Snapshot(docs, groups, versions.cursor(), versions.kept, self.problems, self.unknown)

    def _read(self, file: dict[str, Any], acl: list[str]) -> list[IndexedDocument]:
        fid, mime, name = (
            str(file["id"]),
            str(file.get("mimeType", "")),
            str(file.get("name") or ""),
        )
        if mime in EXPORTS:
            export, suffix = EXPORTS[mime]
            data = self._run(self.drive.files().export(fileId=fid, mimeType=export), "files.export")
            name = f"{name}{suffix}"
        elif mime.startswith("application/vnd.google-apps."):
            return []  # forms, maps, shortcuts: nothing to read
        else:
            data = self._run(self.drive.files().get_media(fileId=fid), "files.get")
        if mime == "application/vnd.google-apps.document":
            return [self._doc(file, data, acl)]
        return file_documents(
            self.name,
            self.kind,
            fid,
            name,
            bytes(data),
            acl,
            self.problems,
            url=file.get("webViewLink"),
            updated_at=file.get("modifiedTime"),
        )

    def _doc(self, file: dict[str, Any], data: bytes, acl: list[str]) -> IndexedDocument:
        from bs4 import BeautifulSoup

        from seekgraph.sources.ingestion.ingest import html_markdown

        title = str(file.get("name") or file["id"])
        body = html_markdown(BeautifulSoup(data, "html.parser"))
        return connector_document(
            self.name,
            self.kind,
            str(file["id"]),
            title,
            body,
            acl,
            url=file.get("webViewLink"),
            updated_at=file.get("modifiedTime"),
            version=file.get("version"),
        )


def drive_credentials(key_file: str | None, token: str | None, subject: str | None) -> Any:
    """Credentials for the Drive connector: a service account key file, or an access token."""
    scopes = [
        "https://www.googleapis.com/auth/drive.readonly",
        "https://www.googleapis.com/auth/admin.directory.group.member.readonly",
    ]
    if key_file:
        from google.oauth2 import service_account

        try:
            creds = service_account.Credentials.from_service_account_file(  # type: ignore[no-untyped-call]
                key_file, scopes=scopes
            )
        except (OSError, ValueError) as exc:
            raise ConnectorError(
                "SEEKGRAPH_GDRIVE_CREDENTIALS is not a readable service account key "
                f"({type(exc).__name__})"
            ) from None
        return creds.with_subject(subject) if subject else creds
    from google.oauth2.credentials import Credentials

    return Credentials(token=token)  # type: ignore[no-untyped-call]
