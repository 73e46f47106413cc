"""``plan_gaps``: one more research round for what the report could not find.

After ``check_report``, while the budget lasts and only once per run: each sub-question that
failed or whose section stayed empty is asked again in other words. LLM mode asks the model
for the gap sub-questions (structured output; degrade to the extractive way). Extractive
mode relaxes the question to its key terms with the report's subject, searched in every
source (a keyword query finds what a sentence-shaped one missed). The new sub-questions
(``g1``…) join the plan and run like the others; the report is written again with them.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from seekgraph.nodes.plumbing import prompts
from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.llm import decide
from seekgraph.nodes.plumbing.services import Services, chat_model_for, node_name
from seekgraph.nodes.research.events import tell
from seekgraph.nodes.research.plan_checks import MAX_GAPS, gaps_of
from seekgraph.nodes.research.report_text import subject_of
from seekgraph.providers.terms import display_words
from seekgraph.state.research import ResearchState, SubQuestion


class GapQuestions(BaseModel):
    """A model's sub-questions for what the report lacks."""

    questions: list[str] = Field(default_factory=list)


def relaxed(sub: SubQuestion, results: dict[str, Any], subject: str) -> str:
    """The sub-question as its key terms, with the report's subject."""
    asked = results[sub["id"]]["question"] if sub["id"] in results else sub["question"]
    words = [w for w in display_words(f"{subject} {asked}") if len(w) > 2]
    return " ".join(dict.fromkeys(words)) or asked


async def plan_gaps(
    state: ResearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Add one round of gap sub-questions to the plan (at most once per run)."""
    gaps = gaps_of(state)
    results = state.get("results", {})
    request = state["question"]
    questions: list[str] = []
    update: dict[str, Any] = {"gap_round": 1}
    model = chat_model_for(services, state)  # type: ignore[arg-type]
    if model is not None:
        model = model.with_config(metadata={"trace_id": state.get("trace_id", "")})
        missing = "\n".join(
            f"- {results[g['id']]['question']}: {results[g['id']]['reason'] or 'nothing'}"
            for g in gaps
        )
        titles = ", ".join(s["title"] for s in state.get("sections", []))
        prompt = prompts.RESEARCH_GAPS_PROMPT.format(
            request=request, sections=titles, missing=missing, max_gaps=MAX_GAPS
        )
        decision = await decide(node_name("plan_gaps"), model, prompt, GapQuestions)
        update["model_calls"] = [decision.call]
        budget = state.get("budget", {})
        update["budget"] = {**budget, "tokens_used": budget.get("tokens_used", 0) + decision.tokens}
        if decision.value is not None:
            questions = [q.strip() for q in decision.value.questions if q.strip()][:MAX_GAPS]
    origins: list[str | None] = [None] * len(questions)  # a model's gaps are its own
    if not questions:
        subject = subject_of(request)
        questions = [relaxed(g, results, subject) for g in gaps]
        origins = [g["id"] for g in gaps]
    asked = {r["question"].lower() for r in results.values()}
    added: list[SubQuestion] = []
    for q, origin in zip(questions, origins, strict=True):
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
