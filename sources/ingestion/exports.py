"""What Notion and Confluence exports add to the files they are made of.

- **Confluence** (a space exported as HTML): a page's ``#main-content`` is its text, its
  ``#breadcrumbs`` (space › parent pages) become the heading its passages sit under, its title
  is the ``<title>`` after ``Space : ``, and "last modified on …" in ``.page-metadata`` its
  date. Attachments (``attachments/<page id>/…``) are files of the folder like any other.
- **Notion** (Markdown & CSV export): every page and database file name ends in the page's
  32-hex id (``Roadmap 1a2b….md``, a folder of the same name for its sub-pages). The ids are
  dropped from document ids and titles, and a sub-page's title says where it sits
  (``Launch plan (in Roadmap)``); a database is its ``… _all.csv`` (every row) when the export
  has one, the view's ``.csv`` otherwise.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from seekgraph.sources.indexes.index_source import IndexedDocument
from seekgraph.sources.ingestion.chunking import rename

NOTION_ID = re.compile(r"\s[0-9a-f]{32}(?=(_all)?$)")


def confluence_page(soup: Any) -> tuple[Any, str | None, list[str], str | None] | None:
    """(main content, title, breadcrumbs, last modified) of a Confluence export page."""
    main = soup.select_one("#main-content")
    if main is None:
        return None
    trail = [
        " ".join(a.get_text(" ", strip=True).split())
        for a in soup.select("#breadcrumbs li")
        if a.get_text(strip=True)
    ]
    title = soup.title.get_text(strip=True) if soup.title else None
    if title and " : " in title:
        title = title.split(" : ", 1)[1]
    updated = None
    meta = soup.select_one(".page-metadata")
    if meta is not None:
        match = re.search(
            r"last (?:modified|updated) on ([A-Z][a-z]{2} \d{1,2}, \d{4})", meta.get_text(" ")
        )
        if match:
            from dateutil import parser

            updated = parser.parse(match.group(1)).date().isoformat()
    return main, title, trail, updated


def is_notion_export(files: list[Path]) -> bool:
    """Whether file names carry Notion's page ids."""
    return sum(1 for f in files if NOTION_ID.search(f.stem)) >= max(1, len(files) // 2)


def notion_tidy(
    docs: list[IndexedDocument], files: list[Path], root: Path
) -> list[IndexedDocument]:
    """Notion's ids out of document ids and titles, sub-pages titled with their parent.

    A database is read once: its ``_all`` file (every row) when the export has one.
    """
    stems = {f.with_suffix("").as_posix() for f in files}
    kept = []
    for doc in docs:
        path = Path(doc.origin or "")
        stem = path.with_suffix("").as_posix()
        if path.suffix == ".csv" and not stem.endswith("_all") and f"{stem}_all" in stems:
            continue  # the view's rows; the _all file has every row
        clean = "/".join(NOTION_ID.sub("", part) for part in doc.doc_id.split("/"))
        rename(doc, clean.removesuffix("_all"))
        doc.title = NOTION_ID.sub("", doc.title).removesuffix("_all")
        try:
            parent = path.parent.relative_to(root)
        except ValueError:
            parent = Path()
        if parent.parts:
            doc.title = f"{doc.title} (in {NOTION_ID.sub('', parent.parts[-1])})"
        kept.append(doc)
    return kept
