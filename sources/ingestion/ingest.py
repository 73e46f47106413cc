"""Turn files into indexed documents: Markdown, text, HTML, PDF, Office, chats, transcripts.

Folders of Markdown, text, HTML, PDF, Word, PowerPoint, Excel and CSV
(``sources.ingestion.office``); chat exports (JSONL or JSON); meeting transcripts (VTT, SRT)
and minutes.

A file that cannot be read is reported by path (and line, when known) and skipped; the rest
of the folder is still indexed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import frontmatter
import yaml

from seekgraph.sources.base import link_url
from seekgraph.sources.indexes.index_source import IndexedDocument
from seekgraph.sources.ingestion.chunking import (
    HARD_CHUNK_CHARS,
    MAX_CHUNK_CHARS,
    MAX_DOCUMENT_CHARS,
    IngestError,
    chunk_markdown,
    doc_id_of,
    iso,
    mtime,
    parse_acl,
    rename,
    split_long,
)
from seekgraph.sources.ingestion.conversations import (
    CHANNELS_FILE,
    chat_documents,
    export_channels,
    transcript_document,
    with_context,
)
from seekgraph.sources.ingestion.exports import confluence_page, is_notion_export, notion_tidy
from seekgraph.sources.ingestion.mail import MAIL, mail_documents
from seekgraph.sources.ingestion.markdown_text import (
    first_heading,
    is_mdx,
    mdx_as_markdown,
    readable_markdown,
    rst_as_markdown,
    text_as_markdown,
)
from seekgraph.sources.ingestion.mdbook import expand_links
from seekgraph.sources.ingestion.slack_export import is_slack_export, slack_documents
from seekgraph.sources.ingestion.vitepress import expand_imports

__all__ = [
    "HARD_CHUNK_CHARS",
    "MAX_CHUNK_CHARS",
    "IngestError",
    "Ingested",
    "chunk_markdown",
    "read_folder",
    "split_long",
    "with_context",
]

MARKDOWN = {".md", ".markdown", ".mdx", ".txt", ".rst"}
RST = {".rst"}  # reStructuredText (Sphinx's pages): no front matter
#: The pages read as the Markdown of what they show (any other of MARKDOWN is Markdown):
#: plain text, nothing in it markup; MDX, Markdown with JSX components (Docusaurus,
#: Starlight); reStructuredText, as its Sphinx site shows it
AS_MARKDOWN: dict[str, Callable[[str], str]] = {
    ".txt": text_as_markdown,
    ".mdx": mdx_as_markdown,
    ".rst": rst_as_markdown,
}
HTML = {".html", ".htm"}
PDF = {".pdf"}
CHAT = {".jsonl", ".json"}
TRANSCRIPT = {".vtt", ".srt"}
OFFICE = {".docx", ".pptx", ".xlsx", ".csv"}


@dataclass
class Ingested:
    """What reading a folder produced: documents, and what was skipped and why."""

    documents: list[IndexedDocument] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files: int = 0
    channel_acls: dict[str, str] = field(default_factory=dict)
    """Chat channel → who may read it and why (its members, or the source's ACL)."""
    unsupported: list[str] = field(default_factory=list)
    """Files of a type no reader handles (listed in the summary, not indexed)."""
    renamed: list[str] = field(default_factory=list)
    """Documents indexed under another id than their file's (two files, one id)."""
    passed: list[str] = field(default_factory=list)
    """Folders not read: hidden ones, a build's output, templates (``files_under``)."""


def _first_heading(text: str) -> str | None:
    return first_heading(text)


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
    if len(body) > MAX_DOCUMENT_CHARS:
        raise IngestError(
            f"{path}: {len(body):,} characters of text, more than the "
            f"{MAX_DOCUMENT_CHARS:,} a document may hold; split it into several files"
        )
    acl = parse_acl(meta["acl"], str(path)) if "acl" in meta else list(default_acl)
    if "attendees" in meta:
        attendees = meta["attendees"]
        if isinstance(attendees, str):
            attendees = [a for a in re.split(r"[\s,]+", attendees) if a]
        if not isinstance(attendees, list) or not all(isinstance(a, str) for a in attendees):
            raise IngestError(f"{path}: attendees must be a list of user names")
        acl = [f"user:{a}" for a in attendees] + (
            parse_acl(meta["acl"], str(path)) if "acl" in meta else []
        )
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
        url=link_url(meta.get("url")),
        updated_at=iso(meta.get("updated_at") or meta.get("date")) or mtime(path),
        version=None if meta.get("version") is None else str(meta.get("version")),
        deprecated=str(meta.get("deprecated", "")).lower() in {"true", "yes", "1"},
        superseded_by=f"{source}/{superseded}" if superseded else None,
        origin=str(path),
    )


