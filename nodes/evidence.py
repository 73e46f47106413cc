"""Helpers shared by several nodes: who is asking, which model, evidence views, citations."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import Any

from nodes.context import Context
from nodes.services import Services
from providers.chat import ChatModel
from sources.base import User
from state.models import AUTHORITY_LABELS, Evidence
from state.schemas import SearchState

CITATION = re.compile(r"\[src:([^\]\s]+)\]")


def now() -> float:
    """Wall-clock time in epoch seconds (the budget's clock)."""
    return time.time()


def user_of(services: Services, context: Context) -> User:
    """The user of the run; unknown users are refused (fail closed)."""
    return services.registry.user(context.user)


def chat_model_for(services: Services, state: SearchState) -> ChatModel | None:
    """The chat model chosen by ``prepare``; ``None`` in extractive mode or once tokens run out.

    With the token budget spent, nodes fall back to their extractive strategies, so the run
    still answers without spending more.
    """
    if state.get("mode") != "llm":
        return None
    budget = state.get("budget")
    if budget and budget["tokens_used"] >= budget["max_tokens"]:
        return None
    name = state.get("model")
    if name and name == services.vision_model_name and services.vision_model is not None:
        return services.vision_model
    if name and name in services.chat_models:
        return services.chat_models[name]
    return services.chat_model


def kept(evidence: Iterable[Evidence]) -> list[Evidence]:
    """Evidence that some stage decided to keep."""
    return [ev for ev in evidence if ev["kept_by"] != "none"]


def lifted(own: float, around: float, weight: float) -> float:
    """A score moved ``weight`` of the way up to its surroundings' score, never down."""
    return own + weight * max(0.0, around - own)


def relevance(ev: Evidence) -> float:
    """The most informed score of a piece of evidence: grade, then rerank/read, then retrieval."""
    scores = ev["scores"]
    for stage in ("grade", "read", "rerank"):
        if stage in scores:
            return scores[stage]
    return scores.get("retrieval", ev["score"])


def by_authority(evidence: Iterable[Evidence]) -> list[Evidence]:
    """Evidence ordered by authority tier, then relevance, then recency."""

    def key(ev: Evidence) -> tuple[float, ...]:
        s = ev["scores"]
        # the most informed score first; the less informed ones break its ties
        return (
            -ev["authority"],
            -relevance(ev),
            -s.get("rerank", s.get("read", 0.0)),
            -s.get("retrieval", ev["score"]),
            -_ts(ev["updated_at"]),
        )

    return sorted(evidence, key=key)


def _ts(value: str | None) -> float:
    if not value:
        return 0.0
    digits = re.sub(r"\D", "", value)[:14].ljust(14, "0")
    return float(digits)


def newer(a: Evidence, b: Evidence) -> bool:
    """True when ``a`` was updated after ``b``."""
    return _ts(a["updated_at"]) > _ts(b["updated_at"])


def render_evidence(evidence: Iterable[Evidence], limit_chars: int = 1200) -> str:
    """Evidence as XML-tagged blocks for a prompt."""
    blocks = []
    for ev in evidence:
        attrs = (
            f'id="{ev["source_id"]}" doc_id="{ev["doc_id"]}" kind="{ev["kind"]}" '
            f'authority="{AUTHORITY_LABELS.get(ev["authority"], ev["authority"])}" '
            f'updated="{ev["updated_at"] or "unknown"}"'
        )
        if ev["deprecated"]:
            attrs += ' deprecated="true"'
        blocks.append(f"<source {attrs}>\n{ev['title']}\n{ev['snippet'][:limit_chars]}\n</source>")
    return "\n".join(blocks)


def only_changed(state: SearchState, update: dict[str, Any]) -> dict[str, Any]:
    """``update`` without the keys whose value is already in state.

    Every key written is stored again in the next checkpoint; unchanged ones cost a write
    and say nothing in the history.
    """
    return {k: v for k, v in update.items() if state.get(k, _MISSING) != v}


_MISSING = object()


def cited_ids(answer: str) -> list[str]:
    """Citation ids in order of first appearance."""
    return list(dict.fromkeys(CITATION.findall(answer)))


def conversation_of(state: SearchState, turns: int = 3) -> str:
    """The last few turns of the thread, for prompts."""
    return "\n".join(
        f"Q: {t['question']}\nA: {t['answer'][:500]}" for t in state.get("turns", [])[-turns:]
    )
