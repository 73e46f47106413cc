"""Exports read in place from a zip: extracted to a temporary folder, safely."""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sources.chunking import IngestError

#: Bounds on a zip read in place (an export): members, and bytes once uncompressed.
MAX_ZIP_MEMBERS = 200_000
MAX_ZIP_BYTES = 4 * 2**30


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
        if len(members) > MAX_ZIP_MEMBERS or total > MAX_ZIP_BYTES:
            raise IngestError(
                f"{path}: {len(members):,} files, {total / 2**30:.1f} GiB uncompressed; more "
                f"than the {MAX_ZIP_MEMBERS:,} files or {MAX_ZIP_BYTES / 2**30:.0f} GiB read in "
                "place — extract it and index the folder"
            )
        root = Path(tmp)
        for member in members:
            target = (root / member.filename).resolve()
            if member.filename.startswith("/") or root.resolve() not in target.parents:
                raise IngestError(f"{path}: member {member.filename!r} points outside the zip")
        archive.extractall(root)
        # an export zipped with its folder inside: read that folder
        entries = [p for p in root.iterdir() if not p.name.startswith("__MACOSX")]
        yield entries[0] if len(entries) == 1 and entries[0].is_dir() else root
