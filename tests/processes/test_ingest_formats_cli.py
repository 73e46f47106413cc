"""Export archives through `seekgraph index`: a Slack zip keeps private channels private, a
zip that points outside itself is refused."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from tests.factories import people_workspace
from tests.fast.test_ingest_formats import slack_export
from tests.support.processes import cli


def test_a_slack_export_zip_keeps_private_channels_to_their_members(tmp_path: Path) -> None:
    archive = slack_export(tmp_path)
    data = tmp_path / "data"
    workspace = people_workspace(
        tmp_path / "ws",
        {"alice": {"email": "alice@fernhill.example"}, "bob": {"email": "bob@fernhill.example"},
         "carol": {}},
    )  # fmt: skip
    done = cli("index", str(archive), "--source", "slack", "--kind", "messages",
               "--workspace", str(workspace), data_dir=data)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "#leads: readable by user:alice, user:carol (private channel members)" in done.stdout
    # bob (matched by e-mail) reads #general, not #leads; carol (by handle) reads #leads
    asked = "What is the Moorhen price?"
    bob = cli("ask", asked, "--user", "bob", "--source", "slack", "--workspace", str(workspace),
              "--json", data_dir=data)  # fmt: skip
    carol = cli("ask", asked, "--user", "carol", "--source", "slack", "--workspace",
                str(workspace), "--json", data_dir=data)  # fmt: skip
    assert "48 million" not in bob.stdout and "Moorhen" not in bob.stdout
    answer = json.loads(carol.stdout)
    assert "48 million euros (edited)" in answer["answer"]
    assert "@Carol" in carol.stdout or "Alice" in carol.stdout  # names, not user ids
    assert "U3" not in answer["answer"]


def test_a_zip_that_points_outside_itself_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("../outside.txt", "x")
    data = tmp_path / "data"
    done = cli("index", str(archive), "--source", "x", "--kind", "messages", data_dir=data)
    assert done.returncode != 0 and "points outside the zip" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path.parent / "outside.txt").exists()
