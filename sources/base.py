"""The ``Source`` protocol every knowledge source implements, and the person asking.

Exceptions a source may raise are ordinary ones (``TimeoutError``, ``ConnectionError``,
``OSError``...): the graph turns any of them into a ``SourceFailure`` in state and the
other sources go on. A source never returns what the user may not see: permission checks
happen inside ``search`` and ``read``, and fail closed (no ACL entry means nobody).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, runtime_checkable

from seekgraph.state.models import Document, Hit

EVERYONE = "group:everyone"

_Linked = TypeVar("_Linked", Hit, Document)


#: Link schemes a document's url may have; anything else (``javascript:``, ``data:``,
#: ``file:``) is dropped when the document is read in, so no page or client gets it.
LINK_SCHEMES = ("http://", "https://", "mailto:")


def link_url(value: object) -> str | None:
    """``value`` when it is a link a person may open (http, https, mailto), else None."""
    if not isinstance(value, str):
        return None
    url = value.strip()
    return url if url.lower().startswith(LINK_SCHEMES) and len(url) <= 2048 else None


@dataclass(frozen=True)
class User:
    """The person a run acts for: a name and the groups they belong to."""

    name: str
    groups: frozenset[str] = field(default_factory=frozenset)
    display_name: str = ""

    @property
    def principals(self) -> frozenset[str]:
        """ACL principals that grant this user access: ``user:<name>`` and ``group:<g>``."""
        return frozenset({f"user:{self.name}", *(f"group:{g}" for g in self.groups)})

    def may_read(self, acl: set[str] | frozenset[str] | list[str]) -> bool:
        """True when any ACL principal matches; an empty ACL grants nothing."""
        return bool(self.principals & set(acl))


@runtime_checkable
class Source(Protocol):
    """A searchable collection of documents with per-document permissions."""

    name: str
    kind: str
    authority: int

    async def search(self, query: str, user: User, k: int) -> list[Hit]:
        """Best ``k`` passages for ``query`` among the documents ``user`` may read."""
        ...

    async def read(self, doc_id: str, user: User) -> Document | None:
        """The whole document, or ``None`` when it does not exist or ``user`` may not read it."""
        ...


async def hide_unseen_links(
    items: Sequence[_Linked], visible: Callable[[str], Awaitable[bool]]
) -> None:
    """Drop ``superseded_by`` links to documents the user may not see (in place).

    A deprecated article superseded by a restricted one is, for someone outside that
    restriction, simply deprecated: the id of the newer version must not reach an answer,
    a citation, a checkpoint or a log line. Each distinct target is checked once.
    """
    seen: dict[str, bool] = {}
    for item in items:
        target = item.get("superseded_by")
        if not target:
            continue
        if target not in seen:
            seen[target] = await visible(target)
        if not seen[target]:
            item["superseded_by"] = None
