"""Office files: Word, PowerPoint, Excel and CSV, read into structured Markdown.

- ``.docx`` (python-docx): headings stay headings, list items stay list items (nested ones
  indented), a table becomes one record per row under its header (``Header: value; …``),
  a cell merged across columns named once under both headers; body order is kept.
- ``.pptx`` (python-pptx): one passage per slide, under ``Slide N: title``, with its text
  (bullet levels kept), its tables, and its speaker notes.
- ``.xlsx`` (openpyxl) and ``.csv``: each sheet's rows as records under the sheet's header
  row (``Header: value`` for each cell, equal neighbours included); a merged cell's value
  fills its whole range, named once under both headers where it spans columns; a sheet
  longer than ``MAX_ROWS`` rows is cut there and the cut reported.

Each reader returns Markdown that ``chunk_markdown`` splits under its headings.
"""

from __future__ import annotations

import csv
import io
import warnings
from pathlib import Path
from typing import Any

from seekgraph.sources.ingestion.chunking import IngestError

#: Rows of one sheet indexed at most; the rest is reported, not silently dropped.
MAX_ROWS = 5000
#: Characters of one cell kept.
MAX_CELL = 500


def records(
    rows: list[list[str]], name: str, joined: list[list[bool]] | None = None
) -> tuple[list[str], int]:
    """Rows under their header as ``Header: value; …`` lines; and how many rows were cut.

    The header is the first row with at least two filled cells (a title row above it is kept
    as a line of its own). ``joined[r][c]`` says cell ``c`` of row ``r`` is merged with the
    cell on its left (as the file merges it): its value is named once, under both headers.
    Equal neighbours that the file does not merge stay two cells.
    """
    marks = joined or [[] for _ in rows]
    kept = [
        ([" ".join(c.split())[:MAX_CELL] for c in row], mark)
        for row, mark in zip(rows, marks, strict=False)
        if any(c.strip() for c in row)
    ]
    rows = [row for row, _ in kept]
    lines: list[str] = []
    start = 0
    while start < len(rows) and sum(1 for c in rows[start] if c) < 2:
        lines.append(" ".join(c for c in rows[start] if c))
        start += 1
    if start >= len(rows):
        return lines, 0
    header = [h or f"column {i + 1}" for i, h in enumerate(rows[start])]
    body = kept[start + 1 :]
    cut = max(0, len(body) - MAX_ROWS)
    for row, mark in body[:MAX_ROWS]:
        pairs: list[str] = []
        for c, (h, v) in enumerate(zip(header, row, strict=False)):
            merged = c < len(mark) and mark[c]
            if v and merged and pairs:  # a merged cell across columns: one value, both names
                name, _, value = pairs[-1].partition(": ")
                pairs[-1] = f"{name} / {h}: {value}"
            elif v:
                pairs.append(f"{h}: {v}")
        if pairs:
            lines.append("- " + "; ".join(pairs))
    return lines, cut


def docx_markdown(path: Path) -> tuple[str, str | None]:
    """A Word document as Markdown, and its title (core properties) when set."""
    import docx
    from docx.oxml.ns import qn
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(str(path))
    except Exception as exc:  # noqa: BLE001 - zip and XML errors of several types
        raise IngestError(f"{path}: not a readable Word document ({exc})") from exc
    parts: list[str] = []
    for child in document.element.body.iterchildren():
        if child.tag == qn("w:p"):
            paragraph = Paragraph(child, document)
            text = " ".join(paragraph.text.split())
            if not text:
                continue
            style = (paragraph.style.name if paragraph.style is not None else "") or ""
            level = _list_level(paragraph)
            if style.startswith("Heading") and style[7:].strip().isdigit():
                parts.append(f"{'#' * min(6, int(style[7:]))} {text}")
            elif style == "Title":
                parts.append(f"# {text}")
            elif level is not None or style.startswith("List"):
                parts.append(f"{'  ' * (level or 0)}- {text}")
            else:
                parts.append(text)
        elif child.tag == qn("w:tbl"):
            table = Table(child, document)
            cells = [list(row.cells) for row in table.rows]
            rows = [[c.text for c in row] for row in cells]
            # python-docx repeats a cell merged across columns (one w:tc, several grid columns)
            joined = [
                [i > 0 and row[i]._tc is row[i - 1]._tc for i in range(len(row))] for row in cells
            ]
            lines, _ = records(rows, "table", joined)
            parts.append("\n".join(lines))
    title = (document.core_properties.title or "").strip() or None
    return _join(parts), title


def _list_level(paragraph: Any) -> int | None:
    """The nesting level of a numbered or bulleted paragraph (``w:numPr/w:ilvl``), or None."""
    props = paragraph._p.pPr
    if props is None or props.numPr is None:
        style = (paragraph.style.name if paragraph.style is not None else "") or ""
        last = style.rsplit(" ", 1)[-1]
        if style.startswith("List") and last.isdigit():  # "List Bullet 2": the second level
            return int(last) - 1
        return None
    ilvl = props.numPr.ilvl
    return int(ilvl.val) if ilvl is not None and ilvl.val is not None else 0


