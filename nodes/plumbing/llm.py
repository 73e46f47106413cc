"""How nodes ask a chat model for a decision, and what they log about it.

A 4xx from the endpoint stops the run with a clear error (someone must fix a setting); any
other failure — both models unavailable, or a reply that stays invalid after one repair —
makes the node fall back to its extractive strategy, and the ``model_calls`` log says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from seekgraph.providers import pace
from seekgraph.providers.chat import (
    ChatModel,
    ModelClientError,
    ModelError,
    ainvoke_structured,
    serving_of,
)
from seekgraph.state.models import ModelCall

M = TypeVar("M", bound=BaseModel)


@dataclass
class Decision(Generic[M]):
    """A node's LLM decision, or ``None`` when it must fall back."""

    value: M | None
    tokens: int
    call: ModelCall


async def decide(node: str, model: ChatModel, prompt: str, schema: type[M]) -> Decision[M]:
    """Ask for ``schema``; degrade (value ``None``) on any failure but a client error."""
    started = time.monotonic()
    try:
        value, tokens, served, repaired = await ainvoke_structured(model, prompt, schema)
    except ModelClientError as exc:
        raise ModelClientError(f"{node}: {exc}") from exc
    except ModelError as exc:
        call: ModelCall = {
            "node": node,
            "model": "none",
            "outcome": "degraded",
            "detail": f"{exc}; used the extractive strategy",
            "tokens": exc.tokens,
        }
        return Decision(None, exc.tokens, call)
    pace.record(serving_of(model).get("name") or served, time.monotonic() - started, step=node)
    outcome = "repaired" if repaired else "ok"
    detail = "valid after one repair round" if repaired else ""
    return Decision(
        value,
        tokens,
        {"node": node, "model": served, "outcome": outcome, "detail": detail, "tokens": tokens},
    )
