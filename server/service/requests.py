"""What a run is asked with, whatever the door: the question, its images and its knobs."""

from __future__ import annotations

import re
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin, get_type_hints

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    create_model,
    field_validator,
    model_validator,
)

from seekgraph.graph.context import GROUPS, REQUEST_GROUPS, Context, regrouped

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def unicode_text(value: str, what: str) -> str:
    """``value`` when it is valid Unicode text; a lone surrogate (U+D800) is not.

    JSON may escape one, but no store, model or log can encode it: refused up front.
    """
    control = _CONTROL.search(value)
    if control is not None:
        raise ValueError(
            f"{what} holds a control character (U+{ord(control.group()):04X}) at position "
            f"{control.start() + 1}; send plain text"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{what} holds an invalid character at position {exc.start + 1} "
            f"({value[exc.start]!r} is half of a surrogate pair); send valid UTF-8 text"
        ) from None
    return value


class _RunRequestBase(BaseModel):
    """Start a run on a thread."""

    question: str = Field(description="The question to answer.")
    images: list[str] = Field(
        default_factory=list, description="Base64 images (or data: URLs); PNG, JPEG, WebP, GIF."
    )
    flow: str = Field(
        default="search",
        max_length=64,
        description="Which flow answers: search (default), quick, reviewed or research "
        "(GET /flows). A thread keeps the flow of its first run.",
    )
    plan: list[dict[str, Any]] | None = Field(
        default=None,
        max_length=64,
        description="research only: your own plan, a list of sub-questions (`id`, `question`, "
        "`depends_on`, `intent`, `sources`, `title`); checked like a generated one.",
    )

    stream: bool = Field(
        default=True,
        description="false: run in the background; the answer is 202 with the run's id "
        "(GET …/runs/{run_id}, POST …/runs/{run_id}/join, …/cancel; GET …/stream follows it).",
    )
    webhook: str | None = Field(
        default=None,
        max_length=2000,
        description="An http(s) URL that gets the run's record and answer as a signed POST "
        "when it ends (retried with backoff; private addresses are refused).",
    )
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] = Field(
        default="reject",
        description="When a run is already live on the thread: reject (409), enqueue (run "
        "after it), interrupt (stop it, keep its steps, then run) or rollback (stop it, undo "
        "its steps, then run).",
    )

    @model_validator(mode="before")
    @classmethod
    def _grouped(cls, data: Any) -> Any:
        """The knobs' flat names of before the grouping (``report_words``) are still read."""
        return regrouped(data) if isinstance(data, dict) else data

    @field_validator("question")
    @classmethod
    def _question_text(cls, value: str) -> str:
        return unicode_text(value, "the question")

    @field_validator("sources", "images", check_fields=False)
    @classmethod
    def _list_text(cls, values: list[str]) -> list[str]:
        for value in values:
            unicode_text(value, "an entry")
        return values

    @field_validator("model", check_fields=False)
    @classmethod
    def _model_text(cls, value: str | None) -> str | None:
        return None if value is None else unicode_text(value, "the model name")


def _knobs(kind: type[Any] = Context) -> dict[str, Any]:
    """The run request's knobs, one per ``Context`` field marked ``request``.

    A group holding such fields (``research``) is a nested object of its own, whose unknown
    keys are refused (a misspelt knob would otherwise be dropped without a word).
    """
    hints = get_type_hints(kind)
    out: dict[str, Any] = {}
    for f in fields(kind):
        if f.name in REQUEST_GROUPS and kind is Context:
            group = GROUPS[f.name]
            model = create_model(
                f"{group.__name__}Request",
                __config__=ConfigDict(extra="forbid"),
                __doc__=group.__doc__,
                **_knobs(group),
            )
            out[f.name] = (
                model,
                Field(default_factory=model, description=f.metadata["description"]),
            )
            continue
        if not f.metadata.get("request"):
            continue
        annotation, default = hints[f.name], f.default
        bounds = {k: f.metadata[k] for k in ("ge", "le", "max_length") if k in f.metadata}
        if get_origin(annotation) is tuple:
            out[f.name] = (
                list[get_args(annotation)[0]],  # type: ignore[misc]
                Field(default_factory=list, description=f.metadata["description"], **bounds),
            )
        else:
            out[f.name] = (
                annotation,
                Field(default=default, description=f.metadata["description"], **bounds),
            )
    return out


if TYPE_CHECKING:  # the knobs are Context's fields, added at run time

    class RunRequest(_RunRequestBase):
        """Start a run on a thread (the type checker's view)."""

        def __init__(self, **data: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...

else:  # derived from Context: a new knob is added there once
    RunRequest = create_model(
        "RunRequest", __base__=_RunRequestBase, __doc__=_RunRequestBase.__doc__, **_knobs()
    )
