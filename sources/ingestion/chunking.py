"""What every reader shares: bounded chunks, ACLs from file metadata, document ids.

A chunk becomes evidence, and evidence is checkpointed: no chunk may exceed
``HARD_CHUNK_CHARS`` whatever the file looks like.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

from seekgraph.providers.sentences import blocks, is_code, is_list, is_table
from seekgraph.sources.indexes.index_source import IndexedDocument
from seekgraph.state.models import Chunk

MAX_CHUNK_CHARS = 900
#: Between the headings of a chunk's section path.
PATH_SEPARATOR = " › "
#: No chunk is ever longer than this: a paragraph without blank lines is cut at sentence
#: ends, then line breaks, then spaces (a chunk becomes evidence, and evidence is checkpointed).
HARD_CHUNK_CHARS = 2 * MAX_CHUNK_CHARS
#: A file whose text is longer is skipped with a problem line (split it into several files).
MAX_DOCUMENT_CHARS = 5_000_000


class IngestError(ValueError):
    """A file that could not be read; the message names the path and, when known, the line."""


def iso(value: Any) -> str | None:
    """A front-matter date as ISO text (None when absent)."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return str(value)


def mtime(path: Path) -> str:
    """The file's modification date, when it says none itself."""
    return dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.UTC).date().isoformat()


def doc_id_of(root: Path, path: Path, source: str) -> str:
    """``source/relative/path`` without the suffix."""
    return f"{source}/{path.relative_to(root).with_suffix('').as_posix()}"


def split_long(text: str, limit: int = MAX_CHUNK_CHARS) -> list[str]:
    """Pieces of ``text`` no longer than ``limit``, cut at sentence ends where possible.

    Falls back to line breaks, then spaces, then a hard cut, so the bound always holds. A
    list, a table or a code block is cut between its lines and keeps them (``split_lines``).
    """
    if len(text) <= limit:
        return [text]
    if "\n" in text.strip() and (is_code(text) or is_list(text) or is_table(text)):
        return split_lines(text, limit)
    for pattern in (r"(?<=[.!?。！？])\s+", r"\n+", r"\s+"):
        parts = [p for p in re.split(pattern, text) if p.strip()]
        if len(parts) > 1:
            break
    else:
        return [text[i : i + limit] for i in range(0, len(text), limit)]
    pieces: list[str] = []
    current = ""
    for part in parts:
        if len(part) > limit:
            if current:
                pieces.append(current)
                current = ""
            pieces += split_long(part, limit)
        elif current and len(current) + 1 + len(part) > limit:
            pieces.append(current)
            current = part
        else:
            current = f"{current} {part}" if current else part
    if current:
        pieces.append(current)
    return pieces


