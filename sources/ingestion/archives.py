"""Exports read in place from a zip: extracted to a temporary folder, safely."""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from seekgraph.sources.ingestion.chunking import IngestError

MB = 2**20


@dataclass
class ZipLimits:
    """Bounds on zip-based files, checked from the zip's directory before anything is read.

    The server's settings of the same names set them at start (``server.bootstrap``).
    """

    export_mb: int = 4096
    """Bytes, uncompressed, of an export zip read in place (SEEKGRAPH_MAX_EXPORT_UNZIPPED_MB)."""
    export_members: int = 200_000
    """Files in an export zip read in place (SEEKGRAPH_MAX_EXPORT_MEMBERS)."""
    office_xml_mb: int = 10
    """XML, uncompressed, of a .docx, .pptx or .xlsx (SEEKGRAPH_MAX_OFFICE_XML_MB): what the
    readers parse into memory; images inside are not counted."""
    office_members: int = 10_000
    """Parts of a .docx, .pptx or .xlsx (SEEKGRAPH_MAX_OFFICE_MEMBERS)."""


#: The bounds in force (one set per process; the composition root applies the settings).
LIMITS = ZipLimits()


def _over(
    path: Path, members: int, most_members: int, setting_members: str, size: int, most_mb: int,
    what: str, setting_mb: str, hint: str = "",
) -> None:  # fmt: skip
    if members > most_members:
        raise IngestError(
            f"{path}: it holds {members:,} files, the limit is {most_members:,} "
            f"({setting_members}){hint}"
        )
    if size > most_mb * MB:
        raise IngestError(
            f"{path}: it expands to {size / MB:,.0f} MB{what}, the limit is "
            f"{most_mb:,} MB ({setting_mb}){hint}"
        )


def check_office_zip(path: Path) -> None:
    """Raise ``IngestError`` when an Office file's zip would expand past ``LIMITS``.

    Read from the zip's central directory only: a zip bomb is refused in milliseconds.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise IngestError(f"{path}: not a readable Office file (not a zip: {exc})") from exc
    xml = sum(m.file_size for m in members if m.filename.lower().endswith((".xml", ".rels")))
    _over(path, len(members), LIMITS.office_members, "SEEKGRAPH_MAX_OFFICE_MEMBERS", xml,
          LIMITS.office_xml_mb, " of XML", "SEEKGRAPH_MAX_OFFICE_XML_MB")  # fmt: skip


@contextmanager
def unzipped(path: Path) -> Iterator[Path]:
    """A zip (a Slack, Notion or Confluence export) extracted to a temporary folder.

    Members with absolute paths or ``..`` are refused, and so is a zip whose members are too
    many or uncompress to too much (a zip bomb): nothing is written outside the folder.
    """
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise IngestError(f"{path}: not a readable zip ({exc})") from exc
    with archive, tempfile.TemporaryDirectory(prefix="seekgraph-zip-") as tmp:
        members = archive.infolist()
        total = sum(m.file_size for m in members)
        _over(path, len(members), LIMITS.export_members, "SEEKGRAPH_MAX_EXPORT_MEMBERS", total,
              LIMITS.export_mb, "", "SEEKGRAPH_MAX_EXPORT_UNZIPPED_MB",
              " — extract it and index the folder")  # fmt: skip
        root = Path(tmp)
        for member in members:
            target = (root / member.filename).resolve()
            if member.filename.startswith("/") or root.resolve() not in target.parents:
                raise IngestError(f"{path}: member {member.filename!r} points outside the zip")
        archive.extractall(root)
        # an export zipped with its folder inside: read that folder
        entries = [p for p in root.iterdir() if not p.name.startswith("__MACOSX")]
        yield entries[0] if len(entries) == 1 and entries[0].is_dir() else root
