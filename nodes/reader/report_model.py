"""The LLM reader of the research flow: a plan, the gap questions, each section, one edit.

Every step asks for JSON (``nodes.plumbing.llm.decide``: an invalid reply is repaired once, a
second failure degrades to the extractive strategy and ``model_calls`` says so). A plan is
checked as part of its schema, so a cycle is sent back to the model with the cycle named.
Sections and the coherence pass may cite only the passage ids they were given; the report's
check verifies it again. ``ModelReportReader`` asks; the offline reader
(``nodes.reader.report_offline``) stands in for each step the model cannot take.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, Field, model_validator

from seekgraph.nodes.plumbing import prompts
from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import relevance
from seekgraph.nodes.plumbing.llm import Decision, decide
from seekgraph.nodes.plumbing.services import Services, node_name
from seekgraph.nodes.reader.base import Drafted, Gaps, Planned, Verified
from seekgraph.nodes.reader.report_offline import OfflineReportReader, slice_of
from seekgraph.providers.chat import ChatModel
from seekgraph.providers.terms import term_set
from seekgraph.state.models import Evidence, ModelCall
from seekgraph.state.plans import MAX_GAPS, MAX_SUBQUESTIONS, checked_plan
from seekgraph.state.research import ResearchState, Section, SubQuestion, SubResult

#: Passages a section's writer is shown (its slice, most relevant first).
SECTION_PASSAGES = 12
#: Most sentences the model writes per section.
SECTION_SENTENCES = 8


class PlannedStep(BaseModel):
    """One sub-question of a model's plan."""

    id: str
    question: str
    title: str = ""
    intent: str = ""
    depends_on: list[str] = Field(default_factory=list)


class PlanDraft(BaseModel):
    """A model's plan: a DAG of sub-questions (checked like any plan)."""

    sub_questions: list[PlannedStep]

    @model_validator(mode="after")
    def _a_dag(self) -> PlanDraft:
        checked_plan([s.model_dump() for s in self.sub_questions])  # PlanError is a ValueError
        return self


class GapQuestions(BaseModel):
    """A model's sub-questions for what the report lacks."""

    questions: list[str] = Field(default_factory=list)


class Written(BaseModel):
    """One sentence of a section and the passage it rests on."""

    text: str
    source_id: str


class SectionDraft(BaseModel):
    """A section as the model wrote it."""

    sentences: list[Written]


class EditedSection(BaseModel):
    """A section after the coherence pass."""

    id: str
    title: str
    sentences: list[Written]


class ReportDraft(BaseModel):
    """The whole report after the coherence pass."""

    sections: list[EditedSection]


def keep_named_parts(drafted: list[SubQuestion], named: list[SubQuestion]) -> list[SubQuestion]:
    """The model's plan with a sub-question for each part the request names, titled as named.

    Qwen 1.5B planned "…IT access: VPN, SSO, and expenses?" as "SSO Purpose", "Fernhill
    purpose VPN context access employee"…: its keyword queries became the report's headings.
    A drafted sub-question whose title or question holds a part's words is that part's and
    takes the part's title; a part no drafted one holds is added, as the extractive plan has
    it. The model's other sub-questions stay.
    """
    out = [s.copy() for s in drafted]
    taken: set[int] = set()
    ids = {s["id"] for s in drafted}
    for part in named:
        words = term_set(part.get("title", part["question"]))
        match = next(
            (
                i
                for i, s in enumerate(out)
                if i not in taken and words <= term_set(f"{s.get('title', '')} {s['question']}")
            ),
            None,
        )
        if match is not None:
            taken.add(match)
            out[match]["title"] = part.get("title", "")
            continue
        fresh = next(
            f"q{n}" for n in range(len(ids) + 1, 10 * MAX_SUBQUESTIONS) if f"q{n}" not in ids
        )
        ids.add(fresh)
        added = part.copy()
        added["id"] = fresh
        out.append(added)
        taken.add(len(out) - 1)
    while len(out) > MAX_SUBQUESTIONS:  # the model's own, last first, that nothing needs
        needed = {d for s in out for d in s["depends_on"]}
        spare = [i for i, s in enumerate(out) if i not in taken and s["id"] not in needed]
        if not spare:
            break
        del out[spare[-1]]
        taken = {i - (i > spare[-1]) for i in taken}
    return checked_plan(out)


