"""The per-run ``Context`` of the graphs, and what of it travels with a run.

``Context`` is defined beside the nodes that read it (imports point downward). The fields
marked ``request`` are the knobs a caller may set per run: the API's run request is derived
from them, and they (with the user) are what a run carries to another instance that
continues it. A new knob is added to ``Context`` once.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from seekgraph.nodes.plumbing.context import Context
from seekgraph.providers.pace import fitted_seconds

REQUEST_KNOBS = tuple(f.name for f in fields(Context) if f.metadata.get("request"))
"""Context fields a run request may set."""
RUN_SETTINGS = ("user", *REQUEST_KNOBS)
"""What a continued run reuses (the rest keep their defaults)."""


def context_to_dict(context: Context) -> dict[str, Any]:
    """The per-run settings worth keeping to continue the run elsewhere (JSON-ready)."""
    return {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in ((k, getattr(context, k)) for k in RUN_SETTINGS)
    }


def context_from_dict(data: dict[str, Any]) -> Context:
    """Rebuild a run's ``Context`` from ``context_to_dict`` (or a run request's knobs)."""
    kwargs = {k: data[k] for k in RUN_SETTINGS if k in data and data[k] is not None}
    if "sources" in kwargs:
        kwargs["sources"] = tuple(kwargs["sources"])
    return Context(**kwargs)


def wall_seconds(flow: str, context: Context, default_model: str | None) -> float:
    """A run's wall-clock budget as its graph counts it (a report has ten runs' worth).

    ``max_seconds``, raised to the chat model's measured pace when the run may use one.
    """
    model = None if context.mode == "extractive" else context.model or default_model
    fit = fitted_seconds(
        context.max_seconds, model, context.max_rounds, context.fit_seconds_to_model
    )
    return fit * (10 if flow == "research" else 1)


__all__ = [
    "REQUEST_KNOBS",
    "RUN_SETTINGS",
    "Context",
    "context_from_dict",
    "context_to_dict",
    "wall_seconds",
]
