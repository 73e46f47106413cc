"""Turn files into indexed documents: Markdown / text folders, chat exports, meeting notes."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import frontmatter

from sources.embedded import IndexedDocument
from state.models import Chunk

MAX_CHUNK_CHARS = 900


class IngestError(ValueError):
    """A file that could not be read; the message names the path and, when known, the line."""


def _iso(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return str(value)


def chunk_markdown(text: str, doc_id: str) -> list[Chunk]:
    """Split Markdown by headings, then by paragraphs up to ``MAX_CHUNK_CHARS``.

    Every chunk keeps the heading it sits under, so evidence reads in context.
    """
    chunks: list[Chunk] = []
    heading = ""
    buf: list[str] = []

    def flush() -> None:
        body = "\n\n".join(p for p in buf if p.strip()).strip()
        if body:
            chunks.append({"chunk_id": f"{doc_id}#{len(chunks)}", "heading": heading, "text": body})
        buf.clear()

    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if not para:
            continue
        match = re.match(r"^(#{1,6})\s+(.*)$", para.splitlines()[0])
        if match:
            flush()
            heading = match.group(2).strip()
            rest = "\n".join(para.splitlines()[1:]).strip()
            if rest:
                buf.append(rest)
            continue
        if sum(len(p) for p in buf) + len(para) > MAX_CHUNK_CHARS:
            flush()
        buf.append(para)
    flush()
    return chunks


def read_markdown_folder(
    root: Path, source: str, kind: str, default_acl: list[str]
) -> Iterator[IndexedDocument]:
    """Markdown and text files under ``root``; front matter gives title, dates, version, ACL.

    Front matter keys: ``title``, ``updated_at``, ``version``, ``deprecated``,
    ``superseded_by`` (a file stem in the same source), ``url``, ``acl`` (principals such as
    ``group:engineering`` or ``user:alice``), ``attendees`` (meeting notes: user names).
    """
    for path in sorted(
        p for p in root.rglob("*") if p.suffix.lower() in {".md", ".markdown", ".txt"}
    ):
        rel = path.relative_to(root).with_suffix("").as_posix()
        doc_id = f"{source}/{rel}"
        try:
            post = frontmatter.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise IngestError(f"{path}: cannot read front matter: {exc}") from exc
        meta: dict[str, Any] = dict(post.metadata)
        body = post.content
        title = str(meta.get("title") or _first_heading(body) or path.stem.replace("-", " "))
        acl = [str(a) for a in meta.get("acl", default_acl)]
        if "attendees" in meta:
            acl = [f"user:{a}" for a in meta["attendees"]] + [str(a) for a in meta.get("acl", [])]
        superseded = meta.get("superseded_by")
        yield IndexedDocument(
            doc_id=doc_id,
            source=source,
            kind=kind,
            title=title,
            text=body,
            chunks=chunk_markdown(body, doc_id),
            acl=acl,
            url=meta.get("url"),
            updated_at=_iso(meta.get("updated_at") or meta.get("date")),
            version=None if meta.get("version") is None else str(meta.get("version")),
            deprecated=bool(meta.get("deprecated", False)),
            superseded_by=f"{source}/{superseded}" if superseded else None,
            origin=str(path),
        )


def _first_heading(text: str) -> str | None:
    match = re.search(r"^#\s+(.+)$", text, re.M)
    return match.group(1).strip() if match else None


def read_chat_export(
    root: Path, source: str, kind: str, channels: dict[str, list[str]]
) -> Iterator[IndexedDocument]:
    """Chat exports (``*.jsonl``): one message per line, one document per message.

    Each line: ``{"id", "channel", "author", "ts", "text", "thread"?}``. Channel membership
    (``channels`` in the workspace) is the ACL; a channel nobody listed is readable by nobody.
    """
    for path in sorted(root.rglob("*.jsonl")):
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
                channel = str(msg["channel"])
                doc_id = f"{source}/{channel}/{msg['id']}"
                text = f"{msg['author']}: {msg['text']}"
                ts = str(msg["ts"])
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise IngestError(f"{path}:{lineno}: not a chat message ({exc})") from exc
            yield IndexedDocument(
                doc_id=doc_id,
                source=source,
                kind=kind,
                title=f"#{channel} — {msg['author']}, {ts[:10]}",
                text=text,
                chunks=[{"chunk_id": f"{doc_id}#0", "heading": "", "text": text}],
                acl=list(channels.get(channel, [])),
                url=msg.get("url"),
                updated_at=ts,
                origin=f"{path}:{lineno}",
            )
