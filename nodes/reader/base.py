"""The reader's interface: what the nodes ask of it, and what each judgement gives back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from seekgraph.state.models import Conflict, Evidence, ModelCall
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
