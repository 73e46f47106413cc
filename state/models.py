"""Plain-data models carried in graph state: hits, evidence, citations, documents, errors.

Everything here is a TypedDict so checkpoints hold plain JSON-like data and come back
unchanged from any checkpointer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

SourceKind = Literal["kb", "docs", "messages", "notes", "web", "other"]

#: Authority tier per kind of source: knowledge base > documents > messages / notes.
AUTHORITY_BY_KIND: dict[str, int] = {
    "kb": 3,
    "docs": 2,
    "messages": 1,
    "notes": 1,
    "web": 0,
    "other": 1,
}

#: Kinds whose documents are worth reading whole (a chat message's document is the message
#: and its neighbours, already seen; a web result is an engine's snippet of a page).
READ_WHOLE_KINDS = frozenset({"kb", "docs", "notes", "web"})

AUTHORITY_LABELS: dict[int, str] = {
    3: "knowledge base",
    2: "document",
    1: "message or note",
    0: "web page",
}

KIND_LABELS: dict[str, str] = {
    "kb": "knowledge base",
    "docs": "document",
    "messages": "message",
    "notes": "meeting note",
    "web": "web page",
    "other": "source",
}


class Hit(TypedDict):
    """One passage returned by a source for one query."""

    source_id: str
    """Stable id of the passage, unique across sources and rounds (``<source>:<chunk>``)."""
    doc_id: str
    """Id of the whole document the passage belongs to (pass it to ``Source.read``)."""
    source: str
    kind: str
    authority: int
    title: str
    snippet: str
    score: float
    """Retrieval score in [0, 1] as reported by the source."""
    url: str | None
    updated_at: str | None
    version: str | None
    deprecated: bool
    superseded_by: str | None
    """Doc id of the document that replaces this one, when it is deprecated."""
    query: str
    context: NotRequired[str]
    """Chat messages around this one (same channel and thread): judged with it, not cited."""
    fetched_at: NotRequired[str]
    """A web hit: when the engine was asked or the page read (ISO, UTC)."""
    rank: NotRequired[int]
    """A web hit: its position in the search engine's answer."""


class Evidence(Hit):
    """A hit that survived filtering, with the score of every stage that saw it."""

    scores: dict[str, float]
    """Score per stage: ``retrieval``, ``rerank``, ``grade``, ``read``."""
    kept_by: str
    """The stage that kept it: ``fastpass``, ``rerank``, ``grade``, ``read`` (or ``none``)."""
    queries: list[str]
    round: int
    around_terms: NotRequired[list[str]]
    """A chat message: the question's terms (stems) that the messages around it say."""


class Citation(TypedDict):
    """A source cited by the answer, as shown to the person."""

    id: str
    title: str
    source: str
    kind: str
    doc_id: str
    authority: int
    url: str | None
    updated_at: str | None
    snippet: str
    deprecated: bool
    superseded_by: str | None
    fetched_at: NotRequired[str]
    """A web page: when it was read (shown beside its domain)."""


class Conflict(TypedDict):
    """Two sources that disagree, and which one to trust."""

    topic: str
    claims: list[dict[str, str]]
    """Each claim: ``id`` (citation), ``text``, ``kind``, ``updated_at``."""
    trust: str
    """Citation id of the claim to trust; empty when nothing tells them apart (one authority,
    one date): the reason says to check which is right."""
    reason: str


def conflict_lines(conflicts: list[Conflict]) -> list[str]:
    """Conflicts in plain words, with both citations and which to trust (when one is)."""
    lines = []
    for c in conflicts:
        a, b = c["claims"]
        said = f"Sources disagree: “{a['text']}” [src:{a['id']}] versus “{b['text']}”"
        lines.append(f"{said} [src:{b['id']}]. {verdict_words(c)}.")
    return lines


def verdict_words(c: Conflict) -> str:
    """Which claim to trust and why ("Trust [src:…]: …"), or why neither is trusted."""
    reason = c["reason"]
    return f"Trust [src:{c['trust']}]: {reason}" if c["trust"] else reason


class Chunk(TypedDict):
    """A passage of a document as stored by a source."""

    chunk_id: str
    text: str
    heading: NotRequired[str]
    #: Text indexed with the chunk but never shown or cited as it: a chat message's previous
    #: message, embedded before it and searched at a lower weight, so a reply ("Yes, twice!")
    #: is found by what it answers.
    preceding: NotRequired[str]


class Document(TypedDict):
    """A whole document, as returned by ``Source.read`` (never stored in state)."""

    doc_id: str
    source: str
    kind: str
    title: str
    text: str
    url: str | None
    updated_at: str | None
    version: str | None
    deprecated: bool
    superseded_by: str | None
    chunks: list[Chunk]
    fetched_at: NotRequired[str]
    """A web page: when it was read."""
    bytes: NotRequired[int]
    cut: NotRequired[bool]
    """A web page cut at the fetcher's byte or time cap."""


class SourceFailure(TypedDict):
    """A source that could not answer one query: failures are data, not crashes."""

    source: str
    query: str
    error: str
    """Exception class name, e.g. ``NodeTimeoutError`` or ``ConnectionError``."""
    message: str
    round: int


class ModelCall(TypedDict):
    """One call to a chat model: which model served it and how it went."""

    node: str
    model: str
    outcome: str
    """``ok``, ``repaired`` (valid after one repair round), ``degraded`` (the node used its
    extractive strategy instead), or ``failed``."""
    detail: str
    tokens: int


class ImageRef(TypedDict):
    """An image attached to the question, stored outside the checkpoints."""

    sha256: str
    media_type: str
    bytes: int


class Turn(TypedDict):
    """One finished question and answer in a thread."""

    question: str
    answer: str
    mode: str
    images: NotRequired[list[ImageRef]]
    cited: NotRequired[list[dict[str, str]]]
    """The documents the answer cited (``source``, ``doc_id``)."""


#: The end of a web search result's source id: its snippet, not the page's text.
RESULT_SUFFIX = "#result"


def is_pointer(hit: Mapping[str, Any]) -> bool:
    """A web search engine's result: a snippet pointing to a page, not evidence itself."""
    return hit["kind"] == "web" and str(hit["source_id"]).endswith(RESULT_SUFFIX)


def heading_of(hit: Mapping[str, Any]) -> str:
    """The section a hit's passage sits under (its snippet's ``# heading`` line), or ""."""
    first = str(hit["snippet"]).split("\n", 1)[0]
    return first.lstrip("#").strip() if first.startswith("# ") else ""


def hit_of(
    doc: Mapping[str, Any], chunk: Chunk, *, authority: int, score: float, query: str
) -> Hit:
    """The hit for one chunk of a document (``doc`` holds ``Document``'s metadata fields)."""
    heading = chunk.get("heading", "")
    hit: Hit = {
        "source_id": chunk["chunk_id"],
        "doc_id": doc["doc_id"],
        "source": doc["source"],
        "kind": doc["kind"],
        "authority": authority,
        "title": doc["title"],
        "snippet": f"# {heading}\n\n{chunk['text']}" if heading else chunk["text"],
        "score": score,
        "url": doc["url"],
        "updated_at": doc["updated_at"],
        "version": doc["version"],
        "deprecated": bool(doc["deprecated"]),
        "superseded_by": doc["superseded_by"],
        "query": query,
    }
    if doc.get("fetched_at"):
        hit["fetched_at"] = doc["fetched_at"]
    return hit
