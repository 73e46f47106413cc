"""The command line's answers to mistyped input, in this process (the CLI's processes tier
covers what runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seekgraph.server.cli.main import main


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    return capsys.readouterr().err


def test_a_misspelt_option_is_refused_with_the_commands_closest_option(capsys) -> None:
    err = _refused(["ask", "vpn?", "--user", "bob", "--workspce", "/tmp/ws"], capsys)
    assert "usage: seekgraph ask" in err  # the command's usage, not the top level's
    assert "--workspce /tmp/ws (did you mean --workspace for --workspce?)" in err
    err = _refused(["research", "vpn", "--usr", "bob", "--jsn"], capsys)
    assert "did you mean --user for --usr, --json for --jsn?" in err
    # an option like none of the command's gets no guess
    err = _refused(["ask", "vpn?", "--user", "bob", "--search-k", "3"], capsys)
    assert err.rstrip().endswith("unrecognized arguments: --search-k 3")


def test_a_commands_option_typed_before_its_name_says_where_it_goes(capsys) -> None:
    # ``runs`` has no --json of its own: ``runs list`` has
    err = _refused(["runs", "--json", "list", "t1"], capsys)
    assert "usage: seekgraph runs list" in err
    assert "--json goes after the command: seekgraph runs list --json …" in err
    assert "did you mean" not in err


def test_indexing_a_path_that_does_not_exist_says_so(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "doc"
    code = main(["index", str(missing), "--source", "docs", "--kind", "docs", "--acl",
                 "group:everyone"])  # fmt: skip
    assert code == 2
    assert f"{missing} does not exist (give a folder or a .zip export)" in capsys.readouterr().err
    (tmp_path / "notes.txt").write_text("x")
    code = main(["index", str(tmp_path / "notes.txt"), "--source", "docs", "--kind", "docs",
                 "--acl", "group:everyone"])  # fmt: skip
    assert code == 2 and "is not a folder or a .zip export" in capsys.readouterr().err
