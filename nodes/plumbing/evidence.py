"""Views of the evidence: what was kept, how relevant, in which order to trust it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from seekgraph.providers.terms import term_set
from seekgraph.state.models import Evidence, Hit
from seekgraph.state.schemas import SearchState


def kept(evidence: Iterable[Evidence]) -> list[Evidence]:
    """Evidence that some stage decided to keep."""
    return [ev for ev in evidence if ev["kept_by"] != "none"]


def lifted(own: float, around: float, weight: float) -> float:
    """A score moved ``weight`` of the way up to its surroundings' score, never down."""
    return own + weight * max(0.0, around - own)


def relevance(ev: Evidence) -> float:
    """The most informed score of a piece of evidence: grade, then rerank/read, then retrieval.

    A passage the search judged and its document's reading judged again keeps the better of
    the two: the rerank score also counts the source's own ranking, which reading does not
    see, so reading a document never demotes the passage that led to it.
    """
    scores = ev["scores"]
    if "grade" in scores:
        return scores["grade"]
    judged = [scores[stage] for stage in ("read", "rerank") if stage in scores]
    if judged:
        return max(judged)
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


def only_changed(state: SearchState, update: dict[str, Any]) -> dict[str, Any]:
    """``update`` without the keys whose value is already in state.

    Every key written is stored again in the next checkpoint; unchanged ones cost a write
    and say nothing in the history.
    """
    return {k: v for k, v in update.items() if state.get(k, _MISSING) != v}


_MISSING = object()


def hop_queries(state: SearchState) -> set[str]:
    """The last round's gap questions that are hops: they name what the question does not.

    A bridge question ("Theresa Connelly born") follows a name into the next hop; a gap
    question made of the question's own missing words is a part of the question, not a hop.
    """
    asked = term_set(state["question"])
    return {q for q in state["verdict"].get("gap_questions", []) if term_set(q) - asked}


def to_evidence(hit: Hit, round_: int, kept_by: str, asked: str = "", **scores: float) -> Evidence:
    """A hit promoted to evidence, with its stage scores (a message's neighbours left out).

    Of its neighbours it keeps only which words of ``asked`` (the question) they say
    (``around_terms``): a reply's conversation names what the reply does not ("price is 48
    million euros" in the Moorhen thread), and those words are the asker's own.
    """
    fields = {k: v for k, v in hit.items() if k != "context"}
    evidence: Evidence = {
        **fields,  # type: ignore[typeddict-item]
        "scores": {"retrieval": hit["score"], **scores},
        "kept_by": kept_by,
        "queries": [hit["query"]],
        "round": round_,
    }
    if asked and hit.get("context"):
        evidence["around_terms"] = sorted(term_set(asked) & term_set(hit["context"]))
    return evidence
