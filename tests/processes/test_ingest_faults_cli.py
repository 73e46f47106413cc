"""What `seekgraph index` says about bad input: chat channels keep their members, and it
names the files it does not read."""

from __future__ import annotations

import json

from tests.support.processes import cli


def test_chat_channels_keep_their_members_whatever_acl_the_command_gives(tmp_path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "workspace.json").write_text(
        json.dumps(
            {
                "users": {
                    "bob": {"groups": ["everyone"]},
                    "lea": {"groups": ["everyone", "leads"]},
                },
                "sources": [],
                "channels": {"leads": ["group:leads"]},
            }
        )
    )
    export = tmp_path / "slack"
    export.mkdir()
    (export / "channels.json").write_text(json.dumps([{"name": "board", "members": ["lea"]}]))
    messages = [
        ("leads", "The reorg is announced on Friday."),
        ("board", "Board approved the Lisbon office lease."),
        ("random", "Cake in the kitchen at three."),
    ]
    (export / "messages.jsonl").write_text(
        "\n".join(
            json.dumps(
                {
                    "id": str(i),
                    "channel": c,
                    "author": "lea",
                    "ts": f"2026-11-0{i}T10:00Z",
                    "text": t,
                }
            )
            for i, (c, t) in enumerate(messages, start=1)
        )
    )
    data = tmp_path / "data"
    env = ["--workspace", str(work)]
    done = cli(
        "index",
        str(export),
        "--source",
        "slack",
        "--kind",
        "messages",
        "--acl",
        "group:everyone",
        *env,
        data_dir=data,
    )
    assert done.returncode == 0, done.stderr
    assert "#leads: readable by group:leads (channel members)" in done.stdout
    assert "#board: readable by user:lea (channel members)" in done.stdout
    assert "#random: readable by group:everyone (the source's ACL" in done.stdout
    for question, hidden in [
        ("When is the reorg announced?", "reorg"),
        ("Which office lease was approved?", "Lisbon"),
    ]:
        bob = cli(
            "ask", question, "--user", "bob", "--json", "--source", "slack", *env, data_dir=data
        )
        assert bob.returncode == 0, bob.stderr
        assert hidden not in bob.stdout
    lea = cli(
        "ask",
        "When is the reorg announced?",
        "--user",
        "lea",
        "--json",
        "--source",
        "slack",
        *env,
        data_dir=data,
    )
    assert "Friday" in json.loads(lea.stdout)["answer"]


def test_seekgraph_index_names_the_files_it_does_not_read(tmp_path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "log.txt").write_text("Relay 4 tripped after the restart.\n")
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (folder / "a.zip").write_bytes(b"PK")
    (folder / "b.zip").write_bytes(b"PK")
    done = cli(
        "index", str(folder), "--source", "logs2", "--kind", "docs", "--acl", "group:everyone",
        data_dir=tmp_path / "data",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "not indexed: 3 files of types it does not read (.zip ×2, .png)" in done.stdout
