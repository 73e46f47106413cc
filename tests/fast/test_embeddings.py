"""The embedding models that ship offline, and switching an index from one to the other."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from seekgraph.providers.embeddings import (
    E5Embedder,
    Embedder,
    MiniLMEmbedder,
    RecentVectors,
    RememberingEmbedder,
    Vectors,
    load_embedder,
)
from seekgraph.server.settings import Settings
from seekgraph.sources.base import User
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.index_vectors import reranker_embedder
from seekgraph.sources.ingestion.workspace import sync_source

BOB = User("bob", frozenset({"everyone"}))


class Counting:
    """Wraps an embedder and counts the passages it actually had to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.cosine_low, self.cosine_high = inner.cosine_low, inner.cosine_high
        self.paraphrase_cosine = inner.paraphrase_cosine
        self.passages = 0

    def embed_queries(self, texts: list[str]) -> Vectors:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: list[str]) -> Vectors:
        self.passages += len(texts)
        return self.inner.embed_passages(texts)


def test_minilm_vectors_do_not_depend_on_what_else_is_in_the_batch(embedder: Embedder) -> None:
    texts = [
        "VPN",
        "Request a VPN profile in the IT portal and import it into WireGuard.",
        "word " * 600,  # longer than the model's window: truncated, not an error
    ]
    together = embedder.embed_passages(texts)
    alone = np.vstack([embedder.embed_passages([t]) for t in texts])
    assert together.shape == (3, embedder.dim)
    assert np.allclose(together, alone, atol=1e-4)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-4)


def test_minilm_puts_a_paraphrase_closer_than_an_unrelated_sentence() -> None:
    model = MiniLMEmbedder()
    q, para, other = model.embed_queries(
        [
            "How do I connect to the VPN from a new laptop?",
            "How can I connect to the VPN on a new laptop?",
            "The canteen closes early on Fridays.",
        ]
    )
    assert float(q @ para) >= model.paraphrase_cosine > float(q @ other)


def test_switching_the_embedding_model_reembeds_once_and_reuses_cached_vectors(
    tmp_path: Path, e5: E5Embedder
) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "vpn.md").write_text("# VPN\n\nImport the WireGuard profile from the IT portal.\n")
    (folder / "food.md").write_text("# Canteen\n\nThe canteen closes at two on Fridays.\n")
    path = tmp_path / "idx.sqlite"
    first = Counting(e5)
    sync_source(EmbeddedIndex(path, first), folder, "kb", "kb", ["group:everyone"])
    assert first.passages == 2

    minilm = Counting(MiniLMEmbedder())
    switched = EmbeddedIndex(path, minilm)
    assert minilm.passages == 2  # every chunk got a vector from the new model
    assert switched.get_meta("embedding_model") == minilm.name
    rows = switched.search("kb", "setting up remote network access", BOB, 1, "dense")
    assert switched.chunk_hits(rows, "", 3)[0]["doc_id"] == "kb/vpn"

    back = Counting(e5)
    EmbeddedIndex(path, back)
    assert back.passages == 0  # e5's vectors were still in the cache


def test_text_judged_again_is_not_embedded_again_and_not_written_to_the_index(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A message's neighbours and answer sentences are judged every round, not re-embedded."""
    counting = Counting(embedder)
    reranking = reranker_embedder(counting, EmbeddedIndex(tmp_path / "idx.sqlite", counting))
    texts = ["ben: Yes, renewed it on Monday.", "ana: Thanks! Lunch is at noon today."]
    first = reranking.embed_passages(texts)
    again = reranking.embed_passages([texts[1], texts[0]])
    assert counting.passages == 2
    assert np.allclose(first[0], again[1]) and np.allclose(first[1], again[0])
    reopened = Counting(embedder)
    reranker_embedder(reopened, EmbeddedIndex(tmp_path / "idx.sqlite", reopened)).embed_passages(
        texts
    )
    assert reopened.passages == 2  # kept in memory only, the index file did not grow


def test_without_an_embedded_index_the_reranker_still_embeds_a_text_once(
    embedder: Embedder,
) -> None:
    """The Redis backend has no SQLite cache: the reranker's embedder remembers vectors."""
    counting = Counting(embedder)
    remembering = RememberingEmbedder(counting, RecentVectors(size=2))
    texts = ["ben: Yes, renewed it on Monday.", "ana: Thanks! Lunch is at noon today."]
    first = remembering.embed_passages(texts)
    assert np.allclose(remembering.embed_passages(texts[::-1]), first[::-1])
    assert counting.passages == 2
    remembering.embed_passages(["cy: The garage closes on Sunday."])  # forgets the oldest
    remembering.embed_passages(texts)
    assert counting.passages == 4


def test_an_unknown_embedding_model_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="minilm, e5"):
        load_embedder("bert")
    with pytest.raises(ValidationError, match="embedding_model"):
        Settings(embedding_model="bert")
