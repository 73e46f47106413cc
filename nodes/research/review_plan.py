"""``review_plan``: when the run asks for a review, the person approves, edits or replans.

It only calls ``interrupt()`` with the plan and its estimate and returns the decision; it has
no side effects, because LangGraph runs it again on resume. Edits are checked like any plan
(``state.plans``): an invalid one (a cycle, with its path) is refused and the review asked
again with the reason; nothing runs before approval.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.research.events import tell
from seekgraph.providers.pace import report_seconds
from seekgraph.state.plans import PlanError, checked_plan
from seekgraph.state.research import ResearchState

#: Seconds one sub-question takes in extractive mode on this machine (MuSiQue p50 ~0.7 s).
SECONDS_PER_SUBQUESTION = 1.0


async def review_plan(state: ResearchState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Pause for the person's decision on the plan (when the run asks for it)."""
    if not runtime.context.review_before_answer or state.get("plan_status") == "approved":
        return {}
    plan = state["plan"]
    estimate = {
        "sub_questions": len(plan),
        "rounds": len(plan) * runtime.context.max_rounds,
        "tokens": 0 if state.get("mode") == "extractive" else len(plan) * 4000,
        "seconds": round(
            max(
                len(plan) * SECONDS_PER_SUBQUESTION,
                report_seconds(state.get("model"), len(plan), runtime.context.max_rounds) or 0.0,
            ),
            1,
        ),
    }
    asked: dict[str, Any] = {"plan": plan, "estimate": estimate}
    while True:  # an edit that is not a valid plan is refused, and the review asked again
        decision = interrupt(asked)
        decision = decision if isinstance(decision, dict) else {"approve": True}
        if decision.get("plan") is None or decision.get("replan"):
            break
        try:
            edited = checked_plan(decision["plan"])
            break
        except PlanError as exc:
            asked = {**asked, "error": str(exc)}
    if decision.get("replan"):
        update: dict[str, Any] = {
            "question": f"{state['question']} {decision['replan']}".strip(),
            "plan": [],
            "plan_status": "replan",
        }
        summary = "replan asked: " + str(decision["replan"])
    elif decision.get("plan") is not None:
        before = {s["id"]: s for s in plan}
        for sub in edited:  # a reworded question no longer has the heading of the old one
            old = before.get(sub["id"])
            if old and old["question"] != sub["question"] and sub.get("title") == old.get("title"):
                sub.pop("title", None)
        update = {"plan": edited, "plan_status": "approved"}
        summary = f"edited plan approved ({len(update['plan'])} sub-questions)"
    else:
        update = {"plan_status": "approved"}
        summary = "plan approved"
    tell(runtime, state, "review_plan", summary)
    return update
