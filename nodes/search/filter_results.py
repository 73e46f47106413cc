"""``filter_results``: FastPass, rerank and LLM grading, each switchable in ``Context``.

Every stage's score stays on the evidence (``scores``), and the filter log of the round
records how many hits each stage kept, so the state shows why each passage survived. The
stages themselves are in ``nodes/search/filter_stages.py``.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import to_evidence
from seekgraph.nodes.plumbing.services import Services, node_name, now
from seekgraph.nodes.search.filter_stages import (
    STAGES,
    Round,
    Stage,
    blended,
    fastpass,
    retrieval_shares,
    retrieval_weight,
    unique_hits,
)
from seekgraph.state.budget import spend
from seekgraph.state.events import ErrorEvent, node_event
from seekgraph.state.models import Evidence, SourceFailure
from seekgraph.state.reducers import replace
from seekgraph.state.schemas import SearchState


async def filter_results(
    state: SearchState,
    runtime: Runtime[Context],
    services: Services,
    stages: tuple[Stage, ...] = STAGES,
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
    r = Round(state, ctx, services, candidates, shares, log)
    kept: list[Evidence]
    strong = fastpass(r)
    if strong is not None:
        kept = strong
        summary = f"FastPass kept {len(kept)} of {len(hits)} hits untouched"
    else:
        kept = [to_evidence(h, round_, "retrieval", state["question"]) for h in candidates]
        cut: list[dict[str, Any]] = []
        for stage in stages:
            staged = kept
            kept = await stage(r, staged)
            cut += dropped_by(stage, staged, kept)
        if cut:
            log["cut"] = cut
        done = ", ".join(f"{k} {log[k]}" for k in ("rerank", "grade") if k in log)
        summary = f"{len(hits)} hits → kept {len(kept)}" + (f" ({done})" if done else "")
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
    if r.tokens:
        update["budget"] = spend(state["budget"], now=now(), tokens=r.tokens)
    if r.calls:
        update["model_calls"] = r.calls
    return update


def dropped_by(stage: Stage, before: list[Evidence], after: list[Evidence]) -> list[dict[str, Any]]:
    """The hits ``stage`` dropped: which passage, by which stage, with the scores it had.

    The filter log is where a person looks for why a passage they expected is not in the
    answer: found by the search and dropped by a stage (the scores say how far below the
    threshold), or never found.
    """
    stayed = {ev["source_id"] for ev in after}
    name = getattr(stage, "__name__", "stage").removesuffix("_stage")
    return [
        {"id": ev["source_id"], "stage": name, "scores": dict(ev["scores"])}
        for ev in before
        if ev["source_id"] not in stayed
    ]


def failure_event(failure: SourceFailure) -> ErrorEvent:
    """The stream event announcing a failed source."""
    return {
        "event": "error",
        "node": node_name("search_source"),
        "message": f"source {failure['source']} failed: {failure['error']}",
    }
