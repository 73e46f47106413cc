"""A research plan's shape: checked, the parts a request names, the gaps a report left.

- ``checked_plan``: a DAG of distinct sub-questions within the width and depth caps, one pure
  function for a generated plan, a person's own plan and a person's edit at review (the
  API's 422 carries its message);
- ``named_parts``/``part_questions``: the parts a request lists ("…: VPN, SSO, and
  expenses"), one sub-question each (``plan_research``), each a section the report must show
  (``check_report``);
- ``gaps_of``: the sub-questions a report has nothing for (``check_report``, ``plan_gaps``).
"""

from __future__ import annotations

import re
from graphlib import CycleError, TopologicalSorter
from typing import Any

from seekgraph.state.research import ResearchState, SubQuestion

MAX_SUBQUESTIONS = 20
MAX_DEPTH = 5
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


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
        named = set(_PLACEHOLDER.findall(sub["question"]))
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


def ready(plan: list[SubQuestion], finished: set[str]) -> list[SubQuestion]:
    """Sub-questions not finished whose dependencies all are."""
    return [s for s in plan if s["id"] not in finished and set(s["depends_on"]) <= finished]


def filled(question: str, answers: dict[str, str]) -> str:
    """``{q1}`` placeholders replaced by the dependencies' answers."""
    return _PLACEHOLDER.sub(lambda m: answers.get(m.group(1), m.group(0)), question)


#: Most sub-questions the gap round adds.
MAX_GAPS = 3


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


#: Where a request starts listing its parts: after a colon, or "about", "including"…
_LIST_START = re.compile(
    r"[:：]\s*|\b(?:about|including|covering|such as|namely|regarding|on|of)\s+", re.I
)


#: What closes a list by saying where all its parts belong: "…, retries and pooling in httpx"
#: (golden case: test_reader.py::test_a_request_naming_three_parts_in_a_library_gets_three).
_SCOPE = re.compile(r"\s+(?:in|for|using)\s+(?P<scope>[^\s,;]+(?:\s+[^\s,;]+){0,2})$", re.I)


#: What separates the parts of a list: commas, semicolons, "and", "or", 和, 及, 与.
_LIST_SEP = re.compile(r"\s*(?:[,;，；、]\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+|和|及|与)\s*", re.I)


#: What separates the items of a list written with commas (Chinese enumeration marks too)
#: (golden case: test_reader.py::test_a_list_of_clauses_names_one_part_per_clause).
_COMMA = re.compile(r"\s*[,;，；、]\s*")


#: The "and" or "or" that opens a list's last item after its comma.
_LEADING_JOIN = re.compile(r"^(?:and|or)\s+", re.I)


#: A list item that qualifies the whole list rather than naming a part.
_QUALIFIER = re.compile(r"^(?:with|where|when|if|as|in|for|from|to|by|including)\b", re.I)


#: Words that open a part's name but are no part of its heading.
_ARTICLE = re.compile(r"^(?:the|a|an|their|his|her|its|our|your|my)\s+", re.I)


#: A named part is short: a few words, not a clause.
MAX_PART_WORDS = 12


def named_parts(request: str) -> list[str]:
    """The parts a request names, or none when it names fewer than two.

    "… IT access: VPN, SSO, and expenses?" names VPN, SSO and expenses.

    The last list in the request counts: what follows its colon or its "about"/"including".
    An item that only qualifies the list ("with dates where …") is not a part.
    """
    starts = list(_LIST_START.finditer(request))
    # "of" opens a list only when nothing stronger does ("a report on Caroline: the events
    # of their life, their work, …" lists after its colon)
    strong = [m for m in starts if m.group(0).strip().lower() != "of"]
    for start in [*reversed(strong), *reversed([m for m in starts if m not in strong])]:
        tail = request[start.end() :].strip().rstrip("?？.!。").strip()
        items = list_items(tail)
        if len(items) >= 2 and all(len(i.split()) <= MAX_PART_WORDS for i in items):
            return list(dict.fromkeys(items))
    return []


def list_items(tail: str) -> list[str]:
    """The items of a list as a person writes one: "a, b, c and d"; "x and y".

    Where the list has commas, an "and" inside an item is part of it ("plugging in a backend
    and guarding views, keeping users logged in, and letting …": three items); only the last
    item's "and"/"or" separates ("interests, plans and the people close to them"). A list
    without commas is split at its "and"s. A closing qualifier ("with dates where …") is none.
    """
    if not _COMMA.search(tail):
        return _kept_items(_LIST_SEP.split(_SCOPE.sub("", tail)))
    items = _kept_items(_COMMA.split(tail))
    if items:
        # "in httpx" closing the list is every part's, not the last one's — also before a
        # closing qualifier ("…, classic histograms and summaries in Prometheus, and when to
        # pick each"; golden case: test_reader.py::test_an_overview_of_three_kinds_gets_three)
        items[-1:] = _kept_items(_LIST_SEP.split(_SCOPE.sub("", items[-1])))
    return items


def _kept_items(parts: list[str]) -> list[str]:
    items = [_LEADING_JOIN.sub("", i.strip(" \"'“”")).strip() for i in parts if i and i.strip()]
    return [i for i in items if i and not _QUALIFIER.match(i)]


def part_title(part: str) -> str:
    """A part's heading, as the request wrote it ("the people close to them" → "People…")."""
    text = _ARTICLE.sub("", part.strip())
    return text[:1].upper() + text[1:]


def part_questions(request: str) -> list[SubQuestion]:
    """One sub-question per part the request names, titled as the request names it."""
    parts = named_parts(request)
    if not parts:
        return []
    start = list(_LIST_START.finditer(request))
    # "…a guide on" keeps its "on"; a colon is no word of the question
    stem = (
        request[: start[-1].end() if start[-1].group(0).strip() not in ":：" else start[-1].start()]
        if start
        else request
    ).strip()
    if start and start[-1].group(0).strip() in ":：" and len(start) > 1:
        # "…know about IT access: VPN, SSO, and expenses": what names the list ("IT access")
        # is not every part's subject; "…know about expenses" is what the person asked
        stem = request[: start[-2].end()].strip()
    tail = request[start[-1].end() :].strip().rstrip("?？.!。") if start else ""
    scope = m.group(0) if (m := _SCOPE.search(tail)) else ""
    return [
        {
            "id": f"q{n}",
            "question": f"{stem} {part}{scope}".strip(),
            "depends_on": [],
            "title": part_title(part),
            "intent": f"What the sources say about {part}, as the request asks; not its "
            "other parts.",
        }
        for n, part in enumerate(parts, start=1)
    ]
