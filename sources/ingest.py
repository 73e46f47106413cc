"""Turn files into indexed documents: Markdown, text, HTML, PDF, chats and transcripts.

Folders of Markdown, text, HTML and PDF; chat exports (JSONL or JSON); meeting transcripts
(VTT, SRT) and minutes.

A file that cannot be read is reported by path (and line, when known) and skipped; the rest
of the folder is still indexed.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import frontmatter
import yaml

from sources.embedded import IndexedDocument
from state.models import Chunk

MAX_CHUNK_CHARS = 900
MARKDOWN = {".md", ".markdown", ".txt"}
HTML = {".html", ".htm"}
PDF = {".pdf"}
CHAT = {".jsonl", ".json"}
TRANSCRIPT = {".vtt", ".srt"}
#: Seconds of a transcript kept together in one chunk.
TRANSCRIPT_WINDOW = 90.0


class IngestError(ValueError):
    """A file that could not be read; the message names the path and, when known, the line."""


@dataclass
class Ingested:
    """What reading a folder produced: documents, and what was skipped and why."""

    documents: list[IndexedDocument] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files: int = 0


def _iso(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return str(value)


def _mtime(path: Path) -> str:
    return dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.UTC).date().isoformat()


def _doc_id(root: Path, path: Path, source: str) -> str:
    return f"{source}/{path.relative_to(root).with_suffix('').as_posix()}"


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


def _first_heading(text: str) -> str | None:
    match = re.search(r"^#\s+(.+)$", text, re.M)
    return match.group(1).strip() if match else None


def _document(
    doc_id: str,
    source: str,
    kind: str,
    path: Path,
    meta: dict[str, Any],
    body: str,
    default_acl: list[str],
    title: str | None = None,
) -> IndexedDocument:
    acl = [str(a) for a in meta.get("acl", default_acl)]
    if "attendees" in meta:
        acl = [f"user:{a}" for a in meta["attendees"]] + [str(a) for a in meta.get("acl", [])]
    superseded = meta.get("superseded_by")
    return IndexedDocument(
        doc_id=doc_id,
        source=source,
        kind=kind,
        title=str(
            meta.get("title") or title or _first_heading(body) or path.stem.replace("-", " ")
        ),
        text=body,
        chunks=chunk_markdown(body, doc_id),
        acl=acl,
        url=meta.get("url"),
        updated_at=_iso(meta.get("updated_at") or meta.get("date")) or _mtime(path),
        version=None if meta.get("version") is None else str(meta.get("version")),
        deprecated=str(meta.get("deprecated", "")).lower() in {"true", "yes", "1"},
        superseded_by=f"{source}/{superseded}" if superseded else None,
        origin=str(path),
    )


def markdown_document(
    root: Path, path: Path, source: str, kind: str, default_acl: list[str]
) -> list[IndexedDocument]:
    """A Markdown or text file; front matter gives title, dates, version, status and ACL.

    Front matter keys: ``title``, ``updated_at``, ``version``, ``deprecated``,
    ``superseded_by`` (a file stem in the same source), ``url``, ``acl`` (principals such as
    ``group:engineering`` or ``user:alice``), ``attendees`` (meeting minutes: user names).
    """
    try:
        post = frontmatter.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise IngestError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # YAML counts from the line after the opening "---", which is the file's line 2
        line = f":{mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise IngestError(f"{path}{line}: front matter is not valid YAML ({problem})") from exc
    meta: dict[str, Any] = dict(post.metadata)
    return [
        _document(_doc_id(root, path, source), source, kind, path, meta, post.content, default_acl)
    ]


def html_document(
    root: Path, path: Path, source: str, kind: str, default_acl: list[str]
) -> list[IndexedDocument]:
    """An HTML page: headings and paragraphs kept, scripts and navigation dropped.

    ``<meta name="updated_at|version|deprecated|superseded_by|acl">`` are honoured.
    """
    from bs4 import BeautifulSoup

    try:
        soup = BeautifulSoup(path.read_text(encoding="utf-8", errors="replace"), "html.parser")
    except Exception as exc:  # noqa: BLE001 - the parser raises several types
        raise IngestError(f"{path}: not readable HTML ({exc})") from exc
    meta: dict[str, Any] = {}
    for tag in soup.find_all("meta"):
        name, content = tag.get("name"), tag.get("content")
        if isinstance(name, str) and isinstance(content, str):
            meta[name] = content.split() if name == "acl" else content
    for tag in soup(["script", "style", "nav", "footer", "header"]):
        tag.decompose()
    lines: list[str] = []
    for tag in soup.find_all(["h1", "h2", "h3", "h4", "p", "li", "pre", "td"]):
        text = " ".join(tag.get_text(" ", strip=True).split())
        if not text:
            continue
        level = int(tag.name[1]) if tag.name.startswith("h") else 0
        lines.append(f"{'#' * level} {text}" if level else text)
    body = "\n\n".join(lines)
    title = soup.title.get_text(strip=True) if soup.title else None
    return [
        _document(_doc_id(root, path, source), source, kind, path, meta, body, default_acl, title)
    ]


def pdf_document(
    root: Path, path: Path, source: str, kind: str, default_acl: list[str]
) -> list[IndexedDocument]:
    """A PDF, page by page (pypdf); each page's text is chunked under a ``page N`` heading."""
    import logging

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings become our one problem line
    try:
        reader = PdfReader(str(path))
        pages = [page.extract_text() or "" for page in reader.pages]
        info: dict[str, Any] = dict(reader.metadata or {})
    except (PdfReadError, OSError, ValueError, KeyError) as exc:
        raise IngestError(f"{path}: not a readable PDF ({exc})") from exc
    body = "\n\n".join(
        f"## page {i}\n\n{text.strip()}" for i, text in enumerate(pages, 1) if text.strip()
    )
    title = str(info.get("/Title") or "") or None
    return [
        _document(_doc_id(root, path, source), source, kind, path, {}, body, default_acl, title)
    ]


