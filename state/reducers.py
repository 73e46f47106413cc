"""Named reducers for keys written by parallel branches or across rounds."""

from __future__ import annotations

from typing import Any, TypeVar, cast

from typing_extensions import TypedDict

from seekgraph.state.models import Evidence, Hit, ModelCall, SourceFailure

T = TypeVar("T")


class Replace(TypedDict):
    """An update that replaces the whole list instead of merging into it."""

    replace: list[Any]


def replace(items: list[Any] | None = None) -> Replace:
    """Build a ``Replace`` update (use ``replace()`` to clear a list)."""
    return {"replace": list(items or [])}


def _replacement(update: object) -> list[Any] | None:
    """The new list when ``update`` is a ``Replace``, else ``None``."""
    if isinstance(update, dict) and set(update) == {"replace"}:
        return list(update["replace"])
    return None


def add_or_reset(current: list[T] | None, update: list[T] | Replace | None) -> list[T]:
    """Append ``update`` to ``current``; a ``Replace`` update starts over."""
    if update is None:
        return list(current or [])
    fresh = _replacement(update)
    if fresh is not None:
        return fresh
    return [*(current or []), *cast(list[T], update)]


def add_hits(current: list[Hit] | None, update: list[Hit] | Replace | None) -> list[Hit]:
    """Collect hits from parallel search branches; ``replace()`` clears them for a new round."""
    return add_or_reset(current, update)


def add_failures(
    current: list[SourceFailure] | None, update: list[SourceFailure] | Replace | None
) -> list[SourceFailure]:
    """Collect source failures from parallel branches; ``replace()`` clears them."""
    return add_or_reset(current, update)


def _merge_one(old: Evidence, new: Evidence) -> Evidence:
    merged: Evidence = {**old}
    scores = dict(old["scores"])
    for stage, value in new["scores"].items():
        scores[stage] = max(value, scores.get(stage, value))
    merged["scores"] = scores
    merged["queries"] = [*old["queries"], *(q for q in new["queries"] if q not in old["queries"])]
    merged["score"] = max(old["score"], new["score"])
    if new["kept_by"] != "none" and old["kept_by"] == "none":
        merged["kept_by"] = new["kept_by"]
    if len(new["snippet"]) > len(old["snippet"]):
        merged["snippet"] = new["snippet"]
    merged["round"] = min(old["round"], new["round"])
    return merged


def add_model_calls(
    current: list[ModelCall] | None, update: list[ModelCall] | Replace | None
) -> list[ModelCall]:
    """Log model calls in order; ``replace()`` starts a new question's log."""
    return add_or_reset(current, update)


def merge_evidence(
    current: list[Evidence] | None, update: list[Evidence] | Replace | None
) -> list[Evidence]:
    """Merge evidence de-duplicated by stable ``source_id`` across sources and rounds.

    A passage found again keeps one entry: its first position, the best score of each
    stage, and the union of the queries that found it. ``replace()`` starts over (a new
    question in the same thread).
    """
    if update is None:
        return list(current or [])
    fresh = _replacement(update)
    base: list[Evidence] = [] if fresh is not None else list(current or [])
    items: list[Evidence] = fresh if fresh is not None else list(cast(list[Evidence], update))
    index = {ev["source_id"]: i for i, ev in enumerate(base)}
    for ev in items:
        at = index.get(ev["source_id"])
        if at is None:
            index[ev["source_id"]] = len(base)
            base.append(ev)
        else:
            base[at] = _merge_one(base[at], ev)
    return base


def union_strings(current: list[str] | None, update: list[str] | Replace | None) -> list[str]:
    """Ordered union of strings (queries tried, documents read); ``replace()`` resets."""
    if update is None:
        return list(current or [])
    fresh = _replacement(update)
    if fresh is not None:
        return list(dict.fromkeys(fresh))
    seen = list(current or [])
    for item in cast(list[str], update):
        if item not in seen:
            seen.append(item)
    return seen
