"""``expand_query``: this round's query variants — gap questions first, the original last.

The reader writes the variants (``Reader.rephrase``): a model writes complete
natural-language ones; the offline reader builds pseudo-relevance-feedback variants from the
evidence kept so far and bridge terms from documents read. This node drops variants whose
embedding is too close to a query already tried, and makes the web's queries of the person's
words only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import kept
from seekgraph.nodes.plumbing.services import Services, node_name, now
from seekgraph.nodes.reader import reader_for
from seekgraph.nodes.reader.coverage import bridge_questions
from seekgraph.nodes.reader.variants import feedback_terms
from seekgraph.providers.embeddings import Embedder, aembed_queries
from seekgraph.providers.terms import display_words
from seekgraph.sources.web import outside_words
from seekgraph.state.budget import spend
from seekgraph.state.events import node_event
from seekgraph.state.schemas import SearchState


def web_queries(state: SearchState, limit: int = 3) -> list[str]:
    """The round's queries for the web, made of the person's words and of web text only.

    First the person's own words, then names found on web pages (the next hop of a
    multi-hop question) joined to them — never a word of private evidence, whatever the
    mode (a model's variants have read that evidence).
    """
    outbound = set(state.get("outbound", []))
    if not outbound:
        return []
    asked = state.get("asked")
    if asked is None:  # a search of its own: the question is the person's
        asked = state["question"]
    question = state["question"]
    if outside_words(question, asked):  # a planner's sub-question: keep the person's words
        core = " ".join(w for w in display_words(question) if not outside_words(w, asked))
        core = core or asked
    else:
        core = question
    if not core.strip():
        return []
    candidates = [core]
    web = [ev for ev in kept(state.get("evidence", [])) if ev["source"] in outbound]
    if web:
        # the private search's multi-hop bridges and feedback, over public text only: the
        # person's words as the question, the web's passages as the evidence, the last
        # round's web queries as the hops followed
        public: SearchState = {
            **state,
            "question": core,
            "evidence": web,
            "verdict": {**state["verdict"], "gap_questions": state.get("web_queries", [])},
        }
        candidates += bridge_questions(public, web)
        feedback = feedback_terms(public)
        if feedback:
            candidates.append(f"{core} {' '.join(feedback)}")
    tried = {q.strip().lower() for q in state.get("tried_queries", [])}
    out: list[str] = []
    for q in candidates:
        q = " ".join(q.split())
        if q and q.lower() not in tried and q not in out:
            out.append(q)
    return out[:limit]


async def pick_variants(
    candidates: list[str], question: str, tried: list[str], ctx: Context, embedder: Embedder
) -> tuple[list[str], list[str]]:
    """New variants in FIFO order (gaps first, original last), near-duplicates dropped.

    The original question is judged first so a variant close to it never crowds it out.
    """
    seen = {q.strip().lower() for q in tried}
    fresh: list[str] = []
    for q in candidates:
        q = " ".join(q.split())
        if q and q.lower() not in seen:
            seen.add(q.lower())
            fresh.append(q)
    if not fresh:
        return [], []
    priority = sorted(fresh, key=lambda q: q != question)  # stable: original first
    vectors = await aembed_queries(embedder, [*tried, *priority])
    chosen = list(vectors[: len(tried)])
    threshold = ctx.search.variant_similarity_threshold or embedder.paraphrase_cosine
    keep: set[str] = set()
    dropped: list[str] = []
    for q, v in zip(priority, vectors[len(tried) :], strict=True):
        close = max((float(np.dot(v, c)) for c in chosen), default=0.0)
        if close >= threshold or len(keep) >= ctx.search.max_variants:
            dropped.append(q)
            continue
        keep.add(q)
        chosen.append(v)
    return [q for q in fresh if q in keep], dropped


async def expand_query(
    state: SearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Choose the query variants of a new round."""
    ctx = runtime.context
    rephrased = await reader_for(services, state, ctx).rephrase(state)
    candidates, strategy = rephrased.queries, rephrased.strategy
    tokens, calls = rephrased.tokens, rephrased.calls

    fresh, dropped = await pick_variants(
        candidates, state["question"], list(state.get("tried_queries", [])), ctx, services.embedder
    )
    outgoing = web_queries(state)
    budget = spend(state["budget"], now=now(), tokens=tokens, rounds=1)
    summary = (
        f"round {budget['rounds']}: {len(fresh)} queries ({strategy})"
        + (
            f", {len(dropped)} dropped (too close to another query, or past the "
            f"{ctx.search.max_variants} a round tries)"
            if dropped
            else ""
        )
        + (": " + " | ".join(fresh) if fresh else "")
        + (f"; to the web: {' | '.join(outgoing)}" if outgoing else "")
    )
    runtime.stream_writer(
        node_event(
            node_name("expand_query"),
            summary,
            queries=fresh,
            dropped=dropped,
            strategy=strategy,
            web_queries=outgoing,
        )
    )
    update: dict[str, Any] = {
        "variants": fresh,
        "tried_queries": [*fresh, *outgoing],
        "budget": budget,
        "web_queries": outgoing,
    }
    if calls:
        update["model_calls"] = calls
    return update