def transcript_document(
    root: Path, path: Path, source: str, kind: str, default_acl: list[str]
) -> list[IndexedDocument]:
    """A meeting transcript (WebVTT or SRT) in windows of ``TRANSCRIPT_WINDOW`` seconds.

    The speakers named in the transcript (``<v Name>`` or ``Name:``) are its attendees and
    its ACL, together with ``default_acl``.
    """
    cues: list[tuple[float, str, str]] = []  # (start seconds, speaker, text)
    try:
        if path.suffix.lower() == ".vtt":
            import webvtt

            for caption in webvtt.read(str(path)).captions:
                speaker = caption.voice or ""
                text = " ".join(caption.text.split())
                cues.append((caption.start_in_seconds, speaker, text))
        else:
            import pysrt

            text = path.read_text(encoding="utf-8-sig")
            for item in pysrt.from_string(text, error_handling=pysrt.ERROR_RAISE):
                start = item.start.ordinal / 1000
                cues.append((start, "", " ".join(item.text.split())))
    except Exception as exc:  # noqa: BLE001 - the parsers raise their own types
        line = getattr(exc, "line", None) or _line_of(exc)
        where = f":{line}" if line else ""
        raise IngestError(f"{path}{where}: not a valid transcript ({exc})") from exc
    speakers: list[str] = []
    lines: list[tuple[float, str]] = []
    for start, speaker, text in cues:
        match = re.match(r"^([A-Z][\w .'-]{0,40}):\s+(.*)$", text)
        if not speaker and match:
            speaker, text = match.group(1), match.group(2)
        if speaker and speaker.lower() not in speakers:
            speakers.append(speaker.lower())
        lines.append((start, f"{speaker}: {text}" if speaker else text))
    doc_id = _doc_id(root, path, source)
    chunks: list[Chunk] = []
    window: list[str] = []
    window_start = 0.0
    for start, line_text in lines:
        if window and start - window_start >= TRANSCRIPT_WINDOW:
            chunks.append(_cue_chunk(doc_id, len(chunks), window_start, window))
            window = []
        if not window:
            window_start = start
        window.append(line_text)
    if window:
        chunks.append(_cue_chunk(doc_id, len(chunks), window_start, window))
    acl = [*(f"user:{s.split()[0]}" for s in speakers), *default_acl]
    return [
        IndexedDocument(
            doc_id=doc_id,
            source=source,
            kind=kind,
            title=path.stem.replace("-", " "),
            text="\n".join(t for _, t in lines),
            chunks=chunks,
            acl=acl,
            updated_at=_mtime(path),
            origin=str(path),
        )
    ]


def _cue_chunk(doc_id: str, n: int, start: float, lines: list[str]) -> Chunk:
    stamp = f"{int(start // 3600):02d}:{int(start % 3600 // 60):02d}:{int(start % 60):02d}"
    return {"chunk_id": f"{doc_id}#{n}", "heading": f"at {stamp}", "text": "\n".join(lines)}


