"""A sheet row is read as its author wrote it: one ``Header: value`` per cell.

Equal neighbours stay two cells; only cells the sheet merges are named once under both
headers. Real workbooks from openpyxl's own fixtures (tests/data/openpyxl/README.md), and
the row that went wrong (60, 84, 19, 19).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from seekgraph.sources.ingestion.ingest import read_folder

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "openpyxl"


def sheet_text(tmp_path: Path, name: str) -> str:
    shutil.copy(FIXTURES / name, tmp_path / name)
    [doc] = read_folder(tmp_path, "sheets", "docs", ["group:everyone"]).documents
    return doc.text


def test_equal_neighbours_in_a_real_workbook_without_merges_stay_two_cells(
    tmp_path: Path,
) -> None:
    text = sheet_text(tmp_path, "guess_types.xlsx")
    assert "- 3.14: 3.14; 3.14: 3.14; 3/14/15: 3/14/15; 0.15: 3E5" in text
    assert "3.14 / 3.14" not in text


def test_a_real_workbooks_merged_cells_are_named_once_under_each_header(tmp_path: Path) -> None:
    text = sheet_text(tmp_path, "merge_range.xlsx")
    assert "- 1: A; 2: B; 3: C; 4: D" in text  # the header row's records
    assert "- 2 / 3 / 4: 10" in text  # B15:D15, merged in the sheet
    assert text.count("- 3: x; column 5: z") == 6  # equal rows stay rows