def split_lines(block: str, limit: int) -> list[str]:
    """A long list, table or code block as pieces of whole lines, each no longer than ``limit``.

    Cut at sentence ends, a parameter list's items ran into one line and a code block's
    lines into one paragraph: an API reference's options list lost the line that answers.
    Each piece of a code block is fenced as the block was; each piece of a table opens with
    its header row (and the rule under it): a row without its header is a row of values. A
    single line longer than the room is cut as prose.
    """
    lines = block.strip("\n").splitlines()
    head: list[str] = []
    tail: list[str] = []
    if is_code(block):
        head = lines[:1]
        tail = lines[-1:] if len(lines) > 1 and is_code(lines[-1]) else []
    elif is_table(block):
        rule = len(lines) > 1 and not lines[1].strip(" |:-")
        head = lines[: 2 if rule else 1]
    body = lines[len(head) : len(lines) - len(tail)]
    frame = sum(len(x) + 1 for x in head + tail)
    room = max(limit - frame, limit // 2)
    pieces: list[list[str]] = []
    size = 0
    for line in body:
        parts = [line] if len(line) <= room else split_long(line, room)
        for part in parts:
            if pieces and size + len(part) + 1 <= room:
                pieces[-1].append(part)
                size += len(part) + 1
            else:
                pieces.append([part])
                size = len(part) + 1
    out = ["\n".join(head + piece + tail) for piece in pieces]
    if is_list(block):  # a piece that opens inside a nested list says whose items they are
        seen = 0
        for n, piece in enumerate(pieces):
            parents = _parents(body[:seen], piece[0])
            seen += len(piece)
            if parents and sum(len(x) + 1 for x in parents) + len(out[n]) <= limit:
                out[n] = "\n".join(parents + piece)
    return [p for q in out for p in ([q] if len(q) <= limit else split_long(q.strip(), limit))]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _parents(before: list[str], line: str) -> list[str]:
    """The items above ``line`` that it is nested in, outermost first (each cut to a line)."""
    out: list[str] = []
    depth = _indent(line)
    for prior in reversed(before):
        if prior.strip() and _indent(prior) < depth and is_list(prior):
            out.insert(0, prior if len(prior) <= 120 else prior[:119] + "…")
            depth = _indent(prior)
    return out


def chunk_markdown(text: str, doc_id: str) -> list[Chunk]:
    """Split Markdown by headings, then by paragraphs up to ``MAX_CHUNK_CHARS``.

    Every chunk keeps the path of headings it sits under, so evidence reads in context.
    """
    chunks: list[Chunk] = []
    heading = ""
    trail: list[tuple[int, str]] = []
    buf: list[str] = []

    def flush() -> None:
        body = "\n\n".join(p for p in buf if p.strip()).strip()
        if body:
            chunks.append({"chunk_id": f"{doc_id}#{len(chunks)}", "heading": heading, "text": body})
        buf.clear()

    for para in blocks(text):  # a code fence is one block, blank lines and "# comments" too
        para = para.strip()
        if not para:
            continue
        match = re.match(r"^(#{1,6})\s+(.*)$", para.splitlines()[0])
        if match:
            flush()
            # the path of sections it sits in ("Timeouts › Setting a default"), the page's
            # own title (its one top-level heading) aside
            level = len(match.group(1))
            trail[:] = [(n, h) for n, h in trail if n < level] + [(level, match.group(2).strip())]
            heading = PATH_SEPARATOR.join(h for n, h in trail if n > 1 or len(trail) == 1)
            rest = "\n".join(para.splitlines()[1:]).strip()
            if rest:
                buf.append(rest)
            continue
        # a long list or table is cut into chunks of the usual size (its lines kept), a code
        # block only past the hard bound: an example is read whole
        lined = "\n" in para and (is_list(para) or is_table(para))
        for piece in split_long(para, MAX_CHUNK_CHARS if lined else HARD_CHUNK_CHARS):
            if sum(len(p) for p in buf) + len(piece) > MAX_CHUNK_CHARS:
                # a lead-in ("By default, it will:") moves on with what it introduces
                carried = [buf.pop()] if len(buf) > 1 and buf[-1].rstrip().endswith(":") else []
                flush()
                buf.extend(carried)
            buf.append(piece)
    flush()
    return chunks


_PRINCIPAL = re.compile(r"^(user|group):[^\s,]+$")


def parse_acl(value: Any, where: str) -> list[str]:
    """Principals from front matter or a channel list: a list, or one string (comma/space).

    Anything else is an ``IngestError`` that says what to write: an empty ACL would make the
    document invisible to everyone without a word, and a malformed one is a typo.
    """
    if isinstance(value, str):
        items: list[Any] = [p for p in re.split(r"[\s,]+", value) if p]
    elif isinstance(value, list):
        items = value
    else:
        items = []
    if not items:
        shown = "empty" if value in (None, "", []) else f"{value!r}"
        raise IngestError(
            f"{where}: acl is {shown}; write who may read it, e.g. acl: [group:everyone] "
            "(or remove the line to use the source's ACL)"
        )
    bad = [p for p in items if not isinstance(p, str) or not _PRINCIPAL.match(p)]
    if bad:
        raise IngestError(
            f"{where}: acl entry {bad[0]!r} is not a principal; use user:NAME or group:NAME"
        )
    return [str(p) for p in items]


def rename(doc: IndexedDocument, doc_id: str) -> None:
    """Give a document (and its chunks) another id."""
    doc.doc_id = doc_id
    for n, chunk in enumerate(doc.chunks):
        chunk["chunk_id"] = f"{doc_id}#{n}"