def _line_of(exc: BaseException) -> int | None:
    match = re.search(r"line (\d+)", str(exc))
    return int(match.group(1)) if match else None


def chat_documents(
    root: Path,
    path: Path,
    source: str,
    kind: str,
    channels: dict[str, list[str]],
    default_acl: list[str],
    problems: list[str],
) -> list[IndexedDocument]:
    """A chat export: JSONL (one message a line) or a JSON array; one document per message.

    Each message: ``{"id", "channel", "author", "ts", "text", "thread"?, "url"?}``. Channel
    membership is the ACL (``channels``, else ``default_acl``); nobody listed means nobody.
    A malformed line is reported by path and line and skipped.
    """
    raw = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        try:
            items = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise IngestError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
        if not isinstance(items, list):
            raise IngestError(f"{path}: expected a JSON array of messages")
        entries = [(i + 1, item) for i, item in enumerate(items)]
        unit = "message"
    else:
        entries = []
        for lineno, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entries.append((lineno, json.loads(line)))
            except json.JSONDecodeError as exc:
                problems.append(f"{path}:{lineno}: not valid JSON ({exc.msg}); line skipped")
        unit = "line"
    docs: list[IndexedDocument] = []
    groups: dict[tuple[str, str], list[int]] = {}
    for where, msg in entries:
        try:
            channel = str(msg["channel"])
            doc_id = f"{source}/{channel}/{msg['id']}"
            text = f"{msg['author']}: {msg['text']}"
            ts = str(msg["ts"])
        except (KeyError, TypeError) as exc:
            problems.append(
                f"{path}:{where}: {unit} lacks {exc} (needs id, channel, author, ts, text); skipped"
            )
            continue
        thread = f" (thread {msg['thread']})" if msg.get("thread") else ""
        docs.append(
            IndexedDocument(
                doc_id=doc_id,
                source=source,
                kind=kind,
                title=f"#{channel} — {msg['author']}, {ts[:10]}{thread}",
                text=text,
                chunks=[{"chunk_id": f"{doc_id}#0", "heading": "", "text": text}],
                acl=list(channels.get(channel, default_acl)),
                url=msg.get("url"),
                updated_at=ts,
                origin=f"{path}:{where}",
            )
        )
        groups.setdefault((channel, str(msg.get("thread") or "")), []).append(len(docs) - 1)
    with_context(docs, groups)
    return docs


#: Messages before and after one message that reading it returns as context.
CONTEXT_MESSAGES = 2


def with_context(docs: list[IndexedDocument], groups: dict[tuple[str, str], list[int]]) -> None:
    """Give each message its neighbours in the same channel and thread, as readable context.

    Only the message itself is a searchable chunk; the neighbours are part of the document's
    text, which ``read`` returns (they share the channel, so they share the ACL).
    """
    for members in groups.values():
        ordered = sorted(members, key=lambda i: docs[i].updated_at or "")
        for pos, i in enumerate(ordered):
            around = (
                ordered[max(0, pos - CONTEXT_MESSAGES) : pos]
                + ordered[pos + 1 : pos + 1 + CONTEXT_MESSAGES]
            )
            context = [f"{docs[j].updated_at}: {docs[j].chunks[0]['text']}" for j in around]
            if context:
                docs[i].text = "\n\n".join([docs[i].chunks[0]["text"], *context])


def read_folder(
    root: Path,
    source: str,
    kind: str,
    default_acl: list[str],
    channels: dict[str, list[str]] | None = None,
    progress: Callable[[Path], None] | None = None,
) -> Ingested:
    """Every readable file under ``root``; problems are collected, never fatal."""
    readers = {
        **dict.fromkeys(MARKDOWN, markdown_document),
        **dict.fromkeys(HTML, html_document),
        **dict.fromkeys(PDF, pdf_document),
        **dict.fromkeys(TRANSCRIPT, transcript_document),
    }
    out = Ingested()
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        suffix = path.suffix.lower()
        if progress is not None:
            progress(path)
        try:
            if suffix in CHAT and (kind == "messages" or channels is not None):
                out.documents += chat_documents(
                    root, path, source, kind, channels or {}, default_acl, out.problems
                )
            elif suffix in readers:
                out.documents += readers[suffix](root, path, source, kind, default_acl)
            else:
                continue
            out.files += 1
        except IngestError as exc:
            out.problems.append(f"{exc}; file skipped")
        except (OSError, UnicodeDecodeError) as exc:
            out.problems.append(f"{path}: cannot be read ({exc}); file skipped")
    return out