async def llm_plan(
    request: str, topics: list[str], model: ChatModel, named: list[SubQuestion] | None = None
) -> tuple[list[SubQuestion] | None, Decision[PlanDraft]]:
    """The model's plan (with the request's named parts kept), or ``None`` (degrade)."""
    prompt = prompts.RESEARCH_PLAN_PROMPT.format(
        request=request,
        topics="\n".join(f"- {t}" for t in topics) or "(none found)",
        max_subs=MAX_SUBQUESTIONS,
    )
    decision = await decide("plan_research", model, prompt, PlanDraft)
    if decision.value is None:
        return None, decision
    plan = checked_plan([s.model_dump() for s in decision.value.sub_questions])
    return keep_named_parts(plan, named or []), decision


def passages_of(evidence: list[Evidence]) -> str:
    """A section's passages as the model sees them."""
    return "\n".join(
        f'<passage id="{ev["source_id"]}" title="{ev["title"]}">{ev["snippet"]}</passage>'
        for ev in evidence
    )


def slice_for_writer(evidence: list[Evidence]) -> list[Evidence]:
    """The passages a section's writer sees: its slice's most relevant."""
    return sorted(evidence, key=relevance, reverse=True)[:SECTION_PASSAGES]


async def llm_sections(
    request: str, subs: list[dict[str, Any]], model: ChatModel
) -> list[tuple[list[dict[str, str]] | None, ModelCall, int]]:
    """Each section written by the model from its own passages, all at once.

    ``subs``: ``{"id", "title", "question", "intent", "evidence"}``. A section's sentences
    citing an id outside its passages are dropped here; ``None`` means write it
    extractively.
    """

    async def one(sub: dict[str, Any]) -> tuple[list[dict[str, str]] | None, ModelCall, int]:
        shown = slice_for_writer(sub["evidence"])
        prompt = prompts.WRITE_SECTION_PROMPT.format(
            request=request,
            title=sub["title"],
            question=sub["question"],
            intent=sub.get("intent") or "",
            passages=passages_of(shown),
            max_sentences=SECTION_SENTENCES,
        )
        decision = await decide("write_report", model, prompt, SectionDraft)
        if decision.value is None:
            return None, decision.call, decision.tokens
        allowed = {ev["source_id"] for ev in shown}
        kept = [
            {"text": s.text.strip(), "source_id": s.source_id}
            for s in decision.value.sentences
            if s.source_id in allowed and s.text.strip()
        ]
        return kept, decision.call, decision.tokens

    return list(await asyncio.gather(*(one(s) for s in subs)))


async def llm_coherence(
    request: str, sections: list[dict[str, Any]], model: ChatModel
) -> tuple[list[dict[str, Any]] | None, Decision[ReportDraft]]:
    """The report edited as one document, or ``None`` (keep the sections as written).

    A section keeps only sentences whose ids it had before the pass.
    """
    shown = "\n".join(
        f'<section id="{s["id"]}" title="{s["title"]}">\n'
        + "\n".join(
            f'<sentence source_id="{x["source_id"]}">{x["text"]}</sentence>' for x in s["sentences"]
        )
        + "\n</section>"
        for s in sections
    )
    prompt = prompts.COHERENCE_PROMPT.format(request=request, sections=shown)
    decision = await decide("write_report", model, prompt, ReportDraft)
    if decision.value is None:
        return None, decision
    before = {s["id"]: s for s in sections}
    edited = []
    for section in decision.value.sections:
        original = before.get(section.id)
        if original is None:
            continue
        allowed = {x["source_id"] for x in original["sentences"]}
        sentences = [
            {"text": x.text.strip(), "source_id": x.source_id}
            for x in section.sentences
            if x.source_id in allowed and x.text.strip()
        ]
        if sentences:
            edited.append(
                {**original, "title": section.title or original["title"], "sentences": sentences}
            )
    return (edited or None), decision


