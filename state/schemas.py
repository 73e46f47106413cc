"""What flows: a question's input and output, the per-question search state, the thread's.

A question is searched in a state of its own (``SearchState``) that starts empty each time;
the thread's memory (earlier turns and their images) lives one level up, in ``ThreadState``,
and reaches the search as read-only input (``SearchInput.turns``).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired

from typing_extensions import TypedDict

from seekgraph.state.budget import Budget
from seekgraph.state.models import (
    Citation,
    Conflict,
    Evidence,
    Hit,
    ImageRef,
    ModelCall,
    SourceFailure,
    Turn,
)
from seekgraph.state.reducers import (
    add_failures,
    add_hits,
    add_model_calls,
    merge_evidence,
    union_strings,
)


class InputState(TypedDict):
    """What a caller sends: the question and, optionally, references to stored images."""

    question: str
    images: NotRequired[list[ImageRef]]


class SearchInput(InputState):
    """What a search starts from: the question, and the thread's earlier turns (read only)."""

    turns: NotRequired[list[Turn]]
    asked: NotRequired[str]
    """The person's own words when ``question`` is not (a research sub-question written by
    the planner): queries that leave for the web are made of these only. Default: the
    question."""


class AnswerState(TypedDict):
    """What a person gets back."""

    answer: str
    status: str
    """How far the answer goes: ``answered`` (it states what was asked, cited),
    ``passages`` (offline, not sure: the closest passages quoted whole), ``partial`` (LLM:
    part of it, the rest said missing) or ``not_found`` (nothing relevant retrieved, or the
    model said the sources do not answer)."""
    mode: str
    """``llm`` or ``extractive``: which strategy wrote the answer."""
    citations: list[Citation]
    conflicts: list[Conflict]
    unanswered: list[str]
    """What the sources did not cover, failed sources, and why the search stopped."""
    notes: list[str]
    """Version notes, e.g. a deprecated guide replaced by its newer version."""


class OutputState(AnswerState):
    """What a search gives back: the answer, and the evidence a parent flow builds on."""

    evidence: Annotated[list[Evidence], merge_evidence]
    """Every passage found, with each stage's score and who kept it (``kept_by``)."""


class Verdict(TypedDict):
    """What ``evaluate`` decided and why."""

    action: str
    """``answer``, ``read`` or ``search``."""
    reason: str
    coverage: float
    missing: list[str]
    read_doc_ids: list[str]
    gap_questions: list[str]


class AnswerCheck(TypedDict):
    """What ``check_answer`` found."""

    ok: bool
    unknown_citations: list[str]
    reason: str


class SearchState(SearchInput, OutputState):
    """Everything the search loop keeps between nodes (checkpointed after each one)."""

    model: str | None
    sources: list[str]
    """Names of the sources this run searches (chosen by ``prepare``)."""
    budget: Budget
    variants: list[str]
    """The query variants of the current round, gap questions first, original last."""
    tried_queries: Annotated[list[str], union_strings]
    hits: Annotated[list[Hit], add_hits]
    """Raw hits of the current round, from every parallel branch; cleared by the filter."""
    source_failures: Annotated[list[SourceFailure], add_failures]
    filter_log: list[dict[str, Any]]
    """Per round: hits in, and hits kept by each stage."""
    verdict: Verdict
    documents_read: Annotated[list[str], union_strings]
    bridge_terms: list[str]
    """Entities seen in documents read, used to bridge to the next search (multi-hop)."""
    answer_check: AnswerCheck
    forced_reason: str | None
    """Set when the budget ran out and the answer was written from what was found."""
    model_calls: Annotated[list[ModelCall], add_model_calls]
    """Every chat-model call of the current question: node, model that served, outcome."""
    outbound: list[str]
    """Sources whose queries leave the deployment (the web): searched with ``web_queries``."""
    web_queries: list[str]
    """This round's queries for outbound sources: the person's words (and names found on
    web pages), never text of private evidence."""
    web_spent: dict[str, float]
    """Web pages read so far this question: ``pages``, ``bytes``, ``seconds``."""


class ThreadState(InputState, AnswerState):
    """A thread: its latest question and answer, and its memory of earlier turns."""

    evidence: list[Evidence]
    """The latest question's evidence (replaced by each question)."""
    turns: Annotated[list[Turn], operator.add]
    """Every finished question and answer of the thread, oldest first."""


class SearchBranch(TypedDict):
    """The private payload of one ``search_source`` branch (one query on one source)."""

    query: str
    source: str
    round: int
    public: NotRequired[str]
    """An outbound branch: the text its query may be made of (checked before it leaves)."""
