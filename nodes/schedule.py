"""``schedule``: between batches, mark what cannot run, and check the budget.

The only place that knows dependencies besides the router (``graph/routing.py``,
``next_batch``): a sub-question whose dependency failed or was skipped is skipped with that
reason; once the wall-clock or the token budget (``report_max_tokens``: the plan's and every
finished search's model calls) is spent, every sub-question not started is skipped and the
report is written from what exists (and says so).
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from seekgraph.nodes.context import Context
from seekgraph.nodes.research_events import tell
from seekgraph.nodes.services import now
from seekgraph.state.research import ResearchState, SubResult, not_answered


def budget_spent(state: ResearchState, ctx: Context) -> str:
    """Which of the report's budgets is spent (wall clock, tokens), or "" while both last.

    Tokens are the plan's and report's calls and every finished sub-question's search.
    """
    budget = state["budget"]
    results = state.get("results", {})
    tokens = budget.get("tokens_used", 0) + sum(r.get("tokens", 0) for r in results.values())
    if now() - budget["started"] > budget["max_seconds"]:
        return "the time budget was spent"
    if tokens >= ctx.research.report_max_tokens:
        return f"the token budget was spent ({tokens} of {ctx.research.report_max_tokens} tokens)"
    return ""


async def schedule(state: ResearchState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Skip what cannot run; say how far the plan is."""
    results = dict(state.get("results", {}))
    spent = budget_spent(state, runtime.context)
    spent = f"skipped: {spent}" if spent else ""
    skipped: dict[str, SubResult] = {}
    changed = True
    while changed:
        changed = False
        for sub in state["plan"]:
            if sub["id"] in results or sub["id"] in skipped:
                continue
            bad = [
                d
                for d in sub["depends_on"]
                if (results.get(d) or skipped.get(d) or {"status": ""})["status"]
                in ("failed", "skipped")
            ]
            reason = f"skipped: {', '.join(bad)} could not be answered" if bad else spent
            if reason:
                skipped[sub["id"]] = not_answered(sub, "skipped", reason)
                changed = True
    done = sum(1 for r in results.values() if r["status"] == "done")
    tell(
        runtime,
        state,
        "schedule",
        f"{done} of {len(state['plan'])} sub-questions answered"
        + (f", {len(skipped)} skipped" if skipped else ""),
        skipped=sorted(skipped),
    )
    return {"results": skipped} if skipped else {}