async def written_sections(
    state: ResearchState,
    answered: list[SubResult],
    titles: dict[str, str],
    model: ChatModel,
    words: int,
    offline: OfflineReportReader,
) -> tuple[list[Section], list[ModelCall], int]:
    """Sections a model writes from their own slices, then edits as one report.

    A section the model could not write is quoted instead (its share of the length).
    """
    ledger = state.get("ledger", {})
    plan = {s["id"]: s for s in state["plan"]}
    subs: list[dict[str, Any]] = [
        {
            "id": r["id"],
            "title": titles[r["id"]],
            "question": r["question"],
            "intent": plan[r["id"]].get("intent", ""),
            "evidence": [ledger[i] for i in slice_of(r, state) if i in ledger],
        }
        for r in answered
    ]
    written = await llm_sections(state["question"], subs, model)
    calls = [call for _, call, _ in written]
    tokens = sum(t for _, _, t in written)
    sections: list[Section] = []
    unwritten = []
    for sub, (sentences, _, _) in zip(subs, written, strict=True):
        if sentences is None:
            unwritten.append(next(r for r in answered if r["id"] == sub["id"]))
        elif sentences:
            allowed = [ev["source_id"] for ev in slice_for_writer(sub["evidence"])]
            sections.append(
                {
                    "id": sub["id"],
                    "title": sub["title"],
                    "sentences": sentences,
                    "written": "llm",
                    "allowed": allowed,
                }
            )
    if len(sections) > 1:
        edited, decision = await llm_coherence(
            state["question"], [dict(s) for s in sections], model
        )
        calls.append(decision.call)
        tokens += decision.tokens
        if edited is not None:
            sections = edited  # type: ignore[assignment]
    if unwritten:
        share = words * len(unwritten) // max(1, len(answered))
        quoted, _, _ = offline.quoted(state, unwritten, titles, share)
        order = [r["id"] for r in answered]
        sections = sorted([*sections, *quoted], key=lambda s: order.index(s["id"]))
    return sections, calls, tokens


class ModelReportReader:
    """The research flow's reader in LLM mode: ``model`` decides; offline when it cannot."""

    def __init__(self, model: ChatModel, services: Services, ctx: Context) -> None:
        self.model = model
        """The run's chat model, its calls carrying the run's trace id."""
        self.services = services
        self.ctx = ctx
        self.offline = OfflineReportReader(services, ctx)

    async def plan(self, request: str) -> Planned:
        """The model's plan, told what the sources' topics are; the offline plan else.

        The offline plan is made first: its topics are the model's, its passages start the
        ledger either way, and the parts the request names stay in the model's plan.
        """
        found = await self.offline.plan(request)
        drafted, decision = await llm_plan(
            request,
            [s.get("title", s["question"]) for s in found.plan],
            self.model,
            named=found.plan[: found.how.get("named_parts", 0)],  # they come first
        )
        found.calls.append(decision.call)
        found.tokens += decision.tokens
        if drafted is not None:
            found.plan, found.how = drafted, {**found.how, "planned_by": "llm"}
        return found

    async def gaps(self, state: ResearchState, gaps: list[SubQuestion]) -> Gaps:
        """The model's gap sub-questions (``GapQuestions``); the offline reader's if none."""
        results = state.get("results", {})
        missing = "\n".join(
            f"- {results[g['id']]['question']}: {results[g['id']]['reason'] or 'nothing'}"
            for g in gaps
        )
        titles = ", ".join(s["title"] for s in state.get("sections", []))
        prompt = prompts.RESEARCH_GAPS_PROMPT.format(
            request=state["question"], sections=titles, missing=missing, max_gaps=MAX_GAPS
        )
        decision = await decide(node_name("plan_gaps"), self.model, prompt, GapQuestions)
        questions: list[str] = []
        if decision.value is not None:
            questions = [q.strip() for q in decision.value.questions if q.strip()][:MAX_GAPS]
        found = (
            Gaps(questions, [None] * len(questions))  # a model's gaps are its own
            if questions
            else await self.offline.gaps(state, gaps)
        )
        found.by_model, found.tokens, found.calls = True, decision.tokens, [decision.call]
        return found

    async def write(
        self,
        state: ResearchState,
        answered: list[SubResult],
        titles: dict[str, str],
        words: int,
    ) -> Drafted:
        """Every section written at once by the model, then one coherence pass.

        A section the model could not write is quoted.
        """
        sections, calls, tokens = await written_sections(
            state, answered, titles, self.model, words, self.offline
        )
        summary = f"{len(sections)} sections written ({len(calls)} model calls)"
        return Drafted(sections, summary, True, tokens, calls)

    def check(self, state: ResearchState) -> Verified:
        """The offline reader's: a program checks citations and quotes exactly."""
        return self.offline.check(state)

    def bridge(self, answer: str, question: str, lead: str = "") -> str:
        """The offline reader's: the names read off the answer."""
        return self.offline.bridge(answer, question, lead)
