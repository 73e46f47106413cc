"""A thread shows only what its person may read *now*.

Permissions change after a question was answered: someone leaves a Slack channel, a page is
restricted, a file unshared. The next sync takes the documents away from search; this takes
them out of what the thread already holds — its state, its history, the snapshot a reconnect
gets, and the turns a follow-up question reads:

- every passage, citation or document of a source whose document the person can no longer
  read is dropped (evidence, hits, citations, the documents read);
- an answer that cited one, or quotes one, is replaced by :data:`WITHHELD` — so is a
  conflict, note or any other text quoting it, and a turn (the thread's memory of an earlier
  answer) that cited or quotes it.

Only what can be checked is checked: documents of the indexed sources (workspace folders and
live connectors), each read once with the person's current groups. Nothing is deleted: if
access comes back, so does the thread's content.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from seekgraph.sources.base import User
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.registry import SourceRegistry

WITHHELD = "(withheld: this drew on a source you can no longer access)"
#: A revoked document's title at least this long is recognised in other text.
MIN_TITLE = 12


def _mappings(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every mapping inside ``value`` (itself included), depth first."""
    if isinstance(value, Mapping):
        yield value
        for item in value.values():
            yield from _mappings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _mappings(item)


def refs(values: Any) -> set[tuple[str, str]]:
    """Every (source, doc_id) a state mentions (passages, citations, documents, turns)."""
    return {
        (m["source"], m["doc_id"])
        for m in _mappings(values)
        if isinstance(m.get("source"), str) and isinstance(m.get("doc_id"), str)
    }


#: A run of this many words (or Chinese characters) of a revoked passage marks a quote of it.
QUOTE_WORDS = 6
_TOKEN = re.compile(r"[\u3400-\u9fff]|\w+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _shingles(tokens: list[str]) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + QUOTE_WORDS]) for i in range(len(tokens) - QUOTE_WORDS + 1)}


def _marks(values: Any, gone: set[str]) -> tuple[set[tuple[str, ...]], set[str]]:
    """What quotes a revoked document: runs of its passages' words, and its titles."""
    shingles: set[tuple[str, ...]] = set()
    titles: set[str] = set()
    for value in _mappings(values):
        if value.get("doc_id") not in gone:
            continue
        if len(str(value.get("title") or "")) >= MIN_TITLE:
            titles.add(str(value["title"]))
        texts = [str(value[k]) for k in ("snippet", "text", "context") if value.get(k)]
        texts += [str(c.get("text", "")) for c in value.get("chunks") or []]
        for text in texts:
            shingles.update(_shingles(_tokens(text)))
    return shingles, titles


def without(values: Any, gone: set[str]) -> Any:
    """``values`` with what the revoked documents ``gone`` gave taken out (see the module)."""
    if not gone:
        return values
    shingles, titles = _marks(values, gone)

    def tainted(text: str) -> bool:
        if any(d in text for d in gone) or any(t in text for t in titles):
            return True
        return not shingles.isdisjoint(_shingles(_tokens(text)))

    def cites_gone(value: Mapping[str, Any]) -> bool:
        cited = [*(value.get("citations") or []), *(value.get("cited") or [])]
        return any(isinstance(c, Mapping) and c.get("doc_id") in gone for c in cited)

    def walk(value: Any) -> Any:
        if isinstance(value, Mapping):
            if value.get("doc_id") in gone:
                return None
            out = {k: walk(v) for k, v in value.items()}
            if isinstance(value.get("answer"), str) and cites_gone(value):
                out["answer"] = WITHHELD
            return out
        if isinstance(value, list | tuple):
            kept = [walk(v) for v in value if not (isinstance(v, str) and v in gone)]
            return [v for v in kept if v is not None]
        if isinstance(value, str) and tainted(value):
            return WITHHELD
        return value

    return walk(values)


async def revoked(
    registry: SourceRegistry,
    user: User,
    values: Any,
    seen: dict[tuple[str, str], bool] | None = None,
) -> set[str]:
    """The documents ``values`` mention that ``user`` can no longer read (indexed sources).

    ``seen`` keeps each document's answer across calls (a history reads the same ones again
    in every checkpoint).
    """
    seen = {} if seen is None else seen
    gone: set[str] = set()
    for ref in sorted(refs(values)):
        if ref not in seen:
            try:
                found = registry.get(ref[0])
            except KeyError:
                found = None  # a source no longer configured: its documents are searched no more
            seen[ref] = not isinstance(found, EmbeddedSource) or await found.visible(ref[1], user)
        if not seen[ref]:
            gone.add(ref[1])
    return gone


async def visible_values(
    registry: SourceRegistry,
    user_name: str,
    values: Any,
    seen: dict[tuple[str, str], bool] | None = None,
) -> Any:
    """``values`` as ``user_name`` may see them now (an unknown person sees nothing)."""
    if not values:
        return values
    try:
        user = await registry.user_now(user_name)
    except KeyError:
        return {}
    return without(values, await revoked(registry, user, values, seen))


__all__ = ["WITHHELD", "revoked", "visible_values", "without"]
