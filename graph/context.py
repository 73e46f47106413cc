"""The per-run ``Context`` of the graphs, and what of it travels with a run.

``Context`` is defined beside the nodes that read it (imports point downward). The fields
marked ``request`` (at the top, or in a group: ``research.report_words``) are the knobs a
caller may set per run: the API's run request is derived from them, and they (with the user)
are what a run carries to another instance that continues it. A new knob is added to
``Context`` once.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from seekgraph.nodes.plumbing.context import (
    FLAT_NAMES,
    GROUPS,
    BudgetKnobs,
    Context,
    FilteringKnobs,
    OfflineReaderKnobs,
    PromptKnobs,
    ResearchKnobs,
    SearchKnobs,
    WebKnobs,
    regrouped,
)
from seekgraph.providers.pace import fitted_seconds


def _request_names(kind: type[Any]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind) if f.metadata.get("request"))


REQUEST_GROUPS = {name: names for name, kind in GROUPS.items() if (names := _request_names(kind))}
"""Groups holding knobs a run request may set → those knobs (``research``: its report's)."""
REQUEST_KNOBS = (*_request_names(Context), *REQUEST_GROUPS)
"""Top-level keys of a run request's knobs: run-level fields and the groups above."""
RUN_SETTINGS = ("user", *REQUEST_KNOBS)
"""What a continued run reuses (the rest keep their defaults)."""


def context_to_dict(context: Context) -> dict[str, Any]:
    """The per-run settings worth keeping to continue the run elsewhere (JSON-ready).

    Grouped like ``Context``: ``{"user": …, "mode": …, "research": {"report_words": …}}``.
    """
    out: dict[str, Any] = {}
    for key in RUN_SETTINGS:
        value = getattr(context, key)
        if key in REQUEST_GROUPS:
            out[key] = {k: getattr(value, k) for k in REQUEST_GROUPS[key]}
        else:
            out[key] = list(value) if isinstance(value, tuple) else value
    return out


def context_from_dict(data: dict[str, Any]) -> Context:
    """Rebuild a run's ``Context`` from ``context_to_dict`` (or a run request's knobs).

    The flat names of before the grouping (a run recorded by an older instance) are read too.
    """
    data = regrouped(data)
    kwargs = {k: data[k] for k in RUN_SETTINGS if k in data and data[k] is not None}
    for group in REQUEST_GROUPS:
        if group in kwargs:
            kwargs[group] = {
                k: v
                for k, v in kwargs[group].items()
                if k in REQUEST_GROUPS[group] and v is not None
            }
    if "sources" in kwargs:
        kwargs["sources"] = tuple(kwargs["sources"])
    return Context(**kwargs)


def wall_seconds(flow: str, context: Context, default_model: str | None) -> float:
    """A run's wall-clock budget as its graph counts it (a report has ten runs' worth).

    ``max_seconds``, raised to the chat model's measured pace when the run may use one.
    """
    model = None if context.mode == "extractive" else context.model or default_model
    fit = fitted_seconds(
        context.budget.max_seconds, model, context.max_rounds, context.budget.fit_seconds_to_model
    )
    return fit * (10 if flow == "research" else 1)


__all__ = [
    "FLAT_NAMES",
    "GROUPS",
    "REQUEST_GROUPS",
    "REQUEST_KNOBS",
    "RUN_SETTINGS",
    "BudgetKnobs",
    "Context",
    "FilteringKnobs",
    "OfflineReaderKnobs",
    "PromptKnobs",
    "ResearchKnobs",
    "SearchKnobs",
    "WebKnobs",
    "context_from_dict",
    "context_to_dict",
    "regrouped",
    "wall_seconds",
]
