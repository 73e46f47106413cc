"""``research_one``: one sub-question through the search graph, as a subgraph.

Its dependencies' answers reach it as the earlier turns of its own short thread (the search
reads them for follow-up terms and prompts); nothing else of theirs does. A failure is kept
as the sub-question's result with its reason (``record_subquestion_failure``).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from langchain_core.callbacks import BaseCallbackManager, UsageMetadataCallbackHandler
from langgraph.config import get_config
from langgraph.errors import NodeError
from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import relevance
from seekgraph.nodes.plumbing.services import Services
from seekgraph.nodes.reader import report_reader_for
from seekgraph.nodes.research.events import tell
from seekgraph.nodes.research.plan_checks import filled
from seekgraph.providers.pace import fitted_seconds
from seekgraph.state.models import Turn
from seekgraph.state.research import SubResult, SubRun, not_answered

#: Quotes a sub-question's search gives its section (a report has room a chat answer has not).
REPORT_SENTENCES = 8
#: Passages a sub-question's search keeps a round: a section chooses among them.
REPORT_EVIDENCE = 20


#: Seconds a sub-question's search may run past its budget to write its answer.
SUBQUESTION_GRACE = 30.0


async def research_one(
    state: SubRun, runtime: Runtime[Context], services: Services, search: Any
) -> dict[str, Any]:
    """Search one sub-question; its kept evidence joins the run's ledger.

    A ``{q1}`` in its question is filled with what the reader reads off the dependency's
    answer (``bridge``: the names it adds).
    """
    sub = state["sub"]
    reader = report_reader_for(services, state, runtime.context)
    answers = {
        d["id"]: reader.bridge(d["answer"], d["question"], d.get("lead", ""))
        for d in state["depends"]
    }
    question = filled(sub["question"], answers)
    turns: list[Turn] = [
        {"question": d["question"], "answer": d["answer"], "mode": "extractive"}
        for d in state["depends"]
    ]
    # the person reviewed the plan; the sub-question's search does not stop for a review
    ctx = runtime.context
    context = replace(
        ctx,
        review_before_answer=False,
        offline=replace(
            ctx.offline,
            max_answer_sentences=max(ctx.offline.max_answer_sentences, REPORT_SENTENCES),
        ),
        filtering=replace(
            ctx.filtering, rerank_top_k=max(ctx.filtering.rerank_top_k, REPORT_EVIDENCE)
        ),
    )
    if sub.get("sources"):
        context = replace(context, sources=tuple(sub["sources"]))
    if sub.get("budget_share"):  # its share of the report's tokens bounds its search
        share = int(sub["budget_share"] * runtime.context.research.report_max_tokens)
        budget = replace(context.budget, max_tokens=min(context.budget.max_tokens, share))
        context = replace(context, budget=budget)
    # the trace id reaches the sub-run's events and model calls through its metadata; the
    # tokens its model calls spend are counted for the report's budget
    parent = get_config()
    metadata = {**parent.get("metadata", {}), "trace_id": state["trace_id"]}
    metadata["sub_question"] = sub["id"]
    usage = UsageMetadataCallbackHandler()
    callbacks = parent.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        callbacks = callbacks.copy()
        callbacks.add_handler(usage, inherit=True)
    else:
        callbacks = [*(callbacks or []), usage]
    # a sub-question's search has a run's time, fitted to the model's measured pace (a fixed
    # 120 s cut a 1.5B model's every sub-question off, twice, and the report came out empty)
    seconds = fitted_seconds(ctx.budget.max_seconds, state.get("model"), ctx.max_rounds,
                             ctx.budget.fit_seconds_to_model) + SUBQUESTION_GRACE  # fmt: skip
    try:
        async with asyncio.timeout(seconds):
            out = await search.ainvoke(
                {"question": question, "turns": turns, "asked": state.get("asked", "")},
                {"metadata": metadata, "callbacks": callbacks},
                context=context,
            )
    except TimeoutError:
        raise TimeoutError(f"its search took longer than {seconds:.0f} s") from None
    kept = [ev for ev in out.get("evidence", []) if ev["kept_by"] != "none"]
    result: SubResult = {
        "id": sub["id"],
        "question": question,
        "status": "done",
        "answer": out.get("answer", ""),
        "citations": out.get("citations", []),
        "evidence": [ev["source_id"] for ev in sorted(kept, key=relevance, reverse=True)],
        "conflicts": out.get("conflicts", []),
        "reason": "; ".join(out.get("unanswered", [])),
        "tokens": sum(u.get("total_tokens", 0) for u in usage.usage_metadata.values()),
    }
    tell(
        runtime,
        state,
        "research_one",
        f"{sub['id']} done: {len(result['citations'])} citations",
        id=sub["id"],
        question=question,
    )
    return {"results": {sub["id"]: result}, "ledger": {ev["source_id"]: ev for ev in kept}}


def record_subquestion_failure(state: SubRun, error: NodeError) -> dict[str, Any]:
    """A sub-question that failed after its retries: marked failed, with the reason."""
    sub = state["sub"]
    reason = f"{type(error.error).__name__}: {error.error}"[:300]
    return {"results": {sub["id"]: not_answered(sub, "failed", reason)}}
