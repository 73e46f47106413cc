"""Webhooks: a run's end is POSTed to the address its request named, signed, retried.

The body is JSON (the run's record and the answer with its citations); the header
``X-Seekgraph-Signature: t=<unix time>,v1=<hex HMAC-SHA256 of "<t>.<body>">`` lets the
receiver check it came from this deployment (``SEEKGRAPH_WEBHOOK_SECRET``) and is fresh.
A delivery that fails (no connection, a timeout, 5xx, 429) is retried with exponential
backoff; other 4xx answers are final. Addresses are checked when the run is accepted and
again at every connection: loopback, private, link-local and reserved addresses are refused
unless the operator lists the host (``SEEKGRAPH_WEBHOOK_ALLOW_HOSTS``).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import logging
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

from seekgraph.graph.net import FetchRefusedError, GuardedTransport, forbidden_address

log = logging.getLogger("seekgraph.webhooks")

#: Seconds before each retry (the first delivery is immediate).
BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)


class WebhookRefusedError(ValueError):
    """A webhook address that will not be called; the message says why."""


def check_webhook(url: str, allow_hosts: frozenset[str]) -> str:
    """``url`` when a run may call it at its end; ``WebhookRefusedError`` otherwise.

    Only http(s), with a host; a literal private address (or ``localhost``) is refused here
    already, a name is checked again when it is resolved.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookRefusedError("a webhook must be an http(s) URL with a host")
    host = parts.hostname.lower().rstrip(".")
    if host in allow_hosts:
        return url
    if host == "localhost" or host.endswith(".localhost"):
        raise WebhookRefusedError(f"webhooks are not sent to {host}")
    try:
        private = forbidden_address(str(ipaddress.ip_address(host)))
    except ValueError:
        private = False  # a name: checked when it is resolved
    if private:
        raise WebhookRefusedError(
            f"webhooks are not sent to private or reserved addresses ({host})"
        )
    return url


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


async def deliver(
    url: str,
    payload: dict[str, Any],
    secret: str | None,
    allow_hosts: frozenset[str],
    backoff: tuple[float, ...] = BACKOFF_S,
) -> bool:
    """POST ``payload`` to ``url``, retrying what may succeed later; True once delivered."""
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    transport = GuardedTransport(allow_hosts)
    async with httpx.AsyncClient(transport=transport, timeout=10.0) as client:
        for attempt, wait in enumerate((0.0, *backoff)):
            await asyncio.sleep(wait)
            headers = {"Content-Type": "application/json", "User-Agent": "seekgraph-webhook"}
            if secret:
                headers["X-Seekgraph-Signature"] = signature(secret, int(time.time()), body)
            try:
                response = await client.post(url, content=body, headers=headers)
            except FetchRefusedError as exc:
                log.warning("webhook %s refused: %s", urlsplit(url).hostname, exc)
                return False
            except httpx.HTTPError as exc:
                log.info("webhook attempt %d failed: %s", attempt + 1, type(exc).__name__)
                continue
            if response.is_success:
                return True
            if response.status_code < 500 and response.status_code != 429:
                log.warning("webhook answered %d; not retried", response.status_code)
                return False
            log.info("webhook attempt %d answered %d", attempt + 1, response.status_code)
    log.warning("webhook to %s not delivered after %d attempts", urlsplit(url).hostname,
                len(backoff) + 1)  # fmt: skip
    return False


class Webhooks:
    """Sends the webhooks of ended runs in the background (a slow receiver holds nothing up)."""

    def __init__(
        self,
        secret: str | None = None,
        allow_hosts: frozenset[str] = frozenset(),
        backoff: tuple[float, ...] = BACKOFF_S,
    ) -> None:
        self.secret = secret
        self.allow_hosts = allow_hosts
        self.backoff = backoff
        self.pending: set[asyncio.Task[bool]] = set()

    def send(self, record: Any, fold: dict[str, Any]) -> None:
        """Deliver the end of ``record``'s run (its answer and citations from ``fold``)."""
        payload = {
            "run": record.public(),
            "answer": fold.get("answer", ""),
            "citations": fold.get("citations", []),
        }
        task = asyncio.create_task(
            deliver(record.webhook, payload, self.secret, self.allow_hosts, self.backoff)
        )
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)
