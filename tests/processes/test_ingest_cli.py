"""`seekgraph index` then `seekgraph ask`: a folder indexed by the command is searched by it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fast import test_ingest
from tests.support.processes import cli

folder = test_ingest.folder  # the fixture: the same folder of every format


def test_seekgraph_index_then_ask_that_source(folder: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = cli(
        "index",
        str(folder),
        "--source",
        "team",
        "--kind",
        "docs",
        "--acl",
        "group:everyone",
        data_dir=data,
    )
    assert done.returncode == 0, done.stderr
    assert "team: 4 documents indexed" in done.stdout and "2 skipped" in done.stdout
    assert "skipped: " in done.stderr and "broken.md:" in done.stderr
    again = cli(
        "index",
        str(folder),
        "--source",
        "team",
        "--kind",
        "docs",
        "--acl",
        "group:everyone",
        data_dir=data,
    )
    assert "0 documents indexed" in again.stdout and "4 unchanged" in again.stdout
    asked = cli(
        "ask",
        "Where do visitors park?",
        "--user",
        "bob",
        "--source",
        "team",
        "--json",
        data_dir=data,
    )
    assert asked.returncode == 0, asked.stderr
    assert any(c["doc_id"] == "team/page" for c in json.loads(asked.stdout)["citations"])
    missing = cli("index", str(folder), "--source", "team", "--kind", "docs", data_dir=data)
    assert missing.returncode == 2 and "--acl" in missing.stderr


def test_a_workspace_of_indexed_folders_only_is_not_said_to_be_indexing(
    folder: Path, tmp_path: Path
) -> None:
    # a workspace of one's own with no folders of its own: `index` fills it, and the first
    # `ask` does not claim to index it again
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "workspace.json").write_text(
        json.dumps({"users": {"me": {"groups": ["everyone"]}}, "sources": []})
    )
    data = tmp_path / "data"
    common = ("--workspace", str(ws))
    done = cli("index", str(folder), "--source", "team", "--kind", "docs", "--acl",
               "group:everyone", *common, data_dir=data)  # fmt: skip
    assert done.returncode == 0, done.stderr
    asked = cli("ask", "Where do visitors park?", "--user", "me", "--json", *common,
                data_dir=data)  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    assert "indexing" not in asked.stderr, asked.stderr
    assert any(c["doc_id"] == "team/page" for c in json.loads(asked.stdout)["citations"])
