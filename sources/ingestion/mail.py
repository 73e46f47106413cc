"""E-mail: ``.eml`` files, ``.mbox`` mailboxes and Outlook ``.msg``, one document per message.

A message is indexed with its sender, recipients, date and subject, and its own words only:
the quoted history and the signature are removed (``mail-parser-reply``; an HTML body's
``<blockquote>`` and Gmail/Outlook quote blocks first). **Its sender and recipients are its
ACL** (To, Cc and Bcc), as attendees are for minutes: an address is the workspace user whose
``email`` it is, else ``user:<address>`` (nobody, until a user of that name exists); a
source's ``--acl`` does not widen it (a mailbox indexed for a team stays each message's).
Attachments of a readable type are indexed as documents of their own, under the message's
ACL. Messages of one thread with the same readers are read with each other as context (never
across different readers).
"""

from __future__ import annotations

import email
import email.policy
import hashlib
import mailbox
import re
import tempfile
from collections.abc import Callable
from email.message import EmailMessage
from email.utils import getaddresses, parsedate_to_datetime
from pathlib import Path

from seekgraph.sources.indexes.index_source import IndexedDocument
from seekgraph.sources.ingestion.chunking import (
    IngestError,
    chunk_markdown,
    doc_id_of,
    mtime,
    rename,
)
from seekgraph.sources.ingestion.conversations import with_context

MAIL = {".eml", ".mbox", ".msg"}
#: An Outlook recipient's type (MAPI ``PidTagRecipientType``): 1 To, 2 Cc, 3 Bcc.
RECIPIENT_TYPE = 0x0C15
#: Reply and signature markers in these languages are recognised.
LANGUAGES = ["en", "de", "fr", "es", "it", "nl", "pl", "sv", "ja", "zh"]

AttachmentReader = Callable[[Path, Path, list[str]], list[IndexedDocument]]
"""Reads one attachment file (root, path, problems) into documents, or raises."""


def principals(addresses: list[str], people: dict[str, str]) -> list[str]:
    """ACL principals for e-mail addresses, else ``user:<address>`` (readable by nobody).

    An address is a workspace user's, or a group's (a mailing list's: its members read it).
    """
    out = []
    for address in addresses:
        low = address.lower()
        known = people.get(low, low)
        out.append(known if known.startswith("group:") else f"user:{known}")
    return list(dict.fromkeys(out))


def own_words(message: EmailMessage) -> str:
    """The message's own text: plain (or HTML made text), without quotes or signature."""
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    content = part.get_content()
    text = str(content) if not isinstance(content, bytes) else content.decode(errors="replace")
    if part.get_content_type() == "text/html":
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(text, "html.parser")
        for quoted in soup.select(
            "blockquote, .gmail_quote, .gmail_signature, #divRplyFwdMsg, #appendonsend"
        ):
            quoted.decompose()
        for br in soup.find_all("br"):
            br.replace_with("\n")
        text = "\n\n".join(p.get_text(" ", strip=True) for p in soup.find_all(["p", "div", "li"])
                           if not p.find(["p", "div"])) or soup.get_text("\n")  # fmt: skip
    from mailparser_reply import EmailReplyParser

    try:
        replies = EmailReplyParser(languages=LANGUAGES).read(text).replies
        body = replies[0].body if replies else text
    except Exception:  # noqa: BLE001 - the parser on odd input: keep the whole text
        body = text
    body = body.strip() or text.strip()
    return re.sub(r"\n{3,}", "\n\n", body)


def _thread_root(message: EmailMessage) -> str:
    refs = str(message.get("References") or "").split()
    reply_to = str(message.get("In-Reply-To") or "").strip()
    own = str(message.get("Message-ID") or "").strip()
    return (refs[0] if refs else reply_to) or own or _subject_key(message)


def _subject_key(message: EmailMessage) -> str:
    subject = str(message.get("Subject") or "")
    return re.sub(r"^((re|fw|fwd|aw|sv|antw)\s*:\s*)+", "", subject, flags=re.I).strip().lower()


def outlook_message(path: Path) -> EmailMessage:
    """An Outlook ``.msg`` (python-oxmsg) as the e-mail message it stands for.

    Sender, recipients by their type (To, Cc, Bcc), the submit time, subject, threading
    headers, the body (plain, else HTML) and the attachments — so it is read like an ``.eml``.
    """
    from email.utils import format_datetime, formataddr

    from oxmsg import Message

    try:
        outlook = Message.load(str(path))
        recipients = [
            (r.properties.int_prop_value(RECIPIENT_TYPE) or 1, r) for r in outlook.recipients
        ]
        parts = [(a.file_name, a.mime_type, a.file_bytes) for a in outlook.attachments]
        body, html = outlook.body, outlook.html_body
    except Exception as exc:  # noqa: BLE001 - olefile and the reader raise many types
        raise IngestError(
            f"{path}: not a readable Outlook message ({type(exc).__name__})"
        ) from None
    message = EmailMessage()
    if outlook.sender:
        message["From"] = outlook.sender
    for kind, header in ((1, "To"), (2, "Cc"), (3, "Bcc")):
        people = [formataddr((r.name, r.email_address)) for t, r in recipients if t == kind]
        if people:
            message[header] = ", ".join(people)
    if outlook.sent_date is not None:
        message["Date"] = format_datetime(outlook.sent_date)
    message["Subject"] = " ".join(outlook.subject.split())
    for header in ("Message-ID", "In-Reply-To", "References"):
        if outlook.message_headers.get(header):
            message[header] = outlook.message_headers[header]
    if body or not html:
        message.set_content(body or "")
    else:
        message.set_content(html, subtype="html")
    for name, mime, data in parts:
        if name and data:
            main, _, sub = (mime or "application/octet-stream").partition("/")
            message.add_attachment(
                data, maintype=main, subtype=sub or "octet-stream", filename=name
            )
    return message


