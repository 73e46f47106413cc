"""Office files, e-mail and Slack exports, made by the libraries that write them for real.

Each file has the hard parts: a nested list and a merged table cell (Word), speaker notes
(PowerPoint), merged cells under a title row (Excel), an HTML reply quoting its history with
a signature and an attachment (e-mail), a private channel and a thread (Slack, zipped).
"""

from __future__ import annotations

import json
import zipfile
from email.message import EmailMessage
from pathlib import Path

from seekgraph.sources.base import User
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.ingestion.ingest import read_folder
from seekgraph.sources.ingestion.workspace import sync_source

PEOPLE = {"alice@fernhill.example": "alice", "bob@fernhill.example": "bob", "carol": "carol"}
ALICE = User("alice", frozenset({"everyone"}))
BOB = User("bob", frozenset({"everyone"}))
CAROL = User("carol", frozenset({"everyone"}))


def office_files(folder: Path) -> None:
    import docx
    from openpyxl import Workbook
    from pptx import Presentation

    d = docx.Document()
    d.core_properties.title = "Employee handbook"
    d.add_heading("Travel", level=1)
    d.add_paragraph("Before you travel:", style="List Bullet")
    d.add_paragraph("book through Navan", style="List Bullet 2")
    d.add_heading("Allowances", level=2)
    table = d.add_table(rows=3, cols=3)
    for c, text in enumerate(["Region", "Hotel cap", "Meals"]):
        table.cell(0, c).text = text
    for c, text in enumerate(["Europe", "180 EUR", "60 EUR"]):
        table.cell(1, c).text = text
    table.cell(2, 0).merge(table.cell(2, 1)).text = "Elsewhere: ask finance"
    table.cell(2, 2).text = "50 USD"
    d.save(folder / "handbook.docx")

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Q3 results"
    frame = slide.placeholders[1].text_frame
    frame.text = "Revenue grew 12%"
    sub = frame.add_paragraph()
    sub.text, sub.level = "Driven by EMEA", 1
    slide.notes_slide.notes_text_frame.text = "Churn fell to 3% this quarter."
    deck.save(folder / "q3.pptx")

    book = Workbook()
    sheet = book.active
    sheet.title = "Prices"
    sheet.append(["Price list 2026"])
    sheet.append(["Product", "Tier", "Price"])
    sheet.append(["Kestrel", "Basic", 100])
    sheet.append([None, "Pro", 250])
    sheet.merge_cells("A3:A4")
    book.save(folder / "prices.xlsx")


def test_office_files_keep_their_structure(tmp_path: Path) -> None:
    office_files(tmp_path)
    read = read_folder(tmp_path, "files", "docs", ["group:everyone"])
    assert read.problems == [] and read.unsupported == []
    docs = {d.doc_id: d for d in read.documents}
    handbook = docs["files/handbook"]
    assert handbook.title == "Employee handbook"
    assert "- Before you travel:\n  - book through Navan" in handbook.text  # nested list
    # the merged cell is named once, under both of its headers; Meals stays Meals
    assert "- Region / Hotel cap: Elsewhere: ask finance; Meals: 50 USD" in handbook.text
    assert [c["heading"] for c in handbook.chunks] == ["Travel", "Allowances"]
    q3 = docs["files/q3"]
    assert q3.chunks[0]["heading"] == "Slide 1: Q3 results"
    assert "  - Driven by EMEA" in q3.text and "Speaker notes: Churn fell to 3%" in q3.text
    prices = docs["files/prices"].text
    assert "- Product: Kestrel; Tier: Pro; Price: 250" in prices  # the merged cell filled down


def mail(folder: Path) -> None:
    msg = EmailMessage()
    msg["From"] = "Alice Chen <alice@fernhill.example>"
    msg["To"] = "Bob Okafor <bob@fernhill.example>"
    msg["Subject"] = "Re: Kestrel budget"
    msg["Date"] = "Tue, 03 Nov 2026 10:00:00 +0000"
    msg["Message-ID"] = "<2@fernhill.example>"
    msg["In-Reply-To"] = "<1@fernhill.example>"
    msg.set_content("The Kestrel budget is approved at 40k.\n\nBest,\nAlice\n")
    msg.add_alternative(
        "<html><body><p>The Kestrel budget is approved at 40k.</p><p>Best,<br>Alice</p>"
        '<div class="gmail_quote"><p>On Mon, Bob wrote:</p><blockquote>Can we spend '
        "95k on the Moorhen offsite?</blockquote></div></body></html>",
        subtype="html",
    )
    msg.add_attachment(
        b"# Budget lines\n\nTravel: 12k. Hardware: 28k.\n",
        maintype="text",
        subtype="markdown",
        filename="budget.md",
    )
    (folder / "budget.eml").write_bytes(bytes(msg))


