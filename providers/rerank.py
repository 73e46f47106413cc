"""Rerankers: score (query, passage) pairs in [0, 1]. The local one needs no network."""

from __future__ import annotations

from typing import NamedTuple, Protocol

import numpy as np

from providers.embeddings import Embedder, aembed_passages, aembed_queries, calibrate_cosine
from providers.terms import coverage, term_set, terms


class Reranker(Protocol):
    """Scores passages against a query."""

    name: str

    async def rerank(self, query: str, passages: list[str]) -> list[float]:
        """One score in [0, 1] per passage, higher is more relevant."""
        ...


class Reranked(NamedTuple):
    """Scores of one rerank call and the reranker that served them (e.g. after a failover)."""

    scores: list[float]
    served_by: str


async def rerank_detailed(reranker: Reranker, query: str, passages: list[str]) -> Reranked:
    """Rerank and say who served: a reranker with a fallback reports it per call."""
    detailed = getattr(reranker, "rerank_detailed", None)
    if detailed is not None:
        result: Reranked = await detailed(query, passages)
        return result
    return Reranked(await reranker.rerank(query, passages), reranker.name)


class LocalReranker:
    """Bi-encoder cosine (calibrated) blended with the share of query terms a passage contains.

    Not a cross-encoder (none ships offline); the blend keeps exact-term matches, which
    bi-encoders blur, and the calibration makes scores comparable to fixed thresholds.
    """

    name = "local"

    def __init__(self, embedder: Embedder, dense_weight: float = 0.5) -> None:
        self.embedder = embedder
        self.dense_weight = dense_weight

    async def rerank(self, query: str, passages: list[str]) -> list[float]:
        """Blend calibrated cosine and term coverage."""
        if not passages:
            return []
        qv = await aembed_queries(self.embedder, [query])
        pv = await aembed_passages(self.embedder, passages)
        dense = calibrate_cosine(pv @ qv[0], self.embedder.cosine_low, self.embedder.cosine_high)
        qterms = terms(query)
        lexical = np.array([coverage(qterms, term_set(p)) for p in passages], dtype=np.float32)
        blended = self.dense_weight * dense + (1 - self.dense_weight) * lexical
        return [round(float(x), 4) for x in blended]
