"""What a reader gives back: the reply, its status, and every change code made to it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Status = Literal["answered", "passages", "partial", "not_found"]
#: Every status a reply may have (``nodes.reader``'s docstring says what each means).
STATUSES: tuple[Status, ...] = ("answered", "passages", "partial", "not_found")


@dataclass
class Reply:
    """A written reply: its text, its status, and what code changed in a model's words."""

    body: str
    status: Status
    changes: list[str] = field(default_factory=list)
    """Each change code made to a model's reply, in plain words (empty offline)."""
