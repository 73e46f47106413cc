"""One bad file never stops the rest: malformed ACLs, clashing ids, broken cues, huge files.

Each case was seen crashing (or silently hiding) a whole ``seekgraph index`` run.
"""

from __future__ import annotations

import json
from pathlib import Path

from seekgraph.sources.base import User
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.ingestion.ingest import HARD_CHUNK_CHARS, read_folder
from seekgraph.sources.ingestion.workspace import sync_source

BOB = User("bob", frozenset({"everyone"}))
LEAD = User("lea", frozenset({"everyone", "leads"}))


def md(folder: Path, name: str, front: str, body: str) -> None:
    (folder / name).write_text(f"---\n{front}\n---\n{body}\n", encoding="utf-8")


def test_bad_front_matter_acls_are_reported_and_good_files_indexed(tmp_path, embedder) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    md(kb, "empty-acl.md", "title: Empty\nacl:", "Nobody would see this.")
    md(kb, "number-acl.md", "title: Number\nacl: 5", "A number is not a principal.")
    md(kb, "typo-acl.md", "title: Typo\nacl: [everyone]", "Missing its group: prefix.")
    md(kb, "string-acl.md", "title: Parking\nacl: group:everyone", "Visitors park on level -2.")
    md(kb, "good.md", "title: Badges", "Lost badges are replaced at reception.")
    index = EmbeddedIndex(tmp_path / "i.sqlite", embedder)
    report = sync_source(index, kb, "kb", "kb", ["group:everyone"])
    problems = "\n".join(report.problems)
    assert "empty-acl.md: acl is empty" in problems and "acl: [group:everyone]" in problems
    assert "number-acl.md: acl is 5" in problems
    assert "typo-acl.md: acl entry 'everyone' is not a principal" in problems
    assert report.indexed == 2  # the good file and the ACL written as one string
    index.close()


async def test_an_acl_written_as_a_string_is_readable(tmp_path, embedder) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    md(kb, "parking.md", "title: Parking\nacl: group:everyone", "Visitors park on level -2.")
    index = EmbeddedIndex(tmp_path / "i.sqlite", embedder)
    sync_source(index, kb, "kb", "kb", ["user:nobody"])
    hits = await EmbeddedSource(index, "kb", "kb").search("where do visitors park", BOB, 3)
    assert hits and "level -2" in hits[0]["snippet"]
    index.close()


def test_clashing_ids_and_repeated_messages_do_not_stop_indexing(tmp_path, embedder) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "x.md").write_text("The Markdown one.\n")
    (docs / "x.txt").write_text("The text one.\n")
    chat = tmp_path / "chat"
    chat.mkdir()
    lines = [
        {"id": "1", "channel": "ops", "author": "sam", "ts": "2026-11-01T09:00:00Z", "text": "a"},
        {"id": "1", "channel": "ops", "author": "sam", "ts": "2026-11-01T09:01:00Z", "text": "b"},
        {"id": "2", "channel": "ops", "author": "kim", "ts": "2026-11-01T09:02:00Z", "text": "c"},
    ]
    (chat / "export.jsonl").write_text("\n".join(json.dumps(m) for m in lines))
    index = EmbeddedIndex(tmp_path / "i.sqlite", embedder)
    r1 = sync_source(index, docs, "docs", "docs", ["group:everyone"])
    r2 = sync_source(index, chat, "chat", "messages", ["group:everyone"])
    assert r1.indexed == 2 and "indexed as docs/x.txt" in "\n".join(r1.renamed)
    assert r2.indexed == 2 and "export.jsonl:2: message id '1'" in "\n".join(r2.problems)
    index.close()


def test_a_broken_cue_timing_is_reported_and_the_rest_indexed(tmp_path) -> None:
    meetings = tmp_path / "meetings"
    meetings.mkdir()
    (meetings / "sync.vtt").write_text(
        "WEBVTT\n\n00:00:01.000 --> 00:00:04.000\n<v Alice>Hello there.\n\n"
        "00:00:0x.000 --> 00:00:08.000\n<v Bob>Broken timestamp here.\n\n"
        "00:00:09.000 --> 00:00:12.000\n<v Bob>Fine again.\n"
    )
    read = read_folder(meetings, "meetings", "notes", [])
    assert read.problems == [
        f"{meetings / 'sync.vtt'}:6: cue timing '00:00:0x.000 --> 00:00:08.000' is not valid; "
        "cue skipped"
    ]
    [doc] = read.documents
    assert "Fine again" in doc.text


def test_a_text_without_blank_lines_is_cut_into_bounded_chunks(tmp_path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    sentence = "The relay on line four tripped again after the nightly restart. "
    (folder / "long.txt").write_text(sentence * 3000 + "x" * 5000)  # ~200 KB, one paragraph
    read = read_folder(folder, "logs", "docs", ["group:everyone"])
    [doc] = read.documents
    sizes = [len(c["text"]) for c in doc.chunks]
    assert max(sizes) <= HARD_CHUNK_CHARS and len(doc.chunks) > 100
    assert doc.chunks[0]["text"].startswith(sentence.strip())  # cut at sentence ends


def test_the_summary_counts_unsupported_files_and_embedding_reports_progress(
    tmp_path, embedder
) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "log.txt").write_text(  # one file, hundreds of different chunks
        "".join(f"Relay {i} on line {i % 7} tripped after restart {i * 3}. " for i in range(6000))
    )
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (folder / "a.zip").write_bytes(b"PK")
    (folder / "b.zip").write_bytes(b"PK")
    calls: list[tuple[int, int]] = []
    index = EmbeddedIndex(tmp_path / "i.sqlite", embedder)
    report = sync_source(
        index, folder, "logs", "docs", ["group:everyone"],
        embed_progress=lambda done, total: calls.append((done, total)),
    )  # fmt: skip
    index.close()
    assert sorted(report.unsupported) == ["a.zip", "b.zip", "photo.png"]
    assert len(calls) > 1 and calls[-1][0] == calls[-1][1] == report.chunks > 64
