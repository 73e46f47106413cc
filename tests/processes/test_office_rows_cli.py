"""A workbook through `seekgraph index` and `ask`: equal scores and a duplicate id are
reported as they are."""

from __future__ import annotations

from pathlib import Path

from seekgraph.sources.ingestion.ingest import read_folder
from tests.support.processes import cli


def test_a_row_of_equal_scores_and_a_duplicate_id_are_reported_as_they_are(
    tmp_path: Path,
) -> None:
    from openpyxl import Workbook

    folder = tmp_path / "scores"
    folder.mkdir()
    book = Workbook()
    book.active.append(["Quarter", "Alpha", "Beta", "Gamma", "Delta"])
    book.active.append(["Q3", 60, 84, 19, 19])
    book.save(folder / "scores.xlsx")
    (folder / "scores.csv").write_text("Quarter,Total\nQ3,182\n")
    read = read_folder(folder, "scores", "docs", ["group:everyone"])
    [sheet] = [d for d in read.documents if d.doc_id == "scores/scores.xlsx"]
    assert "- Quarter: Q3; Alpha: 60; Beta: 84; Gamma: 19; Delta: 19" in sheet.text
    done = cli("index", str(folder), "--source", "scores", "--kind", "docs",
               "--acl", "group:everyone", data_dir=tmp_path / "data")  # fmt: skip
    assert done.returncode == 0, done.stderr
    # both files are indexed: one renamed, reported once, and nothing counted as skipped
    assert "2 documents indexed" in done.stdout and "0 skipped, 1 renamed" in done.stdout
    assert done.stderr.count("same document id") == 1 and "skipped:" not in done.stderr
