"""The stages of ``filter_results``, each a function of the round and the pool it gets.

``fastpass`` keeps a few strong hits untouched (no other stage runs); otherwise every hit
becomes a candidate and ``STAGES`` run in order, each narrowing the pool and leaving its
score on the evidence and its count in the round's log. A flow can compose its own list.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import hop_queries, lifted, to_evidence
from seekgraph.nodes.plumbing.services import Services, node_name
from seekgraph.nodes.reader import reader_for
from seekgraph.providers import pace
from seekgraph.providers.rerank import Reranker, rerank_with_meaning
from seekgraph.state.models import Evidence, Hit, ModelCall
from seekgraph.state.schemas import SearchState


@dataclass
class Round:
    """What the stages of one round share, and what they record."""

    state: SearchState
    ctx: Context
    services: Services
    candidates: list[Hit]
    """This round's hits that are not evidence yet, one per ``source_id``."""
    shares: dict[str, float]
    """Each hit's retrieval score on a [0, 1] scale."""
    log: dict[str, Any]
    tokens: int = 0
    calls: list[ModelCall] = field(default_factory=list)


Stage = Callable[[Round, list[Evidence]], Awaitable[list[Evidence]]]


def unique_hits(hits: list[Hit]) -> list[Hit]:
    """One hit per ``source_id`` (the best scored), best first."""
    best: dict[str, Hit] = {}
    for hit in hits:
        if hit["source_id"] not in best or hit["score"] > best[hit["source_id"]]["score"]:
            best[hit["source_id"]] = hit
    return sorted(best.values(), key=lambda h: -h["score"])


async def lift_by_context(
    question: str,
    pool: list[Evidence],
    contexts: dict[str, str],
    weight: float,
    reranker: Reranker,
) -> None:
    """Let a chat message's neighbours lift its rerank score toward theirs.

    A reply ("Yes, last year!") rarely repeats the question's words; the messages around it
    do. The score moves ``weight`` of the way up to the neighbours' score, never down. The
    neighbours' text stays out of the evidence (state keeps references, not conversations).
    """
    with_context = [ev for ev in pool if ev["source_id"] in contexts]
    if weight > 0 and with_context:
        texts = [f"{ev['title']}. {contexts[ev['source_id']]}" for ev in with_context]
        scores = await reranker.rerank(question, texts)
        for ev, around in zip(with_context, scores, strict=True):
            own = ev["scores"]["rerank"]
            ev["scores"]["context"] = around
            ev["scores"]["rerank"] = round(lifted(own, around, weight), 4)


def retrieval_shares(hits: list[Hit]) -> dict[str, float]:
    """Each hit's retrieval score on a [0, 1] scale, by ``source_id``.

    Scores in [0, 1] are taken as they are — the built-in indexes' fused scores are, and they
    compare across queries and rounds; a source scoring on another scale is divided by its
    best score this round.
    """
    scale: dict[str, float] = {}
    for hit in hits:
        scale[hit["source"]] = max(scale.get(hit["source"], 1.0), hit["score"])
    return {h["source_id"]: max(0.0, h["score"]) / scale[h["source"]] for h in hits}


def retrieval_weight(ctx: Context, ev: Evidence) -> float:
    """How much the source's ranking counts for this evidence.

    A chat message judged with its neighbours counts it less: its retrieval score saw the
    message alone, the rerank score the conversation around it.
    """
    return (
        ctx.filtering.message_retrieval_weight
        if "context" in ev["scores"]
        else ctx.filtering.retrieval_weight
    )


def blended(reranker: float, share: float, weight: float) -> float:
    """The rerank score with the source's own ranking counted ``weight`` of it.

    The source ranked the hit with what the reranker cannot see (the index's term
    statistics: BM25 weighs rare words; the local reranker counts every question word alike).
    """
    return round((1 - weight) * reranker + weight * share, 4)


