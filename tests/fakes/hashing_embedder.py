"""A small deterministic embedder for tests where the embedding model is not the point.

Words (lower-cased, ASCII-folded by Unicode category) and their character trigrams are
hashed into a fixed number of buckets and the counts L2-normalised: texts that share words
are close, texts that share none are orthogonal. No model file, no threads, microseconds
per text — and the same vector for the same text in every process.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from seekgraph.providers.embeddings import Vectors

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Bag of hashed words and trigrams (the ``Embedder`` protocol, no model)."""

    name = "test-hashing"
    dim = 384
    #: unrelated texts sit at 0 (no shared word), a shared word or two lifts them to 0.2-0.5.
    cosine_low = 0.05
    cosine_high = 0.6
    #: only the same words in another order come this close.
    paraphrase_cosine = 0.95

    def _vector(self, text: str) -> np.ndarray:
        row = np.zeros(self.dim, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            features = [word] + [word[i : i + 3] for i in range(max(len(word) - 2, 0))]
            for j, feature in enumerate(features):
                digest = hashlib.blake2b(feature.encode(), digest_size=4).digest()
                row[int.from_bytes(digest, "little") % self.dim] += 1.0 if j == 0 else 0.5
        norm = float(np.linalg.norm(row))
        return row / norm if norm else row

    def _encode(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack([self._vector(t) for t in texts]).astype(np.float32)

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Queries and passages are embedded alike."""
        return self._encode(texts)

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Queries and passages are embedded alike."""
        return self._encode(texts)
