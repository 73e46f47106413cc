"""``research_one``: one sub-question through the search graph, as a subgraph.

Its dependencies' answers reach it as the earlier turns of its own short thread (the search
reads them for follow-up terms and prompts); nothing else of theirs does. A failure is kept
as the sub-question's result with its reason (``record_subquestion_failure``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langgraph.errors import NodeError
from langgraph.runtime import Runtime

from nodes.context import Context
from nodes.plan_checks import filled
from nodes.services import node_name
from state.events import node_event
from state.models import Turn
from state.research import SubResult, SubRun

#: Quotes a sub-question's search gives its section (a report has room a chat answer has not).
REPORT_SENTENCES = 8


async def research_one(state: SubRun, runtime: Runtime[Context], search: Any) -> dict[str, Any]:
    """Search one sub-question; its kept evidence joins the run's ledger."""
    sub = state["sub"]
    answers = {d["id"]: d["answer"] for d in state["depends"]}
    question = filled(sub["question"], answers)
    turns: list[Turn] = [
        {"question": d["question"], "answer": d["answer"], "mode": "extractive"}
        for d in state["depends"]
    ]
    # the person reviewed the plan; the sub-question's search does not stop for a review
    context = replace(
        runtime.context,
        review_before_answer=False,
        max_answer_sentences=max(runtime.context.max_answer_sentences, REPORT_SENTENCES),
    )
    if sub.get("sources"):
        context = replace(context, sources=tuple(sub["sources"]))
    out = await search.ainvoke({"question": question, "turns": turns}, context=context)
    kept = [ev for ev in out.get("evidence", []) if ev["kept_by"] != "none"]
    result: SubResult = {
        "id": sub["id"],
        "question": question,
        "status": "done",
        "answer": out.get("answer", ""),
        "citations": out.get("citations", []),
        "reason": "; ".join(out.get("unanswered", [])),
    }
    runtime.stream_writer(
        node_event(
            node_name("research_one"),
            f"{sub['id']} done: {len(result['citations'])} citations",
            id=sub["id"],
            question=question,
        )
    )
    return {"results": {sub["id"]: result}, "ledger": {ev["source_id"]: ev for ev in kept}}


def record_subquestion_failure(state: SubRun, error: NodeError) -> dict[str, Any]:
    """A sub-question that failed after its retries: marked failed, with the reason."""
    sub = state["sub"]
    reason = f"{type(error.error).__name__}: {error.error}"[:300]
    failed: SubResult = {
        "id": sub["id"],
        "question": sub["question"],
        "status": "failed",
        "answer": "",
        "citations": [],
        "reason": reason,
    }
    return {"results": {sub["id"]: failed}}
