"""``plan_gaps``: one more research round for what the report could not find.

After ``check_report``, while the budget lasts and only once per run: each sub-question that
failed or whose section stayed empty is asked again in other words, by the reader
(``ReportReader.gaps``): LLM mode asks the model for the gap sub-questions (structured
output; degrade to the extractive way); extractive mode relaxes the question to its key terms
with the report's subject, searched in every source (a keyword query finds what a
sentence-shaped one missed). The new sub-questions (``g1``…) join the plan and run like the
others; the report is written again with them.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services
from seekgraph.nodes.reader import report_reader_for
from seekgraph.nodes.research.events import tell
from seekgraph.nodes.research.plan_checks import gaps_of
from seekgraph.state.research import ResearchState, SubQuestion


async def plan_gaps(
    state: ResearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Add one round of gap sub-questions to the plan (at most once per run)."""
    gaps = gaps_of(state)
    results = state.get("results", {})
    update: dict[str, Any] = {"gap_round": 1}
    asked_again = await report_reader_for(services, state, runtime.context).gaps(state, gaps)
    if asked_again.by_model:
        update["model_calls"] = asked_again.calls
        budget = state.get("budget", {})
        used = budget.get("tokens_used", 0) + asked_again.tokens
        update["budget"] = {**budget, "tokens_used": used}
    asked = {r["question"].lower() for r in results.values()}
    added: list[SubQuestion] = []
    for q, origin in zip(asked_again.questions, asked_again.origins, strict=True):
        if q.lower() in asked:
            continue
        sub: SubQuestion = {
            "id": f"g{len(added) + 1}",
            "question": q,
            "depends_on": [],
            "intent": "what the report could not find yet; not what it already says",
            "title": q,
        }
        if origin:
            sub["gap_for"] = origin
        added.append(sub)
    update["plan"] = [*state["plan"], *added]
    tell(
        runtime,
        state,
        "plan_gaps",
        f"{len(added)} gap sub-questions for {len(gaps)} without an answer",
        added=added,
    )
    return update
