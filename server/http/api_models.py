"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from seekgraph.graph.api import MAX_SOURCES
from seekgraph.server.service.requests import RunRequest

__all__ = ["RunRequest"]  # the run's request is the service's; the native API's body too


class ThreadOut(BaseModel):
    """A thread owned by the caller."""

    thread_id: str
    owner: str
    title: str | None = None
    created_at: str | None = Field(default=None, description="When it began (ISO 8601, UTC).")


class SourceOut(BaseModel):
    """A source the caller may search."""

    name: str
    kind: str
    authority: int


class FlowOut(BaseModel):
    """A flow a run may choose."""

    name: str
    description: str


class MeOut(BaseModel):
    """Who the API key belongs to, and what they may search."""

    user: str
    display_name: str
    sources: list[SourceOut]


class RunOut(BaseModel):
    """A run: who started it, how it went, when."""

    run_id: str
    thread_id: str
    owner: str
    flow: str
    status: str = Field(
        description="pending (queued), running, success, error, interrupted (stopped at a "
        "saved step; can be continued), cancelled, or waiting (for a person's review)."
    )
    created_at: float
    updated_at: float
    multitask_strategy: str
    background: bool
    queued: bool
    executor: str = Field(description="Which instance or worker runs it (empty while queued).")
    error: str
    cancel: str = Field(description="The cancel asked for it: interrupt, rollback or empty.")


class JoinOut(BaseModel):
    """A finished run and the thread's state after it."""

    run: RunOut
    values: dict[str, Any]


class ContinueRequest(BaseModel):
    """Continue a run that stopped half-way."""

    stream: bool = Field(default=True, description="false: continue it in the background (202).")


class ResumeRequest(BaseModel):
    """What a waiting run asked a person for."""

    resume: dict[str, Any] = Field(
        description='A plan\'s review: {"approve": true}, {"plan": [...]} (your edit, checked) '
        'or {"replan": "comment"}; the evidence\'s review: {"drop": ["source ids"]}.'
    )


class Problem(BaseModel):
    """An error: what went wrong and what to fix."""

    detail: str
    run_id: str | None = None


class StateOut(BaseModel):
    """A thread's latest checkpoint."""

    thread_id: str
    values: dict[str, Any]
    next: list[str]
    pending_tasks: int
    checkpoint_id: str | None


class HistoryItem(BaseModel):
    """The state after one step of a run."""

    checkpoint_id: str | None
    parent_checkpoint_id: str | None
    checkpoint_ns: str = Field(
        default="",
        description="'' for the flow's own steps; 'search:<task>' for a question's search",
    )
    step: int | None
    wrote: list[str]
    next: list[str]
    created_at: str | None
    summary: dict[str, Any]


class ChatPart(BaseModel):
    """One part of a chat message's content (text or an image)."""

    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None
    image_url: dict[str, Any] | str | None = None


class ChatMessage(BaseModel):
    """One message of an OpenAI chat request."""

    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[ChatPart] | None = None


class ChatRequest(BaseModel):
    """An OpenAI chat-completions request; seekgraph's own fields are optional extras."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(description="A flow, as listed by GET /v1/models.")
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    thread_id: str | None = Field(
        default=None,
        max_length=200,
        description="Continue this thread (or send the X-Seekgraph-Thread-Id header); without "
        "one a new thread is started and its id returned.",
    )
    sources: list[str] = Field(
        default_factory=list,
        max_length=MAX_SOURCES,
        description="Sources to search; all if empty.",
    )
    mode: Literal["auto", "llm", "extractive"] = "auto"
