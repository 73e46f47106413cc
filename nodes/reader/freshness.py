"""Freshness: when a newer statement announcing a change outranks an older, more authoritative one.

Authority ranks sources (knowledge base > documents > messages and notes), but a newer
statement that announces a change — "from 1 November …", "moved to …", "switched off on
30 November", "replaces …", "no longer …" — supersedes an older article once the change has
taken effect: the article is out of date. A change announced for a later date is upcoming,
and until then the article still holds. The rule lives here; its words (``change_words``) and
how a date is written (``date_written``) are the language tables' (``providers/language``),
and dates are read by python-dateutil (``providers.language.date_in``).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from seekgraph.providers.language import alternation, date_in, pattern, words

#: Words that announce a change (a new fact replacing an old one).
CHANGE_WORDS = re.compile(rf"\b(?:{alternation(words('change_words'))})\b", re.I)
#: A calendar date: "1st November 2026", "Nov. 3", "November 3, 2026", "2026-11-03" (found
#: here, read by dateutil).
_DATE = re.compile(rf"{pattern('date_written')}|\b\d{{4}}-\d{{2}}-\d{{2}}\b", re.I)


@dataclass(frozen=True)
class Change:
    """A change a statement announces, and when it takes effect."""

    effective: dt.date | None
    """The date the change takes effect (None: the statement gives none; it is in effect)."""

    def in_effect(self, today: dt.date) -> bool:
        """Whether the change has taken effect by ``today``."""
        return self.effective is None or self.effective <= today


def dates_in(text: str, year: int) -> list[dt.date]:
    """Calendar dates written in ``text``; a date without a year is in ``year``."""
    return [d for m in _DATE.finditer(text) if (d := date_in(m.group(0), year)) is not None]


def announced_change(text: str, written: str | None) -> Change | None:
    """The change ``text`` announces (written on ``written``, ISO), or None for a plain fact.

    The latest date named is when it takes effect ("goes live on 10 November; the old one is
    switched off on 30 November" is fully in effect from 30 November).
    """
    if not CHANGE_WORDS.search(text):
        return None
    year = int(written[:4]) if written and written[:4].isdigit() else dt.date.today().year
    days = dates_in(text, year)
    return Change(max(days) if days else None)


def verdict(newer_text: str, newer_written: str | None, today: dt.date) -> str | None:
    """How a newer, less authoritative statement stands against an older article.

    ``current``: it announces a change in effect (the article is out of date);
    ``upcoming``: a change announced for a later date; None: no change announced.
    """
    change = announced_change(newer_text, newer_written)
    if change is None:
        return None
    return "current" if change.in_effect(today) else "upcoming"


def effective_words(newer_text: str, newer_written: str | None) -> str:
    """``effective 1 November 2026`` (or nothing when no date is given)."""
    change = announced_change(newer_text, newer_written)
    if change is None or change.effective is None:
        return ""
    day = change.effective
    return f" effective {day.day} {day.strftime('%B')} {day.year}"
