"""Slack, live, through the official ``slack_sdk`` (Web API; a bot token).

Every public and private channel the bot is a member of (``conversations.list``), each
channel's messages (``conversations.history``) and threads (``conversations.replies``), the
channel's members (``conversations.members``) and who they are (``users.list``). A message is
readable by its channel: its ACL is the channel's group (``group:slack:<channel id>``), whose
members are resolved when a person asks, so removing someone from a channel takes effect at
the next sync without re-reading any message. A Slack user is the workspace user of the same
handle or e-mail (``people``). 429s are retried after their ``Retry-After``
(``RateLimitErrorRetryHandler``); an expired or revoked token is reported with what to set,
and the last good sync stays.
"""

from __future__ import annotations

from typing import Any

from seekgraph.sources.connectors.connector import ConnectorError, Snapshot
from seekgraph.sources.indexes.index_source import IndexedDocument
from seekgraph.sources.ingestion.conversations import with_context
from seekgraph.sources.ingestion.slack_export import slack_message

#: Messages read per channel at most (newest first), so one huge channel cannot stall a sync.
MAX_MESSAGES = 20_000


class SlackConnector:
    """A ``Connector`` over the Slack Web API."""

    kind = "messages"

    def __init__(
        self,
        token: str,
        people: dict[str, str],
        *,
        name: str = "slack",
        base_url: str | None = None,
        timeout: int = 30,
    ) -> None:
        from slack_sdk import WebClient
        from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

        self.name = name
        self.people = people
        self.client = WebClient(
            token=token,
            base_url=base_url or "https://slack.com/api/",
            timeout=timeout,
            retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=3)],
        )

    def _pages(self, method: str, key: str, **params: Any) -> list[Any]:
        """Every item of a paginated Web API method (``response_metadata.next_cursor``)."""
        from slack_sdk.errors import SlackApiError

        items: list[Any] = []
        cursor = None
        while True:
            try:
                call = getattr(self.client, method.replace(".", "_"))  # users_list, …
                response = call(**params, limit=200, cursor=cursor)
            except SlackApiError as exc:
                error = exc.response.get("error", "error") if exc.response else "error"
                if error in {"invalid_auth", "token_expired", "token_revoked", "not_authed",
                             "account_inactive"}:  # fmt: skip
                    raise ConnectorError(
                        f"Slack refused the token ({error}): set SEEKGRAPH_SLACK_TOKEN to a "
                        "valid bot token (xoxb-…) with channels:history, groups:history, "
                        "channels:read, groups:read and users:read"
                    ) from None
                raise ConnectorError(f"Slack {method} failed: {error}") from None
            except OSError as exc:  # connection refused, timeouts, TLS
                raise ConnectorError(f"Slack is unreachable ({exc}); retried next sync") from None
            items += response.get(key) or []
            cursor = (response.get("response_metadata") or {}).get("next_cursor")
            if not cursor or len(items) >= MAX_MESSAGES:
                return items

    def snapshot(self, cursor: str | None) -> Snapshot:
        """Every message of every channel the bot is in, and the channels' members."""
        users: dict[str, Any] = {}
        for user in self._pages("users.list", "members"):
            profile = user.get("profile") or {}
            handle = str(user.get("name") or "").lower()
            email = str(profile.get("email") or "").lower()
            shown = profile.get("display_name") or profile.get("real_name") or handle
            named = self.people.get(email) or self.people.get(handle)
            users[user["id"]] = (str(shown or user["id"]), named)
        channels = [
            c
            for c in self._pages(
                "conversations.list", "channels", types="public_channel,private_channel",
                exclude_archived="true",
            )
            if c.get("is_member")
        ]  # fmt: skip
        names = {c["id"]: c["name"] for c in channels}
        docs: list[IndexedDocument] = []
        groups: dict[str, list[str]] = {}
        threads: dict[tuple[str, str], list[int]] = {}
        unknown: set[str] = set()
        newest = cursor
        for channel in channels:
            cid = channel["id"]
            members = self._pages("conversations.members", "members", channel=cid)
            known = [users.get(m, (m, None)) for m in members]
            groups[f"slack:{cid}"] = sorted({u for _, u in known if u})
            unknown |= {shown for shown, u in known if not u}
            acl = [f"group:slack:{cid}"]
            messages = self._pages("conversations.history", "messages", channel=cid)
            for msg in list(messages):
                if msg.get("reply_count") and msg.get("thread_ts") == msg.get("ts"):
                    replies = self._pages(
                        "conversations.replies", "messages", channel=cid, ts=msg["ts"]
                    )
                    messages += [r for r in replies if r.get("ts") != msg["ts"]]
            shown = {k: (v[0], "") for k, v in users.items()}
            for msg in messages:
                doc = slack_message(
                    msg, channel["name"], self.name, self.kind, acl, shown, names, cid
                )
                if doc is not None:
                    docs.append(doc)
                    thread = str(msg.get("thread_ts") or msg["ts"])
                    threads.setdefault((cid, thread), []).append(len(docs) - 1)
                    newest = max(newest or "", str(msg["ts"]))
        with_context(docs, threads)  # a reply is read with its thread (same channel, same ACL)
        return Snapshot(documents=docs, groups=groups, cursor=newest, unknown=unknown)