def markdown_document(
    root: Path, path: Path, source: str, kind: str, default_acl: list[str]
) -> list[IndexedDocument]:
    """A Markdown, plain-text or reStructuredText file; front matter (not in rST) says more.

    Front matter keys (title, dates, version, status, ACL): ``title``, ``updated_at``,
    ``version``, ``deprecated``, ``superseded_by`` (a file stem in the same source), ``url``,
    ``acl`` (principals such as ``group:engineering`` or ``user:alice``), ``attendees``
    (meeting minutes: user names).
    """
    try:
        raw = path.read_text(encoding="utf-8")
        # reStructuredText has no front matter: a page may open with an overlined title
        post = frontmatter.Post(raw) if path.suffix.lower() in RST else frontmatter.loads(raw)
    except UnicodeDecodeError as exc:
        raise IngestError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # YAML counts from the line after the opening "---", which is the file's line 2
        line = f":{mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise IngestError(f"{path}{line}: front matter is not valid YAML ({problem})") from exc
    meta: dict[str, Any] = dict(post.metadata)
    content = post.content
    if path.suffix.lower() in {".md", ".markdown"}:  # an mdBook page's includes are in it
        # a page naming its own readers includes nothing: an included file's may not cover them
        own_readers = "acl" in meta or "attendees" in meta
        content, book_title = expand_links(
            content, path, root, NOT_CONTENT_FOLDERS, includes=not own_readers
        )
        if book_title:
            meta.setdefault("title", book_title)
        # a VitePress page's code snippet imports (``<<< @/snippets/app.js#setup``)
        content = expand_imports(content, path, root, NOT_CONTENT_FOLDERS, not own_readers)
    as_markdown = AS_MARKDOWN.get(path.suffix.lower())
    if as_markdown is None and is_mdx(content):  # Docusaurus reads a .md page as MDX
        as_markdown = mdx_as_markdown
    mdx = as_markdown is mdx_as_markdown
    content = as_markdown(content) if as_markdown else content
    # unwrapped, without comments or link references (MDX has no indented code)
    body = readable_markdown(content, indented_code=not mdx)
    # the title is read from the page as written: a call-out above it is prose in ``body``
    title = first_heading(content)
    return [
        _document(doc_id_of(root, path, source), source, kind, path, meta, body, default_acl, title)
    ]


