"""The reader's interface: what the nodes ask of it, and what each judgement gives back.

``Reader`` is what the search flow's nodes ask; ``ReportReader`` what the research flow's ask.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from seekgraph.state.models import Conflict, Evidence, Hit, ModelCall
from seekgraph.state.research import ResearchState, Section, SubQuestion, SubResult
from seekgraph.state.schemas import SearchState, Verdict

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from seekgraph.nodes.plumbing.context import Context

Status = Literal["answered", "passages", "partial", "not_found"]
#: Every status a reply may have (``nodes.reader``'s docstring says what each means).
STATUSES: tuple[Status, ...] = ("answered", "passages", "partial", "not_found")


@dataclass
class Reply:
    """A written reply: its text, its status, and what code changed in a model's words."""

    body: str
    status: Status
    changes: list[str] = field(default_factory=list)
    """Each change code made to a model's reply, in plain words (empty offline)."""


@dataclass
class Grading:
    """Relevance grades of passages by ``source_id``, or ``None`` when they could not be had."""

    grades: dict[str, float] | None
    error: str = ""
    """Why there are no grades ("timed out", "model unavailable")."""
    tokens: int = 0
    calls: list[ModelCall] = field(default_factory=list)


@dataclass
class Judged:
    """Whether the evidence answers: the verdict, and how it was reached."""

    verdict: Verdict
    strategy: str
    """``coverage`` (the offline reader), ``llm``, or ``coverage (model unavailable)``."""
    tokens: int = 0
    calls: list[ModelCall] = field(default_factory=list)


@dataclass
class Written:
    """The answer as written, and what goes beside it."""

    reply: Reply
    mode: Literal["llm", "extractive"]
    """Who wrote the reply: the model, or the offline reader (also when the model's failed)."""
    conflicts: list[Conflict]
    unanswered: list[str]
    """What the answer cannot cover, in plain words (the node's list, as the reader left it)."""
    tokens: int = 0
    calls: list[ModelCall] = field(default_factory=list)


@dataclass
class Review:
    """What a reader found wrong with an answer's support, if it reviewed it."""

    problem: str | None = None
    """Why the answer does not stand (``None``: nothing found, or not reviewed)."""
    note: str = ""
    """Said after the check's reason (a review that could not be made)."""
    tokens: int = 0
    calls: list[ModelCall] = field(default_factory=list)


@dataclass
class Rephrased:
    """A round's query variants as the reader wrote them, before near-duplicates are dropped."""

    queries: list[str]
    """Gap questions first, the question itself last."""
    strategy: str
    """``llm``, ``feedback`` (the offline reader) or ``feedback (model unavailable)``."""
    tokens: int = 0
    calls: list[ModelCall] = field(default_factory=list)


class Reader(Protocol):
    """Every judgement about text the graph makes. Nodes call it; they hold no language rules.

    Implemented by ``nodes.reader.model.ModelReader`` (a chat model decides, with structured
    output) and ``nodes.reader.offline.OfflineReader`` (the extractive mode);
    ``nodes.reader.reader_for`` picks one for a run.
    """

    async def rephrase(self, state: SearchState) -> Rephrased:
        """The query variants of the round: what to search for next."""
        ...

    async def grade(
        self, question: str, passages: list[Evidence], timeout: float
    ) -> Grading | None:
        """How relevant each passage is to ``question`` (``None``: this reader does not grade)."""
        ...

    async def judge(self, state: SearchState) -> Judged:
        """Whether the kept evidence answers the question: answer, read documents, or search."""
        ...

    async def answer(
        self,
        state: SearchState,
        runtime: Runtime[Context],
        pool: list[Evidence],
        notes: list[str],
        forced: str | None,
        unanswered: list[str],
    ) -> Written:
        """The answer from ``pool`` (current versions, best authority first), every claim cited.

        ``notes`` are the version notes to pass on, ``forced`` why searching stopped early,
        ``unanswered`` what the flow already knows the answer cannot cover.
        """
        ...

    async def check(self, question: str, answer: str, sources: list[Evidence]) -> Review:
        """Whether ``answer`` is supported by the ``sources`` it cites, and answers."""
        ...


@dataclass
class Planned:
    """A research plan as the reader made it, and what it found on the way."""

    plan: list[SubQuestion]
    """Checked (``state.plans.checked_plan``)."""
    how: dict[str, Any]
    """How it was found: passages, topics, merged, named parts (``planned_by: llm``)."""
    pool: list[Hit]
    """The passages the broad search gathered: the run's ledger starts with them."""
    topics: dict[str, dict[str, Any]]
    """Per sub-question, its topic's question and passage ids."""
    tokens: int = 0
    calls: list[ModelCall] = field(default_factory=list)


@dataclass
class Gaps:
    """The gap round's questions: what the report could not find, asked in other words."""

    questions: list[str]
    origins: list[str | None]
    """The sub-question each asks again (``None``: a model's own question)."""
    by_model: bool = False
    """A model was asked: its calls and tokens are the run's (even when it failed)."""
    tokens: int = 0
    calls: list[ModelCall] = field(default_factory=list)


@dataclass
class Drafted:
    """A report's sections as the reader wrote them, and how."""

    sections: list[Section]
    summary: str
    """How they were written, in plain words (the node's event says it)."""
    by_model: bool = False
    """A model was asked: its calls and tokens are the run's (even when it failed)."""
    tokens: int = 0
    calls: list[ModelCall] = field(default_factory=list)


@dataclass
class Verified:
    """A report's sections held to the run's ledger, with references numbered."""

    written: dict[str, tuple[str, list[str]]]
    """Per section id that kept a sentence, its title and its paragraphs (``[n]`` marks)."""
    numbers: dict[str, int]
    """Each cited passage's reference number, in the order first cited."""
    dropped: int
    """Sentences dropped: not a quote of what they cite, or citing outside their slice."""
    disagreements: list[str]
    """Where the sources disagree, and cited passages a newer document replaces."""
    parts: set[str]
    """The titles of the parts the request names (each a section, found or not)."""


class ReportReader(Protocol):
    """Every judgement about text the research flow makes: plan, gaps, sections, check.

    Implemented by ``nodes.reader.report_model.ModelReportReader`` (a chat model plans,
    asks the gap questions and writes, with structured output; the offline reader stands in
    when it cannot) and ``nodes.reader.report_offline.OfflineReportReader`` (the extractive
    mode); ``nodes.reader.report_reader_for`` picks one for a run, as ``reader_for`` does.
    """

    async def plan(self, request: str) -> Planned:
        """Sub-questions for ``request``: the parts it names, then what the sources hold."""
        ...

    async def gaps(self, state: ResearchState, gaps: list[SubQuestion]) -> Gaps:
        """Questions that ask again, in other words, for what the report has nothing for."""
        ...

    async def write(
        self,
        state: ResearchState,
        answered: list[SubResult],
        titles: dict[str, str],
        words: int,
    ) -> Drafted:
        """One section per answered sub-question, from its own evidence, within ``words``."""
        ...

    def check(self, state: ResearchState) -> Verified:
        """The sections' sentences held to the ledger; the sources' disagreements, numbered."""
        ...

    def bridge(self, answer: str, question: str, lead: str = "") -> str:
        """What an answer gives a later sub-question's ``{q1}``: the names it adds."""
        ...
