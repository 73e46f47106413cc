"""Nobody is silently locked out: ACLs in no known form refused, unreadable documents named.

Documents indexed with an ACL no workspace user matches answer nobody's question, and a
person only learns it from "Nothing in your sources matched". Index time says so instead.
"""

from __future__ import annotations

import json
import zipfile
from email.message import EmailMessage
from pathlib import Path

from tests.factories import people_workspace
from tests.support.processes import cli


def test_an_acl_entry_in_no_known_form_is_refused_with_its_fix(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Offsite\n\nThe offsite is in Porto.\n")
    data = tmp_path / "data"
    done = cli("index", str(tmp_path / "docs"), "--source", "handbook", "--kind", "docs",
               "--acl", "everyone", data_dir=data)  # fmt: skip
    assert done.returncode != 0
    assert "did you mean group:everyone?" in done.stderr and "Traceback" not in done.stderr
    listed = cli("sources", "list", data_dir=data)
    assert "handbook" not in listed.stdout  # nothing was indexed for nobody
    fixed = cli("index", str(tmp_path / "docs"), "--source", "handbook", "--kind", "docs",
                "--acl", "group:everyone", data_dir=data)  # fmt: skip
    assert fixed.returncode == 0 and "readable by no workspace user" not in fixed.stderr


def slack_zip(folder: Path) -> Path:
    """A Slack export (Slack's layout) zipped under a folder, as Slack's download is."""
    root = folder / "Fernhill Slack export"
    for conversation in ("general", "D1"):
        (root / conversation).mkdir(parents=True)
    users = [
        {"id": "U0BMM2FEH", "name": "jane.doe", "profile": {"display_name": "Jane"}},
        {"id": "U0BMM2FEJ", "name": "kofi", "profile": {"display_name": "Kofi"}},
        {"id": "U0BMM2FEK", "name": "guest", "profile": {"display_name": "Guest"}},
    ]
    (root / "users.json").write_text(json.dumps(users))
    (root / "channels.json").write_text(json.dumps(
        [{"id": "C1", "name": "general", "members": ["U0BMM2FEH", "U0BMM2FEJ"]}]
    ))  # fmt: skip
    (root / "dms.json").write_text(json.dumps([{"id": "D1", "members": ["U0BMM2FEK"]}]))
    (root / "general" / "2026-11-03.json").write_text(json.dumps([
        {"type": "message", "user": "U0BMM2FEH", "ts": "1762164000.000100",
         "text": "The Moorhen offsite is in Porto on 14 November."},
    ]))  # fmt: skip
    (root / "D1" / "2026-11-04.json").write_text(json.dumps([
        {"type": "message", "user": "U0BMM2FEK", "ts": "1762250400.000100",
         "text": "Note to self: the guest wifi code is heron-7."},
    ]))  # fmt: skip
    archive = folder / "export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in root.rglob("*"):
            z.write(path, path.relative_to(folder))
    return archive


def test_a_slack_export_zip_is_read_by_the_users_its_users_json_maps_and_nobody_else(
    tmp_path: Path,
) -> None:
    """Slack ids mapped through the export's users.json by each user's ``slack`` in
    workspace.json (a handle or an id), with no unzipping and no slack-users.json."""
    archive = slack_zip(tmp_path)
    workspace = people_workspace(
        tmp_path / "ws",
        {"alice": {"slack": "jane.doe"}, "carol": {"slack": "U0BMM2FEJ"}, "bob": {}},
    )
    data = tmp_path / "data"
    done = cli("index", str(archive), "--source", "slack", "--kind", "messages",
               "--workspace", str(workspace), data_dir=data)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "#general: readable by user:alice, user:carol" in done.stdout
    # the guest's DM maps to no workspace user: said, with the fix, not left silent
    assert "warning: 1 documents are readable by no workspace user" in done.stderr
    assert "Slack users no workspace user is" in done.stderr and '"slack"' in done.stderr
    listed = cli("sources", "list", "--workspace", str(workspace), data_dir=data).stdout
    [slack] = [line for line in listed.splitlines() if line.startswith("slack\t")]
    assert slack.endswith("\t2 documents; readable by alice: 1, carol: 1, bob: 0"), slack
    asked = "Where is the Moorhen offsite?"
    answers = {
        user: cli(
            "ask",
            asked,
            "--user",
            user,
            "--source",
            "slack",
            "--workspace",
            str(workspace),
            "--json",
            data_dir=data,
        )  # fmt: skip
        for user in ("alice", "carol", "bob")
    }
    assert "Porto" in json.loads(answers["alice"].stdout)["answer"]
    assert "Porto" in json.loads(answers["carol"].stdout)["answer"]
    assert "Porto" not in answers["bob"].stdout
    assert all("heron-7" not in a.stdout for a in answers.values())


def test_a_message_to_a_group_address_is_read_by_its_members_and_nobody_else(
    tmp_path: Path,
) -> None:
    workspace = people_workspace(
        tmp_path / "ws",
        {"alice": {"email": "alice@fernhill.example"}, "carol": {"groups": ["contractors"]}},
    )
    config = json.loads((workspace / "workspace.json").read_text())
    config["groups"] = {"everyone": {"email": "everyone@fernhill.example"}}
    (workspace / "workspace.json").write_text(json.dumps(config))
    mail = tmp_path / "mail"
    mail.mkdir()
    message = EmailMessage()
    message["From"] = "facilities@fernhill-landlord.example"
    message["To"] = "everyone@fernhill.example"
    message["Subject"] = "Parking garage closed"
    message["Date"] = "Tue, 03 Nov 2026 09:00:00 +0000"
    message.set_content("The parking garage is closed on Friday for resurfacing.")
    (mail / "parking.eml").write_bytes(bytes(message))
    data = tmp_path / "data"
    done = cli("index", str(mail), "--source", "mail", "--kind", "messages",
               "--acl", "group:everyone", "--workspace", str(workspace), data_dir=data)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "readable by no workspace user" not in done.stderr
    asked = "When is the parking garage closed?"
    alice = cli("ask", asked, "--user", "alice", "--source", "mail", "--workspace",
                str(workspace), "--json", data_dir=data)  # fmt: skip
    carol = cli("ask", asked, "--user", "carol", "--source", "mail", "--workspace",
                str(workspace), "--json", data_dir=data)  # fmt: skip
    assert "resurfacing" in json.loads(alice.stdout)["answer"]
    assert "resurfacing" not in carol.stdout and "Friday" not in carol.stdout