def test_a_mail_is_its_own_words_for_its_people_and_its_attachment_too(tmp_path: Path) -> None:
    mail(tmp_path)
    read = read_folder(tmp_path, "mail", "messages", ["group:everyone"], people=PEOPLE)
    assert read.problems == []
    docs = {d.doc_id: d for d in read.documents}
    message = docs["mail/budget"]
    assert "approved at 40k" in message.text and "From: Alice Chen" in message.text
    assert "Moorhen" not in message.text and "95k" not in message.text  # quoted history gone
    assert sorted(message.acl) == ["user:alice", "user:bob"]  # not the source's everyone
    attachment = docs["mail/budget/attachments/budget"]
    assert "Hardware: 28k" in attachment.text and attachment.acl == message.acl
    assert attachment.title.endswith("(attached to: Re: Kestrel budget)")


def test_an_outlook_message_is_read_like_a_mail(tmp_path: Path) -> None:
    """``tests/data/approval.msg`` (written by ``tests/data/make_msg.js``): a reply with the
    message it answers quoted below it, a To and a Cc recipient, and an attachment."""
    import shutil

    shutil.copy(Path(__file__).parents[1] / "data" / "approval.msg", tmp_path / "approval.msg")
    (tmp_path / "broken.msg").write_bytes(b"\xd0\xcf\x11\xe0 not really a compound file")
    read = read_folder(tmp_path, "mail", "messages", ["group:everyone"], people=PEOPLE)
    [problem] = read.problems  # reported and skipped; the good message is read
    assert problem.startswith(f"{tmp_path / 'broken.msg'}: not a readable Outlook message")
    docs = {d.doc_id: d for d in read.documents}
    message = docs["mail/approval"]
    assert "48 million euros on Friday" in message.text and "From: Dana Reyes" in message.text
    assert "45 million" not in message.text  # the quoted message it answers is not its words
    assert "Re: Moorhen terms" in message.title and message.updated_at.startswith("2026-11-03")
    # the sender and both recipients (To and Cc) are the ACL; an address no workspace user has
    # stays an address (nobody, until a user of that e-mail exists)
    assert sorted(message.acl) == [
        "user:alice", "user:carol@fernhill.example", "user:dana@fernhill.example"
    ]  # fmt: skip
    assert "To: Alice Chen" in message.text and "Carol" in message.text
    attachment = docs["mail/approval/attachments/signing-checklist"]
    assert "board consent form" in attachment.text and attachment.acl == message.acl


async def test_indexed_mail_is_found_by_its_recipients_only(tmp_path: Path, embedder) -> None:
    mail(tmp_path)
    index = EmbeddedIndex(tmp_path / "index.sqlite", embedder)
    sync_source(index, tmp_path, "mail", "messages", [], people=PEOPLE)
    found = lambda user: index.search("mail", "Kestrel budget approved", user, 5, "hybrid")  # noqa: E731
    assert found(ALICE) and found(BOB)
    assert found(CAROL) == []  # not a recipient: nothing, attachment included
    index.close()


def slack_export(folder: Path) -> Path:
    root = folder / "export"
    (root / "general").mkdir(parents=True)
    (root / "leads").mkdir()
    users = [
        {
            "id": "U1",
            "name": "alice",
            "profile": {"email": "alice@fernhill.example", "display_name": "Alice"},
        },  # fmt: skip
        {"id": "U2", "name": "bob.okafor", "profile": {"email": "bob@fernhill.example"}},
        {"id": "U3", "name": "carol", "profile": {"display_name": "Carol"}},
    ]
    (root / "users.json").write_text(json.dumps(users))
    (root / "channels.json").write_text(
        json.dumps([{"id": "C1", "name": "general", "members": ["U1", "U2", "U3"]}])
    )
    (root / "groups.json").write_text(
        json.dumps([{"id": "G1", "name": "leads", "members": ["U1", "U3"]}])
    )
    (root / "general" / "2026-11-03.json").write_text(json.dumps([
        {"type": "message", "user": "U2", "text": "Where is the offsite?",
         "ts": "1762164000.000100"},
        {"type": "message", "subtype": "channel_join", "user": "U3", "text": "joined",
         "ts": "1762164001.000100"},
    ]))  # fmt: skip
    (root / "leads" / "2026-11-04.json").write_text(json.dumps([
        {"type": "message", "user": "U1", "ts": "1762250400.000100",
         "thread_ts": "1762250400.000100", "text": "<@U3> the Moorhen deal closes Friday"},
        {"type": "message", "user": "U3", "ts": "1762250500.000200",
         "thread_ts": "1762250400.000100", "text": "Great, price is 48 million euros",
         "edited": {"user": "U3", "ts": "1762250600.000000"}},
    ]))  # fmt: skip
    archive = folder / "export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in root.rglob("*"):
            z.write(path, path.relative_to(folder))
    return archive


