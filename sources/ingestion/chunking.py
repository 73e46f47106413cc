"""What every reader shares: bounded chunks, ACLs from file metadata, document ids.

A chunk becomes evidence, and evidence is checkpointed: no chunk may exceed
``HARD_CHUNK_CHARS`` whatever the file looks like.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

from seekgraph.providers.sentences import (
    blocks,
    fence_step,
    frame,
    is_code,
    is_label,
    is_list,
    is_table,
)
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
    return _split_prose(text, limit)


def _split_prose(text: str, limit: int) -> list[str]:
    """``split_long`` for prose: sentence ends, then line breaks, spaces, a hard cut."""
    if len(text) <= limit:
        return [text]
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
            pieces += _split_prose(part, limit)
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
    its header row (and the rule under it): a row without its header is a row of values;
    each piece of a list that opens inside a nested list opens with the items it sits in. A
    code block inside a list item is cut only where it must be, and then fenced too. A line
    longer than the room is cut as prose; a header or fence longer than half the room is
    not repeated.
    """
    head, body, tail = frame(block.strip("\n"))
    framing = sum(len(x) + 1 for x in head + tail)
    if not body or 2 * framing > limit:  # nothing between them, or too wide to repeat
        head, body, tail, framing = [], head + body + tail, [], 0
    room = limit - framing
    listed = is_list(block)
    pieces: list[list[str]] = []
    size = room + 1  # the first unit opens a piece
    for at, unit in _units(body, listed, room):
        if size + len(unit) + 1 <= room:
            pieces[-1].append(unit)
            size += len(unit) + 1
            continue
        parents = _parents(body[:at], unit) if listed else []
        if sum(len(x) + 1 for x in parents) * 2 > room:
            parents = []
        if parents and pieces and pieces[-1] == parents:  # they open the next piece instead
            pieces.pop()
        if len(unit) + 1 + sum(len(x) + 1 for x in parents) <= room:
            pieces.append([*parents, unit])
            size = sum(len(x) + 1 for x in pieces[-1])
            continue
        # one unit longer than a piece: a fenced block in a list item is cut as code (each
        # piece fenced), a line as prose
        inner = room - sum(len(x) + 1 for x in parents)
        cut = split_lines(unit, inner) if "\n" in unit else _split_prose(unit, inner)
        for part in cut:
            pieces.append([*parents, part])
        size = room + 1
    return ["\n".join(head + piece + tail) for piece in pieces]


def _units(body: list[str], fences: bool, room: int) -> list[tuple[int, str]]:
    """A block's lines, each with where it starts; with ``fences``, a fenced run is one unit.

    A list item's code block is one unit of its list, with the item it follows when both fit
    in ``room`` (the item says what the code is: "Draft chapters are written … without the
    path:" and its example); a code block's own lines are each one.
    """
    out: list[tuple[int, str]] = []
    fenced = ""  # the open fence's backticks (a ````text example may hold a ``` block)
    for at, line in enumerate(body):
        if fenced and fences:
            out[-1] = (out[-1][0], f"{out[-1][1]}\n{line}")
        else:
            out.append((at, line))
        fenced, _ = fence_step(line, fenced)
    if not fences:
        return out
    # an item and the code block after it, one unit where they fit together
    joined: list[tuple[int, str]] = []
    for at, unit in out:
        item = joined[-1][1] if joined else ""
        if (
            is_code(unit.split("\n", 1)[0])
            and item
            and not is_code(item.split("\n", 1)[0])
            and "\n" not in item
            and len(item) + 1 + len(unit) <= room
        ):
            joined[-1] = (joined[-1][0], f"{item}\n{unit}")
        else:
            joined.append((at, unit))
    return joined


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


#: The most blocks a lead-in chain moves into the next chunk: a lead-in and a label.
MAX_CARRIED = 2


def _leads_in(block: str) -> bool:
    """A paragraph that introduces what follows ("Which should return metrics like this:")."""
    return block.rstrip().endswith(":") and not is_code(block)


def _introduces(block: str, following: str) -> bool:
    """Whether ``block`` goes with ``following`` into its chunk.

    It does when it leads in, or when it is the prose right above a code block ("book.toml",
    "The following code shows how to …"). Code without the words above it says nothing of
    what it is for; a paragraph longer than half a chunk stays where it is (it says more than
    what introduces the code).
    """
    if _leads_in(block):
        return True
    prose = not (is_code(block) or is_list(block) or is_table(block) or block.startswith("#"))
    return prose and is_code(following) and len(block) <= MAX_CHUNK_CHARS // 2


def chunk_markdown(text: str, doc_id: str) -> list[Chunk]:
    """Split Markdown by headings, then by paragraphs up to ``MAX_CHUNK_CHARS``.

    Every chunk keeps the path of headings it sits under, so evidence reads in context.
    """
    chunks: list[Chunk] = []
    heading = ""
    trail: list[tuple[int, str]] = []
    buf: list[str] = []

    def flush() -> None:
        # the blank lines between blocks and a carried lead-in count too: past the hard
        # bound, the blocks go into as many chunks as they need (each block is within it),
        # a lead-in ("To disable verification:") always with the block it introduces
        parts = [p for p in buf if p.strip()]
        while parts:
            take = 1
            while take < len(parts) and (
                len("\n\n".join(parts[: take + 1])) <= HARD_CHUNK_CHARS
                or _introduces(parts[take - 1], parts[take])
            ):
                take += 1
            body = "\n\n".join(parts[:take]).strip()
            parts = parts[take:]
            if body:
                chunk_id = f"{doc_id}#{len(chunks)}"
                chunks.append({"chunk_id": chunk_id, "heading": heading, "text": body})
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
            para = "\n".join(para.splitlines()[1:]).strip()  # text on the heading's block
            if not para:
                continue
        # a long list or table is cut into chunks of the usual size (its lines kept), a code
        # block only past the hard bound: an example is read whole
        lined = "\n" in para and (is_list(para) or is_table(para))
        for piece in split_long(para, MAX_CHUNK_CHARS if lined else HARD_CHUNK_CHARS):
            if sum(len(p) for p in buf) + len(piece) > MAX_CHUNK_CHARS:
                # a lead-in ("By default, it will:") moves on with what it introduces, and so
                # does the lead-in above a label that names the code ("Example `package.json`:",
                # then "package.json:", a code block's title, then the code)
                carried: list[str] = []
                following = piece
                while buf and len(carried) < MAX_CARRIED and _introduces(buf[-1], following):
                    following = buf.pop()
                    carried.insert(0, following)
                    if not is_label(following):  # only a label's own lead-in comes too
                        break
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
