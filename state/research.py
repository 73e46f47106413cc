"""What the research flow keeps: a plan, each sub-question's result, the ledger, the report.

The plan is a DAG of sub-questions; the ledger holds every passage retrieved for the user in
this run, which the report may cite and nothing else.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from typing_extensions import TypedDict

from seekgraph.state.models import Citation, Conflict, Evidence, ModelCall
from seekgraph.state.reducers import add_model_calls


class SubQuestion(TypedDict):
    """One step of a plan."""

    id: str
    question: str
    """May name earlier answers as ``{q1}``; filled in when its dependencies are done."""
    depends_on: list[str]
    intent: str
    """What it must and must not cover (so a dependent step does not drift)."""
    title: NotRequired[str]
    """Its section's heading in the report (the question when unset)."""
    gap_for: NotRequired[str]
    """The sub-question this one asks again in other words (the gap round)."""
    topic: NotRequired[bool]
    """Found as a topic of the sources, not asked by the request: when it finds nothing the
    report does not list it as missing."""
    sources: NotRequired[list[str]]
    budget_share: NotRequired[float]


class SubResult(TypedDict):
    """What researching one sub-question gave."""

    id: str
    question: str
    """As asked (placeholders filled)."""
    status: str
    """``done``, ``failed`` or ``skipped``."""
    answer: str
    citations: list[Citation]
    evidence: list[str]
    """Source ids of the passages its search kept, most relevant first (its evidence slice)."""
    conflicts: list[Conflict]
    """Where its sources disagree, or one replaces another."""
    reason: str
    """Why it failed or was skipped; what it could not find."""
    tokens: NotRequired[int]
    """LLM tokens its search spent."""


class Section(TypedDict):
    """One section of the report, written from its own evidence."""

    id: str
    title: str
    sentences: list[dict[str, Any]]
    """``{"text", "source_id"}``: every sentence a quote of the evidence it cites, or (written
    by a model) a sentence resting on a passage of ``allowed``."""
    written: NotRequired[str]
    """``llm`` when a model wrote it; quoted otherwise."""
    allowed: NotRequired[list[str]]
    """The passage ids a model-written section was given (and may cite)."""


def not_answered(sub: SubQuestion, status: str, reason: str) -> SubResult:
    """The result of a sub-question that failed or was skipped, with why."""
    return {
        "id": sub["id"],
        "question": sub["question"],
        "status": status,
        "answer": "",
        "citations": [],
        "evidence": [],
        "conflicts": [],
        "reason": reason,
    }


def merge_by_id(current: dict[str, Any] | None, update: dict[str, Any] | None) -> dict[str, Any]:
    """A dict reducer: later values win, key by key (parallel branches write disjoint keys)."""
    return {**(current or {}), **(update or {})}


class ResearchInput(TypedDict):
    """A research request; optionally the person's own plan and the caller's trace id."""

    question: str
    plan: NotRequired[list[SubQuestion]]
    trace_id: NotRequired[str]
    """Carried through every sub-run, event and model call (one is made when unset)."""


class ReportState(TypedDict):
    """What a person gets back: the report, its references, what it could not find."""

    answer: str
    """The report (Markdown) with numbered citations ``[1]``."""
    references: list[dict[str, Any]]
    """``{"n", "id", "title", "source", "doc_id", "kind", "snippet", "url", "updated_at",
    "fetched_at"}``: each ``[n]`` mapped to its ``[src:id]`` and the passage it names
    (``fetched_at``: when a web page was read)."""
    unanswered: list[str]
    mode: str


class ResearchState(ResearchInput, ReportState):
    """Everything the research flow keeps between nodes."""

    plan_status: str
    """``planned``, ``approved`` (after review) or ``written`` (the person's own)."""
    results: Annotated[dict[str, SubResult], merge_by_id]
    ledger: Annotated[dict[str, Evidence], merge_by_id]
    """Every passage retrieved for this user in this run, by source id."""
    topics: dict[str, dict[str, Any]]
    """A generated plan's topics: per sub-question id, its ``question`` as planned and the
    ``ids`` of the passages the topic was found in (part of its evidence while the question
    is unchanged)."""
    sections: list[Section]
    superseded: list[str]
    """Source ids of out-of-date passages the sections' evidence held: never quoted in a
    section, listed in the report's "out of date" part."""
    budget: dict[str, Any]
    model: str | None
    model_calls: Annotated[list[ModelCall], add_model_calls]
    gap_round: int
    """1 once the round for what the report could not find has been planned."""
    gaps_pending: bool
    """``check_report`` found sub-questions without an answer, the gap round not yet run
    and budget left."""


class SubRun(TypedDict):
    """The payload of one ``research_one`` branch."""

    sub: SubQuestion
    depends: list[dict[str, str]]
    """The context slice: each dependency's ``id``, ``question``, cited ``answer`` and
    ``lead`` (the title and first sentence of its most relevant passage)."""
    trace_id: str
    asked: NotRequired[str]
    """The person's own words (the request; the sub-question too when they wrote the plan):
    what the sub-question's web queries may be made of."""
    model: NotRequired[str | None]
    """The chat model the report is written with (its pace sets the search's time)."""
