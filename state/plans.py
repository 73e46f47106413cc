"""A research plan checked: a DAG of distinct sub-questions within the width and depth caps.

One pure function (``checked_plan``) for a generated plan, a model's draft (its schema checks
it, so a cycle goes back to the model named), a person's own plan and a person's edit at
review (the API's 422 carries its message). The plan's caps live here too: the flow's nodes
and the reader both read them.
"""

from __future__ import annotations

import re
from graphlib import CycleError, TopologicalSorter
from typing import Any

from seekgraph.state.research import SubQuestion

MAX_SUBQUESTIONS = 20
MAX_DEPTH = 5
#: A dependency's answer named in a question: ``{q1}``.
PLACEHOLDER = re.compile(r"\{(\w+)\}")


class PlanError(ValueError):
    """A plan that cannot run; the message says what to fix."""


def checked_plan(raw: Any) -> list[SubQuestion]:
    """The plan as typed sub-questions, or ``PlanError`` naming the problem."""
    if not isinstance(raw, list) or not raw:
        raise PlanError("the plan must be a non-empty list of sub-questions")
    plan: list[SubQuestion] = []
    for n, item in enumerate(raw, start=1):
        if not isinstance(item, dict) or not str(item.get("question", "")).strip():
            raise PlanError(f"sub-question {n} needs a question")
        sub: SubQuestion = {
            "id": str(item.get("id") or f"q{n}"),
            "question": str(item["question"]).strip(),
            "depends_on": [str(d) for d in item.get("depends_on") or []],
            "intent": str(item.get("intent") or ""),
        }
        if str(item.get("title") or "").strip():
            sub["title"] = str(item["title"]).strip()
        if item.get("sources"):
            sub["sources"] = [str(s) for s in item["sources"]]
        if item.get("budget_share") is not None:
            sub["budget_share"] = float(item["budget_share"])
        if item.get("topic") is True:
            sub["topic"] = True
        plan.append(sub)
    ids = [s["id"] for s in plan]
    if len(set(ids)) != len(ids):
        raise PlanError(
            f"sub-question ids repeat: {', '.join(sorted({i for i in ids if ids.count(i) > 1}))}"
        )
    if len(plan) > MAX_SUBQUESTIONS:
        raise PlanError(f"the plan has {len(plan)} sub-questions; the most is {MAX_SUBQUESTIONS}")
    known = set(ids)
    for sub in plan:
        unknown = [d for d in sub["depends_on"] if d not in known]
        if unknown:
            raise PlanError(f"{sub['id']} depends on unknown {', '.join(unknown)}")
        named = set(PLACEHOLDER.findall(sub["question"]))
        if not named <= set(sub["depends_on"]):
            extra = ", ".join(sorted(named - set(sub["depends_on"])))
            raise PlanError(f"{sub['id']} names {{{extra}}} without depending on it")
    try:
        order = list(TopologicalSorter({s["id"]: s["depends_on"] for s in plan}).static_order())
    except CycleError as exc:
        cycle = " → ".join(exc.args[1])
        raise PlanError(f"the plan has a cycle: {cycle}") from None
    depth: dict[str, int] = {}
    by_id = {s["id"]: s for s in plan}
    for sid in order:
        depth[sid] = 1 + max((depth[d] for d in by_id[sid]["depends_on"]), default=0)
    if max(depth.values()) > MAX_DEPTH:
        raise PlanError(f"the plan is {max(depth.values())} steps deep; the most is {MAX_DEPTH}")
    return plan


#: Most sub-questions the gap round adds.
MAX_GAPS = 3
