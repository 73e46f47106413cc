"""A research plan's progress: what is ready to run, placeholders filled, a report's gaps.

- ``ready``/``filled``: the sub-questions whose dependencies are done, their ``{q1}``
  filled with the dependencies' answers (``schedule``, ``research_one``);
- ``gaps_of``: the sub-questions a report has nothing for (``check_report``, ``plan_gaps``).

A plan is checked in ``state.plans`` (``checked_plan``); the parts a request names are read
by the reader (``nodes.reader.request_parts``).
"""

from __future__ import annotations

from seekgraph.state.plans import MAX_GAPS, PLACEHOLDER
from seekgraph.state.research import ResearchState, SubQuestion


def ready(plan: list[SubQuestion], finished: set[str]) -> list[SubQuestion]:
    """Sub-questions not finished whose dependencies all are."""
    return [s for s in plan if s["id"] not in finished and set(s["depends_on"]) <= finished]


def filled(question: str, answers: dict[str, str]) -> str:
    """``{q1}`` placeholders replaced by the dependencies' answers."""
    return PLACEHOLDER.sub(lambda m: answers.get(m.group(1), m.group(0)), question)


def gaps_of(state: ResearchState) -> list[SubQuestion]:
    """The sub-questions the report has nothing for.

    Failed, or searched without finding anything to cite; a section left out for length is
    no gap.
    """
    shown = {s["id"] for s in state.get("sections", [])}
    results = state.get("results", {})

    def lacking(sub: SubQuestion) -> bool:
        result = results.get(sub["id"])
        if result is None or sub["id"].startswith("g"):
            return False
        found = result["status"] == "done" and (result["citations"] or sub["id"] in shown)
        return result["status"] == "failed" or (result["status"] == "done" and not found)

    return [sub for sub in state["plan"] if lacking(sub)][:MAX_GAPS]
