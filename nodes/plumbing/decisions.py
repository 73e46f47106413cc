"""Every LLM decision as a pydantic model with described fields."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class QueryVariants(BaseModel):
    """Search queries to run this round."""

    queries: list[str] = Field(description="Complete natural-language search queries, gaps first.")


class PassageGrade(BaseModel):
    """How relevant one passage is."""

    id: str = Field(description="The passage id as given.")
    score: float = Field(ge=0, le=1, description="Relevance from 0 (unrelated) to 1 (answers it).")


class Grades(BaseModel):
    """Relevance of every passage in a batch."""

    grades: list[PassageGrade]


class EvaluateDecision(BaseModel):
    """Whether the evidence suffices, and what to do next."""

    action: Literal["answer", "read", "search"] = Field(description="What to do next.")
    reason: str = Field(description="One sentence: why.")
    read_doc_ids: list[str] = Field(default_factory=list, description="Documents to read whole.")
    gap_questions: list[str] = Field(
        default_factory=list, description="Questions for what is still missing."
    )


class AnswerReview(BaseModel):
    """Whether an answer is supported by its sources."""

    supported: bool = Field(description="Every claim is supported by the source it cites.")
    definitive: bool = Field(description="It answers, or says plainly what is missing.")
    problems: list[str] = Field(default_factory=list, description="Unsupported claims, if any.")
