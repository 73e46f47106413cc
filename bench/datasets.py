"""Evaluation folders (see ``../shared/data/README.md``) loaded into the embedded index.

Any folder in that layout works: ``corpus.jsonl``, ``queries.jsonl`` (BEIR) or
``questions.jsonl``, and ``qrels.tsv`` or ``qrels/<split>.tsv``. Indexes are cached under
``bench/.cache`` by corpus content, and embeddings by text hash, so a second run is quick.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seekgraph.providers.embeddings import load_embedder
from seekgraph.sources.base import User
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.index_source import EmbeddedSource, IndexedDocument
from seekgraph.sources.ingestion.ingest import chunk_markdown, with_context

CACHE = Path(__file__).parent / ".cache"
#: Bump when what gets indexed changes (cached indexes are keyed by it).
FORMAT = "3"
SOURCE = "corpus"


@dataclass
class Dataset:
    """A corpus, its questions and their relevance judgments."""

    name: str
    corpus: list[dict[str, Any]]
    questions: list[dict[str, Any]]
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)

    def scope(self, doc: dict[str, Any]) -> str:
        """The ACL group of a document: one per conversation in chat sets, else everyone."""
        return f"group:conv{doc['conversation']}" if "conversation" in doc else "group:everyone"

    def user_for(self, question: dict[str, Any]) -> User:
        """Who asks: sees everything, or only the question's conversation in chat sets."""
        if "conversation" in question:
            scope = f"conv{question['conversation']}"
            return User(scope, frozenset({"everyone", scope}))
        return User("bench", frozenset({"everyone"}))


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def load(folder: Path, qrels_path: Path | None = None) -> Dataset:
    """Read a folder in the shared layout."""
    corpus = _jsonl(folder / "corpus.jsonl")
    qfile = folder / "questions.jsonl"
    if not qfile.exists():
        qfile = folder / "queries.jsonl"
    questions = _jsonl(qfile)
    for q in questions:
        q.setdefault("question", q.get("text", ""))
    if qrels_path is None:
        candidates = [
            folder / "qrels.tsv",
            folder / "qrels" / "test.tsv",
            *sorted((folder / "qrels").glob("*.tsv")),
        ]
        qrels_path = next((p for p in candidates if p.exists()), None)
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    if qrels_path is not None:
        for line in qrels_path.read_text().splitlines()[1:]:
            qid, doc, score = line.split("\t")
            qrels[qid][doc] = int(score)
    if not qrels:
        for q in questions:
            for doc in q.get("supporting_ids", []):
                qrels[q["_id"]][doc] = 1
    return Dataset(folder.name, corpus, questions, dict(qrels))


def build_index(
    data: Dataset, embedding: str = "minilm"
) -> tuple[EmbeddedIndex, EmbeddedSource, float]:
    """The dataset in an embedded index (cached); returns it and the seconds spent indexing."""
    digest = hashlib.sha256(FORMAT.encode())
    for doc in data.corpus:
        digest.update(doc["_id"].encode())
        digest.update(doc.get("text", "").encode())
    CACHE.mkdir(parents=True, exist_ok=True)
    embedder = load_embedder(embedding)
    path = CACHE / f"{data.name}-{digest.hexdigest()[:12]}-{embedder.name}.sqlite"
    index = EmbeddedIndex(path, embedder)
    started = time.perf_counter()
    if index.count(SOURCE)[0] != len(data.corpus):
        docs = []
        groups: dict[tuple[str, str], list[int]] = {}
        for doc in data.corpus:
            doc_id = str(doc["_id"])
            text = doc.get("text", "")
            chat = "conversation" in doc and "speaker" in doc
            if chat:  # indexed as seekgraph indexes a chat export: "author: text", neighbours
                text = f"{doc['speaker']}: {text}"
                key = (str(doc["conversation"]), str(doc.get("session", "")))
                groups.setdefault(key, []).append(len(docs))
            docs.append(
                IndexedDocument(
                    doc_id=doc_id,
                    source=SOURCE,
                    kind="messages" if chat else "docs",
                    title=doc.get("title") or doc_id,
                    text=text,
                    chunks=(not chat and chunk_markdown(text, doc_id))
                    or [{"chunk_id": f"{doc_id}#0", "heading": "", "text": text or doc_id}],
                    acl=[data.scope(doc)],
                    updated_at=doc.get("date_time"),
                )
            )
        with_context(docs, groups)
        for start in range(0, len(docs), 256):
            index.upsert(docs[start : start + 256])
    seconds = time.perf_counter() - started
    return index, EmbeddedSource(index, SOURCE, "docs"), seconds