def grading_batches(ctx: Context, candidates: int) -> int:
    """How many grading calls ``candidates`` passages take."""
    return -(-candidates // max(1, ctx.filtering.grading_batch_size))


def grading_timeout(ctx: Context, model_name: str | None, candidates: int) -> float:
    """``grading_timeout``, raised to what the batches take at the model's measured pace.

    A 1.5B model on two cores reads a batch of passages in about a minute: a fixed 30 s
    timed every grading out, so a slow model never graded (``fit_seconds_to_model``). The
    pace is grading's own once measured (a grading call reads ten passages, the model's
    other calls far less).
    """
    return pace.fitted_timeout(
        ctx.filtering.grading_timeout,
        model_name,
        grading_batches(ctx, candidates),
        ctx.budget.fit_seconds_to_model,
        step=node_name("filter_results"),
    )


def fastpass(r: Round) -> list[Evidence] | None:
    """A few strong hits kept untouched (zero extra latency), or ``None``."""
    ctx, candidates = r.ctx, r.candidates
    if (
        ctx.filtering.fastpass_enabled
        and 0 < len(candidates) <= ctx.filtering.fastpass_max_hits
        and all(h["score"] >= ctx.filtering.fastpass_min_score for h in candidates)
    ):
        r.log["fastpass"] = len(candidates)
        return [to_evidence(h, r.log["round"], "fastpass", r.state["question"]) for h in candidates]
    return None


async def rerank_stage(r: Round, pool: list[Evidence]) -> list[Evidence]:
    """Rerank (blended with the source's own ranking), then threshold and top-k."""
    ctx, services, state = r.ctx, r.services, r.state
    if not ctx.filtering.rerank_enabled or not pool:
        return pool
    texts = [f"{ev['title']}. {ev['snippet']}" for ev in pool]
    scores, meaning, served_by = await rerank_with_meaning(
        services.reranker, services.embedder, state["question"], texts
    )
    for ev, score, close in zip(pool, scores, meaning, strict=True):
        ev["scores"]["rerank"] = score
        ev["scores"]["meaning"] = close
    # A hit found by a bridge question answers part of the question that the question's
    # own wording may not show (the second hop, through a name the question does not
    # say): judge it by that query too. Paraphrase and feedback variants are the question
    # itself, and a gap question made of the question's missing words is a part of it:
    # their hits are judged by the question alone (a lone word would flatter any passage
    # that holds it).
    hops = hop_queries(state)
    by_query: dict[str, list[int]] = {}
    for i, ev in enumerate(pool):
        if ev["query"] in hops:
            by_query.setdefault(ev["query"], []).append(i)
    for query, indices in by_query.items():
        own = await services.reranker.rerank(query, [texts[i] for i in indices])
        for i, score in zip(indices, own, strict=True):
            pool[i]["scores"]["rerank_query"] = score
            pool[i]["scores"]["rerank"] = max(pool[i]["scores"]["rerank"], score)
    contexts = {h["source_id"]: h["context"] for h in r.candidates if h.get("context")}
    await lift_by_context(
        state["question"], pool, contexts, ctx.filtering.context_weight, services.reranker
    )
    for ev in pool:  # the reranker's own score stays beside the blend
        ev["scores"]["reranker"] = ev["scores"]["rerank"]
        weight = retrieval_weight(ctx, ev)
        ev["scores"]["rerank"] = blended(ev["scores"]["rerank"], r.shares[ev["source_id"]], weight)
    # Words are one signal: a passage that means what the question asks, in other words, is
    # kept too (its blend is low because it shares no word with the question).
    pool = sorted(
        (
            ev
            for ev in pool
            if ev["scores"]["rerank"] >= ctx.filtering.rerank_min_score
            or ev["scores"]["meaning"] >= ctx.filtering.meaning_min_score
        ),
        key=lambda ev: -ev["scores"]["rerank"],
    )[: ctx.filtering.rerank_top_k]
    for ev in pool:
        ev["kept_by"] = "rerank"
    r.log["rerank"] = len(pool)
    r.log["reranker"] = served_by
    return pool


async def grade_stage(r: Round, pool: list[Evidence]) -> list[Evidence]:
    """The reader's grades (LLM mode only), with a timeout; degrades to the pool as it is."""
    ctx = r.ctx
    if not ctx.filtering.grading_enabled or not pool:
        return pool
    reader = reader_for(r.services, r.state, ctx)
    timeout = grading_timeout(ctx, r.state.get("model"), len(pool))
    graded = await reader.grade(r.state["question"], pool, timeout)
    if graded is None:  # this reader does not grade (offline)
        return pool
    r.tokens += graded.tokens
    r.calls += graded.calls
    if graded.grades is None:
        r.log["grade_error"] = graded.error or "model unavailable"
        return pool
    for ev in pool:
        ev["scores"]["grade"] = graded.grades.get(ev["source_id"], 0.0)
    pool = [ev for ev in pool if ev["scores"]["grade"] >= ctx.filtering.grading_min_score]
    for ev in pool:
        ev["kept_by"] = "grade"
    r.log["grade"] = len(pool)
    return pool


STAGES: tuple[Stage, ...] = (rerank_stage, grade_stage)
"""The stages after FastPass, in order."""
