"""Word tables per language (``en.toml``, ``zh.toml``) and the calendar's names.

The listed words the text rules use — stopwords of search and coverage, and the offline
reader's frame words, quantity nouns, roles… — are data here, each list with a comment saying
what it is for and who reads it; a file is read once. They sit with the providers because
search (``providers.terms``) needs the stopwords below the nodes. Month and weekday names are
python-dateutil's (``parserinfo``), the parser that reads the dates themselves
(``date_in``), so a rule that finds a date and the parser that reads it know the same names.
"""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from collections.abc import Iterable
from functools import cache
from importlib.resources import files

from dateutil import parser as _dates

#: The languages with a table: English and Chinese.
LANGUAGES = ("en", "zh")

_CALENDAR = _dates.parserinfo()
#: Every form of a month's name dateutil reads, lower-cased ("sep", "sept", "september").
MONTHS = frozenset(name.lower() for names in _CALENDAR.MONTHS for name in names)
#: The months' full names, lower-cased ("january" … "december").
MONTH_NAMES = frozenset(max(names, key=len).lower() for names in _CALENDAR.MONTHS)
#: The weekdays' full names, lower-cased ("monday" … "sunday").
WEEKDAY_NAMES = frozenset(max(names, key=len).lower() for names in _CALENDAR.WEEKDAYS)


@cache
def table(language: str) -> dict[str, list[str]]:
    """The word lists of ``language`` ("en" or "zh"), by name, read once from its TOML file."""
    if language not in LANGUAGES:
        raise ValueError(f"no word table for language {language!r} (have {LANGUAGES})")
    with files(__name__).joinpath(f"{language}.toml").open("rb") as handle:
        return {name: list(entries) for name, entries in tomllib.load(handle).items()}


def words(name: str, *languages: str) -> frozenset[str]:
    """The words of the list ``name`` in ``languages`` (English when none is given)."""
    return frozenset(w for language in languages or ("en",) for w in table(language)[name])


def alternation(entries: Iterable[str]) -> str:
    """A regular expression's alternatives matching any of ``entries``, longest first.

    Each entry matches literally, except that a space matches any run of whitespace.
    """
    escaped = (re.escape(e).replace(r"\ ", r"\s+") for e in entries)
    return "|".join(sorted(escaped, key=lambda e: (-len(e), e)))


def date_in(text: str, year: int) -> dt.date | None:
    """The calendar date ``text`` writes ("1st November", "Nov. 3, 2026"), read by dateutil.

    A date without a year is in ``year``; None when ``text`` is no valid date ("31 February").
    """
    try:
        parsed: dt.datetime = _dates.parse(text, default=dt.datetime(year, 1, 1))
    except (ValueError, OverflowError):
        return None
    return parsed.date()
