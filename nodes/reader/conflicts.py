"""Sources that disagree: comparable facts, which claim to trust, and how answers show it.

Authority decides first, then freshness (``nodes/reader/freshness.py``), then recency. The
units an amount of money or a quantity is written with are the language tables'
(``money_unit``, ``quantity_unit`` in ``providers/language/en.toml``).
"""

from __future__ import annotations

import datetime as dt
import re
from itertools import combinations

from tld import is_tld

from seekgraph.nodes.plumbing.evidence import newer
from seekgraph.nodes.reader.freshness import effective_words, verdict
from seekgraph.providers.language import pattern
from seekgraph.providers.terms import term_set
from seekgraph.state.models import KIND_LABELS, Conflict, Evidence

_MONEY = re.compile(
    rf"[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?\s?(?:{pattern('money_unit')})\b", re.I
)
_HOST = re.compile(r"\b[a-z0-9][a-z0-9\-]*(?:\.[a-z0-9\-]+)+\.[a-z]{2,}\b", re.I)
#: Names kept for examples, tests and private networks, in no public suffix list: RFC 2606
#: and 6761 (``example``, ``test``, ``invalid``, ``localhost``), RFC 6762 (``local``, and the
#: names its appendix G finds in private use: ``intranet``, ``internal``, ``private``,
#: ``corp``, ``home``, ``lan``), ``localdomain`` (Unix hosts files) and ICANN's ``internal``.
_RESERVED_TLDS = frozenset(
    {"example", "test", "invalid", "localhost", "local", "internal", "intranet", "private"}
    | {"corp", "home", "lan", "localdomain"}
)
_QUANTITY = re.compile(rf"\b\d+(?:\.\d+)?\s?(?:{pattern('quantity_unit')})", re.I)
#: Two sources of one authority and one date: neither is preferred.
UNDECIDED = "Both sources have the same authority and date: check which is right"
#: A fenced code block (a quote may carry the block its sentence introduces).
_CODE_BLOCK = re.compile(r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[^\n]*$|\Z)", re.M | re.S)


def stated(sentence: str) -> str:
    """What a quote states in words: its code left out.

    A code example's URL, port or size is the example's (``requests.get("https://api.github
    .com")`` beside ``httpx.get("https://www.example.org")``), not a fact two pages disagree
    on.
    """
    return _CODE_BLOCK.sub("", sentence).strip()


def is_host(name: str) -> bool:
    """A dotted name is a host when it ends in a top-level domain.

    ``vpn2.corp.example`` is; ``import.meta.env`` or ``process.env.BROWSER`` (code's attribute
    paths) are not.
    """
    last = name.rsplit(".", 1)[-1].lower()
    return last in _RESERVED_TLDS or is_tld(last)


def facts(text: str) -> dict[str, set[str]]:
    """Comparable facts in a sentence, by type: amounts of money, host names, quantities."""

    def norm(s: str) -> str:
        return re.sub(r"[\s,]", "", s.lower())

    return {
        "money": {norm(m) for m in _MONEY.findall(text)},
        "host": {m.lower() for m in _HOST.findall(text) if is_host(m)},
        "quantity": {norm(m) for m in _QUANTITY.findall(text)},
    }


def find_conflicts(candidates: list[tuple[str, Evidence]], today: dt.date) -> list[Conflict]:
    """Pairs of sentences from different documents on one topic that state different facts.

    Authority decides which to trust, unless the less authoritative one is newer and announces
    a change already in effect (``freshness``): then the older article is out of date.
    """
    conflicts: list[Conflict] = []
    seen_pairs: set[tuple[str, str]] = set()
    for (sa, ea), (sb, eb) in combinations(candidates, 2):
        if ea["doc_id"] == eb["doc_id"]:
            continue
        pair = tuple(sorted((ea["doc_id"], eb["doc_id"])))
        if pair in seen_pairs:
            continue
        fa, fb = facts(stated(sa)), facts(stated(sb))
        kinds = [k for k in fa if fa[k] and fb[k] and fa[k] != fb[k]]
        topic = (term_set(sa) & term_set(sb)) - {t for k in fa for t in fa[k] | fb[k]}
        if not kinds or len(topic) < 2:
            continue
        seen_pairs.add(pair)  # type: ignore[arg-type]
        if ea["authority"] != eb["authority"]:
            trust, other = (ea, eb) if ea["authority"] > eb["authority"] else (eb, ea)
            text = {ea["source_id"]: sa, eb["source_id"]: sb}
            label = {e["source_id"]: KIND_LABELS.get(e["kind"], "source") for e in (ea, eb)}
            reason = f"the {label[trust['source_id']]} is the more authoritative source"
            change = (
                verdict(text[other["source_id"]], other["updated_at"], today)
                if newer(other, trust)
                else None
            )
            when = (other["updated_at"] or "")[:10]
            effective = effective_words(text[other["source_id"]], other["updated_at"])
            if change == "current":
                reason = (
                    f"the newer {label[other['source_id']]} ({when}) announces a change"
                    f"{effective}; the {label[trust['source_id']]} is out of date"
                )
                trust, other = other, trust
            elif change == "upcoming":
                reason += (
                    f"; the newer {label[other['source_id']]} ({when}) announces a change"
                    f"{effective}, upcoming"
                )
            elif newer(other, trust):
                reason += (
                    f", but the {label[other['source_id']]} is newer ({when}) and may report "
                    "a change not yet written down — confirm with its author"
                )
        elif newer(ea, eb) or newer(eb, ea):
            trust, other = (ea, eb) if newer(ea, eb) else (eb, ea)
            reason = "both sources have the same authority; the newer one is preferred"
        else:  # nothing tells them apart: neither is trusted over the other
            trust, other = ea, eb
            reason = UNDECIDED
        claims = [
            {
                "id": e["source_id"],
                "text": s,
                "kind": e["kind"],
                "updated_at": e["updated_at"] or "",
            }
            for s, e in ((sa, ea), (sb, eb))
        ]
        conflicts.append(
            {
                "topic": ", ".join(sorted(topic)[:4]),
                "claims": claims,
                "trust": "" if reason == UNDECIDED else trust["source_id"],
                "reason": reason,
            }
        )
    return conflicts


def current_first(lines: list[str], conflicts: list[Conflict]) -> list[str]:
    """Quotes of a fact now in effect just before those of the article it made out of date.

    A quote the newer statement superseded says so ("out of date"); the newer statement is
    quoted in its place, though the question's words did not pick it. What the question's
    words did pick keeps its rank: a newer meal allowance does not go before the hotel
    limit asked for.
    """
    stale: set[str] = set()  # the superseded sentences themselves
    for c in conflicts:
        if "out of date" not in c["reason"]:
            continue
        now = next(claim for claim in c["claims"] if claim["id"] == c["trust"])
        old = {claim["text"] for claim in c["claims"] if claim["id"] != c["trust"]}
        stale |= old
        at = next(
            (i for i, line in enumerate(lines) for t in old if line.startswith(f"- {t} [src:")),
            None,
        )
        if at is None:
            continue
        tag = f"[src:{now['id']}]"
        mine = [line for line in lines[at:] if tag in line]
        if any(tag in line for line in lines[:at]):
            continue  # already quoted before it
        rest = [line for line in lines[at:] if tag not in line]
        lines = [*lines[:at], *(mine or [f"- {now['text']} {tag}"]), *rest]
    return [
        line.replace("- ", "- (out of date) ", 1)
        if any(line.startswith(f"- {text} [src:") for text in stale)
        else line
        for line in lines
    ]
