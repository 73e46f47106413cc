"""The ``Source`` protocol every knowledge source implements, and the person asking.

Exceptions a source may raise are ordinary ones (``TimeoutError``, ``ConnectionError``,
``OSError``...): the graph turns any of them into a ``SourceFailure`` in state and the
other sources go on. A source never returns what the user may not see: permission checks
happen inside ``search`` and ``read``, and fail closed (no ACL entry means nobody).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from state.models import Document, Hit

EVERYONE = "group:everyone"


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