def html_markdown(soup: Any) -> str:
    """An HTML tree's readable blocks as Markdown (``html_text``), navigation and chrome dropped."""
    for tag in soup(["script", "style", "nav", "footer", "header"]):
        tag.decompose()
    from seekgraph.sources.ingestion.html_text import html_blocks  # (bs4: when HTML is read)

    return "\n\n".join(html_blocks(soup))


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
    title = soup.title.get_text(strip=True) if soup.title else None
    lines: list[str] = []
    page = confluence_page(soup)
    if page is not None:  # a Confluence export: the page's own content, under its trail
        soup, title, trail, updated = page
        meta.setdefault("updated_at", updated)
        lines.append(f"# {' › '.join([*trail, title or path.stem])}")
    body = "\n\n".join([*lines, html_markdown(soup)])
    return [
        _document(doc_id_of(root, path, source), source, kind, path, meta, body, default_acl, title)
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
    # its own title, else its file name: the "page N" headings are no title
    title = str(info.get("/Title") or "") or path.stem.replace("-", " ")
    return [
        _document(doc_id_of(root, path, source), source, kind, path, {}, body, default_acl, title)
    ]


def office_document(
    root: Path, path: Path, source: str, kind: str, default_acl: list[str], problems: list[str]
) -> list[IndexedDocument]:
    """A Word, PowerPoint, Excel or CSV file (``ingestion.office``), under the source's ACL."""
    from seekgraph.sources.ingestion import office
    from seekgraph.sources.ingestion.archives import check_office_zip

    suffix = path.suffix.lower()
    if suffix in (".docx", ".pptx", ".xlsx"):
        check_office_zip(path)  # a zip bomb is skipped before any of it is parsed
    if suffix == ".docx":
        body, title = office.docx_markdown(path)
    elif suffix == ".pptx":
        body, title = office.pptx_markdown(path)
    elif suffix == ".xlsx":
        body, title = office.xlsx_markdown(path, problems)
    else:
        body, title = office.csv_markdown(path, problems)
    doc_id = doc_id_of(root, path, source)
    return [_document(doc_id, source, kind, path, {}, body, default_acl, title)]


#: Folders of a documentation project that hold no page of it: a build's output (Sphinx's
#: ``_build`` — every page again, as HTML —, Jekyll's ``_site``), page templates (Sphinx's
#: ``_templates``), installed packages and caches. Hidden ones (``.git``, ``.venv``) too.
NOT_CONTENT_FOLDERS = frozenset({"_build", "_site", "_templates", "node_modules", "__pycache__"})


def files_under(root: Path, passed: set[str] | None = None) -> tuple[list[Path], list[Path]]:
    """The files of the folder ``root`` (sorted), and the links in it that lead outside it.

    A symbolic link is followed only when its target lies inside ``root``: indexing a
    folder under an ACL never reads ``/etc/passwd`` through a link someone left in it.
    Hidden files and folders (``.git``) and the folders in ``NOT_CONTENT_FOLDERS`` are passed
    over; ``passed`` collects those folders' paths (relative to ``root``).
    """
    top = root.resolve()
    inside: list[Path] = []
    outside: list[Path] = []
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        parts = path.relative_to(root).parts
        over = next(
            (n for n, part in enumerate(parts) if part[:1] == "." or part in NOT_CONTENT_FOLDERS),
            None,
        )
        if over is not None:
            if passed is not None and over < len(parts) - 1:
                passed.add("/".join(parts[: over + 1]))
            continue
        target = path.resolve()
        (inside if top in target.parents else outside).append(path)
    return inside, outside


def read_file(
    root: Path,
    path: Path,
    source: str,
    kind: str,
    default_acl: list[str],
    problems: list[str],
    people: dict[str, str],
) -> list[IndexedDocument] | None:
    """One file by its type (``None``: a type no reader handles)."""
    suffix = path.suffix.lower()
    readers = {
        **dict.fromkeys(MARKDOWN, markdown_document),
        **dict.fromkeys(HTML, html_document),
        **dict.fromkeys(PDF, pdf_document),
    }
    if suffix in TRANSCRIPT:
        return transcript_document(root, path, source, kind, default_acl, problems)
    if suffix in OFFICE:
        return office_document(root, path, source, kind, default_acl, problems)
    if suffix in MAIL:

        def attachment(folder: Path, file: Path, notes: list[str]) -> list[IndexedDocument]:
            return read_file(folder, file, source, kind, [], notes, people) or []

        return mail_documents(root, path, source, kind, problems, people, attachment)
    if suffix in readers:
        return readers[suffix](root, path, source, kind, default_acl)
    return None


def read_folder(
    root: Path,
    source: str,
    kind: str,
    default_acl: list[str],
    channels: dict[str, list[str]] | None = None,
    progress: Callable[[Path], None] | None = None,
    people: dict[str, str] | None = None,
) -> Ingested:
    """Every readable file under ``root``; problems are collected, never fatal.

    Chat messages are readable by their channel's members: ``channels`` (the workspace's
    list) first, then the export's own ``channels.json``; ``default_acl`` only for a
    channel neither lists. ``Ingested.channel_acls`` says which ACL each channel got.
    A Slack export (``users.json`` and ``channels.json``) is read as one: its conversations'
    members are the ACL. E-mail is readable by its sender and recipients. ``people`` maps an
    e-mail address or a chat handle (lower case) to the workspace user it is.
    """
    people = people or {}
    out = Ingested()
    chat = kind == "messages" or channels is not None
    if chat and is_slack_export(root):
        notes: list[str] = []
        try:
            out.documents, out.channel_acls = slack_documents(root, source, kind, people, notes)
        except IngestError as exc:
            notes.append(str(exc))
        out.problems += notes
        out.files = sum(1 for _ in root.rglob("*.json"))
        return out
    members: dict[str, list[str]] = {}
    if chat:
        try:
            members = {**export_channels(root), **(channels or {})}
        except IngestError as exc:
            out.problems.append(f"{exc}; its channels get the source's ACL")
    seen: dict[str, Path] = {}
    passed: set[str] = set()
    files, outside = files_under(root, passed)
    out.passed = sorted(passed)
    notion = is_notion_export([f.relative_to(root) for f in files])
    out.problems += [
        f"{path}: a link to a file outside the indexed folder; skipped" for path in outside
    ]
    for path in files:
        suffix = path.suffix.lower()
        if progress is not None:
            progress(path)
        if chat and path == root / CHANNELS_FILE:
            continue
        problems: list[str] = []
        try:
            if suffix in CHAT and chat:
                docs = chat_documents(root, path, source, kind, members, default_acl, problems)
            else:
                found = read_file(root, path, source, kind, default_acl, problems, people)
                if found is None:
                    out.unsupported.append(str(path.relative_to(root)))
                    continue
                docs = found
        except IngestError as exc:
            out.problems.append(f"{exc}; file skipped")
            continue
        except (OSError, UnicodeDecodeError) as exc:
            out.problems.append(f"{path}: cannot be read ({exc}); file skipped")
            continue
        except Exception as exc:  # noqa: BLE001 - one bad file never stops the rest
            out.problems.append(f"{path}: could not be read ({type(exc).__name__}: {exc}); skipped")
            continue
        finally:
            out.problems += problems
        if notion:
            docs = notion_tidy(docs, files, root)
        kept = []
        for doc in docs:
            if doc.doc_id in seen:  # x.md beside x.txt, or a message id in two exports
                first = seen[doc.doc_id]
                renamed = f"{source}/{path.relative_to(root).as_posix()}"
                if suffix in CHAT or renamed in seen:
                    out.problems.append(
                        f"{path}: {doc.doc_id} was already read from {first}; skipped"
                    )
                    continue
                out.renamed.append(
                    f"{path}: same document id as {first.name} ({doc.doc_id}); indexed as {renamed}"
                )
                rename(doc, renamed)
            seen[doc.doc_id] = path
            kept.append(doc)
            if suffix in CHAT and chat:
                channel = doc.doc_id.split("/")[-2]
                listed = members.get(channel)
                out.channel_acls.setdefault(
                    channel,
                    f"{', '.join(listed) or 'nobody'} (channel members)"
                    if listed is not None
                    else f"{', '.join(default_acl) or 'nobody'} (the source's ACL: the channel "
                    "lists no members)",
                )
        out.documents += kept
        out.files += 1
    return out
