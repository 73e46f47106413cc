"""The one canonical form of a thread id, checked once for every door.

A thread id is 1–128 ASCII letters, digits, ``-`` or ``_``, and its canonical form is lower
case. Every door (native, OpenAI, MCP, LangGraph, internal) turns what a client sent into
this form *before* ownership is checked and before the id reaches a store or a URL, so no two
strings name one thread: RediSearch matches the checkpoint saver's ``thread_id`` tag without
regard to case, and an HTTP client collapses ``..`` in a URL path — neither can alias a
canonical id (lower case, no ``.``, ``/``, ``%`` or control characters).

Servers choose thread ids (a UUID4); a client may name only a thread it already owns.
"""

from __future__ import annotations

import re
import uuid

MAX_THREAD_ID = 128
_FORM = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_THREAD_ID}}}")
FORMAT = f"1-{MAX_THREAD_ID} letters, digits, '-' or '_' (the id a thread was created with)"


class BadThreadIdError(ValueError):
    """A thread id outside the canonical form; the message says what a thread id is."""


def canonical_thread_id(raw: str) -> str:
    """``raw`` in canonical form (lower case), or ``BadThreadIdError``.

    The message never echoes ``raw``: it may hold CR/LF or bytes a header or log cannot carry.
    """
    if not isinstance(raw, str) or _FORM.fullmatch(raw) is None:
        raise BadThreadIdError(f"not a thread id: a thread id is {FORMAT}")
    return raw.lower()


def new_thread_id() -> str:
    """A fresh server-chosen thread id (canonical)."""
    return uuid.uuid4().hex
