"""``plan_research``: the request becomes a DAG of sub-questions, or the person's is checked.

The reader plans (``ReportReader.plan``): offline, one sub-question per part the request names
("…: VPN, SSO, and expenses"), then one per topic the corpus holds for it; in LLM mode the
model plans, told those topics. The passages the plan's broad search gathered start the run's
ledger, and each topic's passages are its sub-question's evidence too. A person's own plan is
only checked (``state.plans.checked_plan``).
"""

from __future__ import annotations

import uuid
from typing import Any

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.admission import admit
from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import to_evidence
from seekgraph.nodes.plumbing.services import Services, now
from seekgraph.nodes.reader import report_reader_for
from seekgraph.nodes.research.events import tell
from seekgraph.providers.pace import fitted_seconds
from seekgraph.state.plans import checked_plan
from seekgraph.state.research import ResearchState


async def plan_research(
    state: ResearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """The plan: the person's own (checked), or the reader's."""
    ctx = runtime.context
    request = state["question"].strip()
    trace = state.get("trace_id") or uuid.uuid4().hex
    await services.registry.refresh_sources()  # sources added since, read off the loop
    admitted = admit(services, ctx, request, False)
    budget = {
        "started": now(),
        "max_seconds": 10  # ten runs' worth, each fitted to the model's measured pace
        * fitted_seconds(
            ctx.budget.max_seconds, admitted.model, ctx.max_rounds, ctx.budget.fit_seconds_to_model
        ),
        "tokens_used": 0,
        "max_tokens": ctx.research.report_max_tokens,
    }
    mode = {"mode": admitted.mode, "model": admitted.model, "budget": budget}
    found: dict[str, Any] = {}
    how: dict[str, Any]
    calls = []
    if state.get("plan"):
        plan, how, status = checked_plan(state["plan"]), {"given": True}, "written"
    else:
        reader = report_reader_for(services, {**mode, "trace_id": trace}, ctx)  # type: ignore[arg-type]
        planned = await reader.plan(request)
        plan, how, status = planned.plan, planned.how, "planned"
        found = {
            "ledger": {h["source_id"]: to_evidence(h, 0, "plan") for h in planned.pool},
            "topics": planned.topics,
        }
        calls = planned.calls
        budget["tokens_used"] += planned.tokens
    tell(
        runtime,
        state,
        "plan_research",
        f"{len(plan)} sub-questions ({status})",
        plan=plan,
        trace_id=trace,
        **how,
    )
    return {
        "plan": plan,
        "plan_status": status,
        "trace_id": trace,
        "model_calls": calls,
        **mode,
        **found,
    }
