"""Rerankers: score (query, passage) pairs in [0, 1]. The local one needs no network."""

from __future__ import annotations

import re
from typing import NamedTuple, Protocol

import numpy as np

from seekgraph.providers.embeddings import (
    Embedder,
    Vectors,
    aembed_passages,
    aembed_queries,
    calibrate_cosine,
)
from seekgraph.providers.terms import coverage, display_words, term_set, terms


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


class ScoredByMeaning(NamedTuple):
    """Scores of one rerank call, each passage's meaning score, and who served the scores."""

    scores: list[float]
    meaning: list[float]
    served_by: str


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
        return (await self.score_parts(query, passages))[0]

    async def score_parts(self, query: str, passages: list[str]) -> tuple[list[float], list[float]]:
        """The blended scores and their meaning part (calibrated cosine) from one embedding."""
        if not passages:
            return [], []
        dense = await _calibrated_cosines(self.embedder, query, passages)
        qterms = terms(query)
        lexical = np.array([coverage(qterms, term_set(p)) for p in passages], dtype=np.float32)
        blended = self.dense_weight * dense + (1 - self.dense_weight) * lexical
        return [round(float(x), 4) for x in blended], [round(float(x), 4) for x in dense]


async def meaning_scores(embedder: Embedder, query: str, passages: list[str]) -> list[float]:
    """How close each passage is to the query in meaning: calibrated cosine, in [0, 1].

    The embedding model's own calibration (``cosine_low``/``cosine_high``) puts every model
    on one scale, so one threshold (``Context.meaning_min_score``) serves them all.
    """
    if not passages:
        return []
    return [round(float(x), 4) for x in await _calibrated_cosines(embedder, query, passages)]


async def _calibrated_cosines(embedder: Embedder, query: str, passages: list[str]) -> Vectors:
    """The query's cosine to each passage, on the model's calibrated [0, 1] scale."""
    qv = await aembed_queries(embedder, [query])
    pv = await aembed_passages(embedder, passages)
    return calibrate_cosine(pv @ qv[0], embedder.cosine_low, embedder.cosine_high)


_ADDRESS = re.compile(r"\b(?:https?|ftp)://\S+", re.I)
_TOKEN = re.compile(r"[\w.-]+|[^\w\s]", re.UNICODE)


def without_subject(text: str, subject: str) -> str:
    """``text`` without the words naming ``subject`` (a document's title).

    Every sentence of a document is about its subject: the question that names it is close
    to all of them ("…httpx…" to every line of httpx's README). What is asked *about* the
    subject is what a sentence must mean. The text is kept whole when too little would stay.
    """
    named = term_set(subject)
    if not named:
        return text
    kept = [t for t in _TOKEN.findall(text) if not (term_set(t) and term_set(t) <= named)]
    rest = " ".join(kept)
    return rest if len(term_set(rest)) >= 2 else text


async def meaning_beyond_subject(
    embedder: Embedder, question: str, units: list[tuple[str, str]]
) -> list[float]:
    """How close each ``(sentence, its document's title)`` is in meaning to the question.

    What the question asks about a document's subject, against what the sentence says: both
    are read without the title's words (``without_subject``), the question without the web
    addresses it names. A sentence that says nothing but its title ("Noise protocol
    framework") means nothing beyond the subject: 0.
    """
    if not units:
        return []
    asked = _ADDRESS.sub(" ", question)
    cores = list(dict.fromkeys(without_subject(asked, title) for _, title in units))
    qv = await aembed_queries(embedder, cores)
    row = {core: i for i, core in enumerate(cores)}
    pv = await aembed_passages(embedder, [without_subject(s, title) for s, title in units])
    cos = np.array(
        [
            float(pv[i] @ qv[row[without_subject(asked, title)]])
            if len(term_set(sentence) - term_set(title)) >= 2
            else 0.0
            for i, (sentence, title) in enumerate(units)
        ],
        dtype=np.float32,
    )
    dense = calibrate_cosine(cos, embedder.cosine_low, embedder.cosine_high)
    return [round(float(x), 4) for x in dense]


async def words_pull(embedder: Embedder, question: str, units: list[tuple[str, str]]) -> list[bool]:
    """For each ``(sentence, its document's title)``: do the words it lacks pull toward it.

    Those are the question's words that neither the sentence nor its title holds.

    A sentence that answers in other words is closer to the whole question than to the
    question without those words ("cap for accommodation" pulls toward "the nightly limit
    for hotels"); a sentence close to the question only through the words they share is
    closer without them ("encrypt secrets" pulls away from "reads key-value pairs from a
    .env file"). A sentence that lacks none of the question's words is pulled.
    """
    if not units:
        return []
    variants: list[str] = []
    for sentence, title in units:
        seen = term_set(f"{title} {sentence}")
        lacked = {w for w in display_words(question) if not term_set(w) <= seen}
        kept = [t for t in _TOKEN.findall(question) if t not in lacked]
        variants.append(" ".join(kept) if lacked else question)
    queries = list(dict.fromkeys([question, *variants]))
    qv = await aembed_queries(embedder, queries)
    row = {q: i for i, q in enumerate(queries)}
    pv = await aembed_passages(embedder, [f"{title}. {sentence}" for sentence, title in units])
    return [bool(pv[i] @ qv[0] >= pv[i] @ qv[row[variant]]) for i, variant in enumerate(variants)]


async def rerank_with_meaning(
    reranker: Reranker, embedder: Embedder, query: str, passages: list[str]
) -> ScoredByMeaning:
    """The reranker's scores and each passage's meaning score (one embedding when local)."""
    parts = getattr(reranker, "score_parts", None)
    if parts is not None:
        scores, meaning = await parts(query, passages)
        return ScoredByMeaning(scores, meaning, reranker.name)
    scores, served_by = await rerank_detailed(reranker, query, passages)
    return ScoredByMeaning(scores, await meaning_scores(embedder, query, passages), served_by)
