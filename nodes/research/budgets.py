"""The report's budgets: the wall clock and the tokens, spent or left."""

from __future__ import annotations

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import now
from seekgraph.state.research import ResearchState


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


def budget_left(state: ResearchState, ctx: Context) -> bool:
    """Time and tokens remain for another round."""
    return not budget_spent(state, ctx)
