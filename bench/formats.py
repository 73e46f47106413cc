"""Indexing throughput per file format, beside the embedding model's own throughput.

    python -m bench.formats --json bench/results/formats.json

Real text (the first ``--docs`` MuSiQue paragraphs, ``../shared/data/musique_dev100``) is
written into files of each format by the libraries that write them for real — Word
(python-docx), PowerPoint (python-pptx, one paragraph a slide, ten slides a deck), Excel
(openpyxl, one paragraph a row), e-mail (``email``, one ``.eml`` a paragraph) and a Slack
export (one message a paragraph) — then read and indexed (``read_folder`` + ``upsert``, MiniLM)
into a fresh index. Beside each: the embedding model alone on the very chunks that format
produced (``embed_passages`` on their texts), in the same run. Reported: seconds, chunks/s for
ingestion and for the model alone, and their ratio (how close ingestion gets to the model's
limit).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from bench.datasets import load
from bench.report import command_line, write
from seekgraph.providers.embeddings import load_embedder
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.ingestion.ingest import read_folder


def write_docx(folder: Path, paras: list[dict[str, Any]]) -> None:
    import docx

    for start in range(0, len(paras), 20):
        d = docx.Document()
        for p in paras[start : start + 20]:
            d.add_heading(p["title"], level=2)
            d.add_paragraph(p["text"])
        d.save(str(folder / f"doc{start}.docx"))


def write_pptx(folder: Path, paras: list[dict[str, Any]]) -> None:
    from pptx import Presentation

    for start in range(0, len(paras), 10):
        deck = Presentation()
        for p in paras[start : start + 10]:
            slide = deck.slides.add_slide(deck.slide_layouts[1])
            slide.shapes.title.text = p["title"]
            slide.placeholders[1].text_frame.text = p["text"]
        deck.save(str(folder / f"deck{start}.pptx"))


def write_xlsx(folder: Path, paras: list[dict[str, Any]]) -> None:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.append(["Title", "Text"])
    for p in paras:
        sheet.append([p["title"], p["text"]])
    book.save(folder / "sheet.xlsx")


def write_eml(folder: Path, paras: list[dict[str, Any]]) -> None:
    for n, p in enumerate(paras):
        msg = EmailMessage()
        msg["From"] = "alice@example.org"
        msg["To"] = "bob@example.org"
        msg["Subject"] = p["title"]
        msg["Date"] = "Tue, 03 Nov 2026 10:00:00 +0000"
        msg["Message-ID"] = f"<{n}@example.org>"
        msg.set_content(p["text"])
        (folder / f"m{n}.eml").write_bytes(bytes(msg))


def write_slack(folder: Path, paras: list[dict[str, Any]]) -> None:
    (folder / "general").mkdir()
    (folder / "users.json").write_text(json.dumps([{"id": "U1", "name": "alice"}]))
    (folder / "channels.json").write_text(
        json.dumps([{"id": "C1", "name": "general", "members": ["U1"]}])
    )
    messages = [
        {"type": "message", "user": "U1", "text": p["text"], "ts": f"{1762164000 + n}.000100"}
        for n, p in enumerate(paras)
    ]
    (folder / "general" / "2026-11-03.json").write_text(json.dumps(messages))


FORMATS = {
    "docx": (write_docx, "docs"),
    "pptx": (write_pptx, "docs"),
    "xlsx": (write_xlsx, "docs"),
    "eml": (write_eml, "messages"),
    "slack": (write_slack, "messages"),
}


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    paras = load(Path(args.data)).corpus[: args.docs]
    embedder = load_embedder("minilm")
    out: dict[str, Any] = {"paragraphs": len(paras), "formats": {}}
    for name, (writer, kind) in FORMATS.items():
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / name
            folder.mkdir()
            writer(folder, paras)
            index = EmbeddedIndex(Path(tmp) / "index.sqlite", embedder)
            started = time.perf_counter()
            read = read_folder(folder, name, kind, ["group:everyone"])
            chunks = index.upsert(read.documents)
            ingest = time.perf_counter() - started
            texts = [c["text"] for d in read.documents for c in d.chunks]
            started = time.perf_counter()
            embedder.embed_passages(texts)
            model = time.perf_counter() - started
            index.close()
        out["formats"][name] = {
            "documents": len(read.documents),
            "chunks": chunks,
            "ingest_seconds": round(ingest, 2),
            "ingest_chunks_per_s": round(chunks / ingest, 1),
            "model_alone_chunks_per_s": round(len(texts) / model, 1),
            "ingest_share_of_model_limit": round((chunks / ingest) / (len(texts) / model), 3),
            "problems": len(read.problems),
        }
        print(name, out["formats"][name], flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/musique_dev100")
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--json", type=Path, default=Path("bench/results/formats.json"))
    args = parser.parse_args()
    started = time.time()
    result = evaluate(args)
    write(args.json, {"command": command_line("bench.formats", args), **result}, started)


if __name__ == "__main__":
    main()