def test_a_notion_export_reads_pages_sub_pages_and_a_database_once(tmp_path: Path) -> None:
    page = "Roadmap 0f1e2d3c4b5a69788796a5b4c3d2e1f0"
    (tmp_path / page).mkdir()
    (tmp_path / f"{page}.md").write_text("# Roadmap\n\nWe ship Pathfinder v2 in March.\n")
    (tmp_path / page / "Launch plan 11112222333344445555666677778888.md").write_text(
        "# Launch plan\n\nStatus: In progress\n\nThe launch review is on 3 March.\n"
    )
    db = "Tasks aaaabbbbccccddddeeeeffff00001111"
    (tmp_path / f"{db}.csv").write_text("Name,Owner\nWrite spec,Ana\n")
    (tmp_path / f"{db}_all.csv").write_text("Name,Owner,Due\nWrite spec,Ana,2026-02-01\nTest,Li,\n")
    read = read_folder(tmp_path, "notion", "docs", ["group:everyone"])
    docs = {d.doc_id: d for d in read.documents}
    assert set(docs) == {"notion/Roadmap", "notion/Roadmap/Launch plan", "notion/Tasks"}
    assert docs["notion/Roadmap/Launch plan"].title == "Launch plan (in Roadmap)"
    assert "- Name: Test; Owner: Li" in docs["notion/Tasks"].text  # every row, read once


def test_a_confluence_page_is_its_content_under_its_breadcrumbs(tmp_path: Path) -> None:
    (tmp_path / "VPN-setup_98304.html").write_text(
        "<html><head><title>IT Space : VPN setup</title></head><body>"
        "<div id='breadcrumb-section'><ol id='breadcrumbs'><li><a>IT Space</a></li>"
        "<li><a>Remote work</a></li></ol></div>"
        "<div id='main-header'><h1>IT Space : VPN setup</h1></div>"
        "<div class='page-metadata'>Created by Sam, last modified on Nov 03, 2026</div>"
        "<div id='main-content' class='wiki-content'><p>Install WireGuard, then import the "
        "profile from the IT portal.</p></div>"
        "<div id='footer'>Powered by Confluence</div></body></html>"
    )
    [doc] = read_folder(tmp_path, "confluence", "kb", ["group:everyone"]).documents
    assert doc.title == "VPN setup" and doc.updated_at.startswith("2026-11-03")
    assert doc.chunks[0]["heading"] == "IT Space › Remote work › VPN setup"
    assert "Install WireGuard" in doc.text and "Powered by" not in doc.text


def test_a_docx_zip_bomb_is_skipped_before_it_is_parsed(tmp_path: Path) -> None:
    """A Word file of a few KB that expands to 12 MB of empty paragraphs: skipped in well under
    a second, and said so with the bound and its setting (not parsed for half a minute)."""
    import time

    import docx

    docx.Document().save(tmp_path / "plain.docx")
    paragraphs = b"<w:p/>" * (12 * 2**20 // 6)
    with zipfile.ZipFile(tmp_path / "plain.docx") as plain:
        parts = {n: plain.read(n) for n in plain.namelist()}
    body = parts["word/document.xml"]
    start = body.index(b"<w:body>") + len(b"<w:body>")
    parts["word/document.xml"] = body[:start] + paragraphs + body[start:]
    with zipfile.ZipFile(tmp_path / "bomb.docx", "w", zipfile.ZIP_DEFLATED) as bomb:
        for name, data in parts.items():
            bomb.writestr(name, data)
    (tmp_path / "plain.docx").unlink()
    assert (tmp_path / "bomb.docx").stat().st_size < 100_000
    started = time.monotonic()
    read = read_folder(tmp_path, "files", "docs", ["group:everyone"])
    took = time.monotonic() - started
    assert took < 1.0
    assert read.documents == []
    [problem] = read.problems
    assert problem.endswith(
        "bomb.docx: it expands to 13 MB of XML, the limit is 10 MB "
        "(SEEKGRAPH_MAX_OFFICE_XML_MB); file skipped"
    )