def messages_of(path: Path) -> list[tuple[str, EmailMessage]]:
    """(key, message) for an ``.eml`` (one) or an ``.mbox`` (each, keyed by its Message-ID)."""
    if path.suffix.lower() == ".msg":
        return [("", outlook_message(path))]
    if path.suffix.lower() == ".eml":
        raw = path.read_bytes()
        parsed = email.message_from_bytes(raw, policy=email.policy.default)
        if not parsed.keys():
            raise IngestError(f"{path}: not an e-mail message (no headers)")
        return [("", parsed)]
    out = []
    box = mailbox.mbox(str(path), factory=None, create=False)
    try:
        for n, raw_message in enumerate(box):
            parsed = email.message_from_bytes(raw_message.as_bytes(), policy=email.policy.default)
            key = str(parsed.get("Message-ID") or f"message-{n}")
            out.append((hashlib.sha256(key.encode()).hexdigest()[:12], parsed))
    finally:
        box.close()
    if not out:
        raise IngestError(f"{path}: no messages in this mailbox")
    return out


def mail_documents(
    root: Path,
    path: Path,
    source: str,
    kind: str,
    problems: list[str],
    people: dict[str, str],
    read_attachment: AttachmentReader | None = None,
) -> list[IndexedDocument]:
    """One document per message (and one per readable attachment), read by its people."""
    base = doc_id_of(root, path, source)
    docs: list[IndexedDocument] = []
    groups: dict[tuple[str, str], list[int]] = {}
    for key, message in messages_of(path):
        doc_id = f"{base}/{key}" if key else base
        sender = getaddresses([str(message.get("From") or "")])
        to = getaddresses([str(message.get(h) or "") for h in ("To", "Cc", "Bcc")])
        addresses = [a for _, a in [*sender, *to] if "@" in a]
        if not addresses:
            problems.append(f"{path}: a message without sender or recipients; skipped")
            continue
        acl = principals(addresses, people)
        try:
            when = parsedate_to_datetime(str(message.get("Date"))).isoformat()
        except (TypeError, ValueError):
            when = mtime(path)
        subject = " ".join(str(message.get("Subject") or "(no subject)").split())
        name = sender[0][0] or sender[0][1] if sender else "unknown"
        names = ", ".join(n or a for n, a in to) or "nobody"
        body = own_words(message)
        text = f"From: {name}\nTo: {names}\nDate: {when[:16]}\nSubject: {subject}\n\n{body}"
        docs.append(
            IndexedDocument(
                doc_id=doc_id,
                source=source,
                kind=kind,
                title=f"{subject} — {name}, {when[:10]}",
                text=text,
                chunks=chunk_markdown(text, doc_id),
                acl=acl,
                updated_at=when,
                origin=f"{path}:{key}" if key else str(path),
            )
        )
        groups.setdefault((_thread_root(message), " ".join(sorted(acl))), []).append(len(docs) - 1)
        if read_attachment is not None:
            docs += attachments(message, doc_id, subject, acl, when, read_attachment, problems)
    threaded = {k: [i for i in v if len(docs[i].chunks) == 1] for k, v in groups.items()}
    with_context(docs, {k: v for k, v in threaded.items() if len(v) > 1})
    return docs


def attachments(
    message: EmailMessage,
    doc_id: str,
    subject: str,
    acl: list[str],
    when: str,
    read: AttachmentReader,
    problems: list[str],
) -> list[IndexedDocument]:
    """The message's readable attachments, each a document under the message's ACL."""
    out: list[IndexedDocument] = []
    for part in message.iter_attachments():
        filename = Path(str(part.get_filename() or "")).name
        if not filename:
            continue
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            path = folder / filename
            path.write_bytes(payload)
            try:
                docs = read(folder, path, problems)
            except IngestError as exc:
                problems.append(f"{exc} (attached to {doc_id}); skipped")
                continue
        for doc in docs:
            rename(doc, f"{doc_id}/attachments/{Path(filename).stem}")
            doc.acl = list(acl)
            doc.title = f"{doc.title} (attached to: {subject})"
            doc.updated_at = doc.updated_at or when
            doc.origin = f"{doc_id} attachment {filename}"
            out.append(doc)
    return out