def _join(parts: list[str]) -> str:
    """Blocks separated by blank lines, but consecutive list items kept as one list."""
    out: list[str] = []
    for part in parts:
        if out and part.lstrip().startswith("- ") and out[-1].lstrip().startswith("- "):
            out[-1] += "\n" + part
        else:
            out.append(part)
    return "\n\n".join(out)


def pptx_markdown(path: Path) -> tuple[str, str | None]:
    """A presentation as Markdown: one ``## Slide N: title`` section per slide."""
    from pptx import Presentation

    try:
        deck = Presentation(str(path))
    except Exception as exc:  # noqa: BLE001
        raise IngestError(f"{path}: not a readable PowerPoint file ({exc})") from exc
    sections: list[str] = []
    first_title: str | None = None
    for n, slide in enumerate(deck.slides, start=1):
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text.split()) if title_shape is not None else ""
        first_title = first_title or title or None
        lines: list[str] = []
        title_id = title_shape.shape_id if title_shape is not None else None
        for shape in slide.shapes:
            if shape.shape_id == title_id:
                continue
            if shape.has_text_frame:
                for paragraph in shape.text_frame.paragraphs:
                    text = " ".join("".join(r.text for r in paragraph.runs).split())
                    if text:
                        lines.append(f"{'  ' * paragraph.level}- {text}")
            if getattr(shape, "has_table", False) and shape.has_table:
                cells = [list(row.cells) for row in shape.table.rows]
                rows = [[c.text for c in row] for row in cells]
                # a cell covered by a merge across columns says so (a:tc hMerge="1")
                joined = [[bool(c._tc.hMerge) for c in row] for row in cells]
                table_lines, _ = records(rows, "table", joined)
                lines.extend(table_lines)
        notes = ""
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = " ".join(slide.notes_slide.notes_text_frame.text.split())
        body = "\n".join(lines)
        if notes:
            body += f"\n\nSpeaker notes: {notes}"
        heading = f"## Slide {n}: {title}" if title else f"## Slide {n}"
        sections.append(f"{heading}\n\n{body.strip()}".strip())
    title = (deck.core_properties.title or "").strip()
    return "\n\n".join(sections), title or first_title


def xlsx_markdown(path: Path, problems: list[str]) -> tuple[str, str | None]:
    """A workbook as Markdown: ``## Sheet`` sections of row records."""
    from openpyxl import load_workbook

    try:
        with warnings.catch_warnings():  # what openpyxl drops (extensions, validation): no text
            warnings.simplefilter("ignore", UserWarning)
            book = load_workbook(str(path), data_only=True)
    except Exception as exc:  # noqa: BLE001
        raise IngestError(f"{path}: not a readable Excel workbook ({exc})") from exc
    sections = []
    for sheet in book.worksheets:
        fill: dict[tuple[int, int], Any] = {}
        continues: set[tuple[int, int]] = set()  # merged with the cell on its left
        for merged in sheet.merged_cells.ranges:
            value = sheet.cell(merged.min_row, merged.min_col).value
            for row in range(merged.min_row, merged.max_row + 1):
                for col in range(merged.min_col, merged.max_col + 1):
                    fill[(row, col)] = value
                    if col > merged.min_col:
                        continues.add((row, col))
        rows: list[list[str]] = []
        joined: list[list[bool]] = []
        for r, row in enumerate(sheet.iter_rows(values_only=True), start=1):
            rows.append([_cell(fill.get((r, c), v)) for c, v in enumerate(row, start=1)])
            joined.append([(r, c) in continues for c in range(1, len(row) + 1)])
            if len(rows) > MAX_ROWS + 50:
                break
        lines, cut = records(rows, sheet.title, joined)
        total = sheet.max_row
        if cut or total > len(rows):
            problems.append(
                f"{path}: sheet {sheet.title!r} has {total:,} rows; its first {MAX_ROWS:,} "
                "are indexed"
            )
        if lines:
            sections.append(f"## {sheet.title}\n\n" + "\n".join(lines))
    title = (book.properties.title or "").strip() or None
    return "\n\n".join(sections), title


def csv_markdown(path: Path, problems: list[str]) -> tuple[str, str | None]:
    """A CSV file as row records under its header (delimiter sniffed)."""
    raw = path.read_text(encoding="utf-8-sig")
    try:
        dialect: Any = csv.Sniffer().sniff(raw[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = list(csv.reader(io.StringIO(raw), dialect))
    lines, cut = records(rows, path.stem)
    if cut:
        problems.append(f"{path}: {cut + MAX_ROWS:,} rows; the first {MAX_ROWS:,} are indexed")
    return "\n".join(lines), None


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if hasattr(value, "hour"):  # a datetime: its date, and its time when it has one
        return str(value.isoformat(sep=" ", timespec="minutes")).removesuffix(" 00:00")
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
