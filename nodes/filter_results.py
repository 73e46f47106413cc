"""``filter_results``: FastPass, rerank and LLM grading, each switchable in ``Context``.

Every stage's score stays on the evidence (``scores``), and the filter log of the round
records how many hits each stage kept, so the state shows why each passage survived.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.runtime import Runtime

from nodes.context import Context
from nodes.decisions import Grades
from nodes.evidence import chat_model_for, lifted, now
from nodes.llm import Decision, decide
from nodes.search_source import failure_event
from nodes.services import Services, node_name
from providers.chat import ChatModel
from providers.rerank import Reranker, rerank_detailed
from state.budget import spend
from state.events import node_event
from state.models import Evidence, Hit, ModelCall
from state.reducers import replace
from state.schemas import SearchState


def to_evidence(hit: Hit, round_: int, kept_by: str, **scores: float) -> Evidence:
    """A hit promoted to evidence, with its stage scores (a message's neighbours left out)."""
    fields = {k: v for k, v in hit.items() if k != "context"}
    return {
        **fields,  # type: ignore[typeddict-item]
        "scores": {"retrieval": hit["score"], **scores},
        "kept_by": kept_by,
        "queries": [hit["query"]],
        "round": round_,
    }


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
    return ctx.message_retrieval_weight if "context" in ev["scores"] else ctx.retrieval_weight


def blended(reranker: float, share: float, weight: float) -> float:
    """The rerank score with the source's own ranking counted ``weight`` of it.

    The source ranked the hit with what the reranker cannot see (the index's term
    statistics: BM25 weighs rare words; the local reranker counts every question word alike).
    """
    return round((1 - weight) * reranker + weight * share, 4)


async def grade(
    model: ChatModel, question: str, ctx: Context, candidates: list[Evidence]
) -> tuple[dict[str, float] | None, int, list[ModelCall]]:
    """LLM relevance grades per ``source_id``, in batches of ``grading_batch_size``.

    ``None`` when any batch could not be graded (the rerank result then stands).
    """

    async def one(batch: list[Evidence]) -> Decision[Grades]:
        passages = "\n".join(
            f'<passage id="{ev["source_id"]}">{ev["title"]}: {ev["snippet"][:800]}</passage>'
            for ev in batch
        )
        prompt = ctx.grade_prompt.format(question=question, passages=passages)
        return await decide(node_name("filter_results"), model, prompt, Grades)

    size = max(1, ctx.grading_batch_size)
    batches = [candidates[i : i + size] for i in range(0, len(candidates), size)]
    results = await asyncio.wait_for(
        asyncio.gather(*(one(b) for b in batches)), timeout=ctx.grading_timeout
    )
    grades: dict[str, float] = {}
    tokens = sum(r.tokens for r in results)
    calls = [r.call for r in results]
    for result in results:
        if result.value is None:
            return None, tokens, calls
        grades.update({g.id: g.score for g in result.value.grades})
    return grades, tokens, calls


async def filter_results(
    state: SearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Keep the hits of this round that deserve to be evidence."""
    ctx = runtime.context
    round_ = state["budget"]["rounds"]
    known = {ev["source_id"]: ev for ev in state.get("evidence", []) if ev["kept_by"] != "none"}
    hits = unique_hits(state.get("hits", []))
    again = [h for h in hits if h["source_id"] in known]
    candidates = [h for h in hits if h["source_id"] not in known]
    shares = retrieval_shares(hits)
    log: dict[str, Any] = {"round": round_, "hits": len(hits), "already_kept": len(again)}
    tokens = 0
    calls: list[ModelCall] = []
    kept: list[Evidence]

    if (
        ctx.fastpass_enabled
        and 0 < len(candidates) <= ctx.fastpass_max_hits
        and all(h["score"] >= ctx.fastpass_min_score for h in candidates)
    ):
        kept = [to_evidence(h, round_, "fastpass") for h in candidates]
        log["fastpass"] = len(kept)
        summary = f"FastPass kept {len(kept)} of {len(hits)} hits untouched"
    else:
        pool = [to_evidence(h, round_, "retrieval") for h in candidates]
        if ctx.rerank_enabled and pool:
            texts = [f"{ev['title']}. {ev['snippet']}" for ev in pool]
            scores, served_by = await rerank_detailed(services.reranker, state["question"], texts)
            for ev, score in zip(pool, scores, strict=True):
                ev["scores"]["rerank"] = score
            # A hit found by a gap or bridge question answers part of the question that the
            # question's own wording may not show (the second hop): judge it by that query
            # too. Paraphrase and feedback variants are the question itself: their hits are
            # judged by the question alone (their own wording would flatter them).
            hops = set(state["verdict"].get("gap_questions", []))
            by_query: dict[str, list[int]] = {}
            for i, ev in enumerate(pool):
                if ev["query"] in hops and ev["query"] != state["question"]:
                    by_query.setdefault(ev["query"], []).append(i)
            for query, indices in by_query.items():
                own = await services.reranker.rerank(query, [texts[i] for i in indices])
                for i, score in zip(indices, own, strict=True):
                    pool[i]["scores"]["rerank_query"] = score
                    pool[i]["scores"]["rerank"] = max(pool[i]["scores"]["rerank"], score)
            contexts = {h["source_id"]: h["context"] for h in candidates if h.get("context")}
            await lift_by_context(
                state["question"], pool, contexts, ctx.context_weight, services.reranker
            )
            for ev in pool:  # the reranker's own score stays beside the blend
                ev["scores"]["reranker"] = ev["scores"]["rerank"]
                share = shares[ev["source_id"]]
                weight = retrieval_weight(ctx, ev)
                ev["scores"]["rerank"] = blended(ev["scores"]["rerank"], share, weight)
            pool = sorted(
                (ev for ev in pool if ev["scores"]["rerank"] >= ctx.rerank_min_score),
                key=lambda ev: -ev["scores"]["rerank"],
            )[: ctx.rerank_top_k]
            for ev in pool:
                ev["kept_by"] = "rerank"
            log["rerank"] = len(pool)
            log["reranker"] = served_by
        model = chat_model_for(services, state)
        if ctx.grading_enabled and pool and model is not None:
            try:
                grades, tokens, calls = await grade(model, state["question"], ctx, pool)
            except TimeoutError:
                grades, log["grade_error"] = None, "timed out"
                calls.append(
                    {
                        "node": node_name("filter_results"),
                        "model": "none",
                        "outcome": "degraded",
                        "detail": f"grading timed out after {ctx.grading_timeout} s",
                        "tokens": 0,
                    }
                )
            if grades is None:
                log.setdefault("grade_error", "model unavailable")
            else:
                for ev in pool:
                    ev["scores"]["grade"] = grades.get(ev["source_id"], 0.0)
                pool = [ev for ev in pool if ev["scores"]["grade"] >= ctx.grading_min_score]
                for ev in pool:
                    ev["kept_by"] = "grade"
                log["grade"] = len(pool)
        kept = pool
        stages = ", ".join(f"{k} {log[k]}" for k in ("rerank", "grade") if k in log)
        summary = f"{len(hits)} hits → kept {len(kept)}" + (f" ({stages})" if stages else "")
        if "grade_error" in log:
            summary += f"; grading skipped ({log['grade_error']})"

    log["kept"] = len(kept)
    log["dropped"] = len(candidates) - len(kept)
    update_evidence = list(kept)
    # Passages kept earlier and found again: the merge records this round's query on them,
    # and a better retrieval score this round raises their rerank score (the merge keeps the
    # best of each stage), so what every query agrees on ranks by its best retrieval.
    for hit in again:
        seen = to_evidence(hit, round_, "none")
        before = known[hit["source_id"]]
        if "reranker" in before["scores"]:
            share, weight = shares[hit["source_id"]], retrieval_weight(ctx, before)
            seen["scores"]["rerank"] = blended(before["scores"]["reranker"], share, weight)
        update_evidence.append(seen)
    failures = [f for f in state.get("source_failures", []) if f["round"] == round_]
    for failure in failures:
        runtime.stream_writer(failure_event(failure))
    runtime.stream_writer(node_event(node_name("filter_results"), summary, **log))
    update: dict[str, Any] = {
        "evidence": update_evidence,
        "hits": replace(),
        "filter_log": [*state.get("filter_log", []), log],
    }
    if tokens:
        update["budget"] = spend(state["budget"], now=now(), tokens=tokens)
    if calls:
        update["model_calls"] = calls
    return update
