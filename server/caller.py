"""Who is calling, through which door: what limits, the audit trail and metrics name.

Set once per request when its API key is checked (``server.http.deps``, the MCP door) and read
wherever the request's work goes — the run started for it copies the context, so its
audit entry and its limits name the same key and door.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from seekgraph.server.auth import hash_key


@dataclass(frozen=True)
class Caller:
    """A request's user, the id of the key it used, and the door it came through."""

    user: str
    key_id: str
    """The first 12 hex digits of the key's SHA-256: names the key, never reveals it."""
    door: str
    """``native``, ``openai``, ``mcp``, ``langgraph`` or ``cli``."""


CALLER: ContextVar[Caller | None] = ContextVar("seekgraph_caller", default=None)


def key_id(key: str) -> str:
    """The id of an API key (a prefix of its stored hash)."""
    return hash_key(key)[:12]


def door_of(path: str) -> str:
    """The door a request path belongs to."""
    for prefix, door in (("/v1/", "openai"), ("/langgraph/", "langgraph"), ("/mcp", "mcp")):
        if path.startswith(prefix):
            return door
    return "native"


def bearer_key(headers: Any) -> str | None:
    """The API key of an ``Authorization: Bearer`` header."""
    value = headers.get("authorization") if headers is not None else None
    scheme, _, key = (value or "").partition(" ")
    return key.strip() if scheme.lower() == "bearer" and key.strip() else None
