"""Admission: may this run start? One check for the HTTP route, the CLI and ``prepare``.

Every door asks the same question before anything is locked or stored, and the graph asks
it again when the run starts (Studio and the SDK reach the graph directly), so a rule is
written once and a door cannot accept what the graph then refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from seekgraph.sources.errors import UnknownSourceError

if TYPE_CHECKING:  # importing this module stays cheap: the CLI checks input before loading
    from seekgraph.nodes.plumbing.context import Context
    from seekgraph.nodes.plumbing.services import Services


class AdmissionError(ValueError):
    """A run that may not start; the message says what to fix."""


@dataclass(frozen=True)
class Admission:
    """What an admitted run will use."""

    question: str
    mode: str
    """``llm`` or ``extractive``."""
    model: str | None
    """The chat model that answers (``None`` in extractive mode)."""
    sources: list[str]
    notes: list[str] = field(default_factory=list)
    """What the person should know (images that nothing can read)."""


def known_models(services: Services) -> list[str]:
    """Every chat model a run may ask for by name."""
    names = [services.model_name, *services.chat_models, services.vision_model_name]
    return sorted({n for n in names if n})


def check_question(question: str, limit: int) -> str:
    """The question, stripped, or ``AdmissionError``.

    The part of ``admit`` that needs no sources or models, so a door can answer at once.
    """
    question = question.strip()
    if not question:
        raise AdmissionError("the question is empty; ask something")
    if len(question) > limit:
        raise AdmissionError(f"the question has {len(question)} characters; the limit is {limit}")
    return question


def admit(services: Services, ctx: Context, question: str, has_images: bool) -> Admission:
    """Admit a run of ``ctx.user`` on ``question`` or raise ``AdmissionError``.

    Unknown users raise ``UnknownUserError`` (fail closed, the message names no one else).
    """
    question = check_question(question, services.max_question_chars)
    if not ctx.user:
        raise AdmissionError(
            "no user is set for this run; pass it in the run's context, e.g. "
            '{"user": "bob"} (LangGraph Studio: the assistant\'s Context tab; the SDK: '
            "context={...}). Permissions follow that user."
        )
    services.registry.known_user(ctx.user)  # unknown users stop here (no I/O: any loop)
    try:
        sources = [s.name for s in services.registry.select(ctx.sources)]
    except UnknownSourceError as exc:
        raise AdmissionError(str(exc.args[0])) from None
    models = known_models(services)
    if ctx.model and ctx.model not in models:
        raise AdmissionError(
            f"model {ctx.model!r} is not configured; configured: {', '.join(models) or 'none'}"
        )
    if ctx.mode == "llm" and not models:
        raise AdmissionError("mode 'llm' needs a configured chat model; use 'auto'")
    vision = services.vision_model_name
    if has_images and ctx.model and ctx.model != vision:
        raise AdmissionError(
            f"this thread holds images and model {ctx.model!r} cannot read them; "
            + (
                f"ask with the vision model {vision!r} or without a model"
                if vision
                else "configure a vision model (SEEKGRAPH_VISION_LLM_MODEL)"
            )
        )
    if ctx.mode == "extractive":
        mode = "extractive"
    elif ctx.mode == "llm" or ctx.model:
        mode = "llm"
    else:
        mode = "llm" if services.chat_model is not None else "extractive"
    model = ctx.model or services.model_name
    notes = []
    if has_images and mode == "llm" and services.vision_model is not None:
        model = vision
    elif has_images and mode == "llm":
        notes.append("Images were attached but no vision model is configured to read them.")
    elif has_images:
        notes.append("Images were attached but extractive mode cannot read them.")
    return Admission(question, mode, model if mode == "llm" else None, sources, notes)
