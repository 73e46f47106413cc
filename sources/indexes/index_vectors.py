"""Vectors for the reranker: from the index's cache when it stored them, else remembered."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from seekgraph.providers.embeddings import Embedder, RememberingEmbedder

if TYPE_CHECKING:
    from seekgraph.sources.indexes.embedded import EmbeddedIndex


class IndexCachedEmbedder:
    """An embedder whose passage vectors come from the index's cache when it has them.

    Reranking a hit then costs a lookup instead of a model call: the index stored the vector
    of exactly that text when it indexed the chunk.
    """

    def __init__(self, embedder: Embedder, index: EmbeddedIndex) -> None:
        self.embedder = embedder
        self.index = index
        self.name = embedder.name
        self.dim = embedder.dim
        self.cosine_low = embedder.cosine_low
        self.cosine_high = embedder.cosine_high
        self.paraphrase_cosine = embedder.paraphrase_cosine

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Queries are embedded as usual."""
        return self.embedder.embed_queries(texts)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """Cached vectors where known; the others computed (and not stored)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack(self.index.passage_vectors(texts, store=False)).astype(np.float32)


def reranker_embedder(embedder: Embedder, index: EmbeddedIndex | None) -> Embedder:
    """The embedder a reranker uses.

    Indexed chunks' vectors come from the index; texts that are judged but not indexed (a
    message's neighbours, answer sentences) are remembered in memory, on either backend.
    """
    cached = IndexCachedEmbedder(embedder, index) if index is not None else embedder
    return RememberingEmbedder(cached)
