"""Word and pattern tables per language (``en.toml``, ``zh.toml``) and the calendar's names.

The listed words the text rules use — stopwords of search and coverage, and the offline
reader's frame words, quantity nouns, roles… — are data here, each list with a comment saying
what it is for and who reads it; a file is read once. So are the language patterns, the
regular expressions that encode English or Chinese wording (question frames such as "how
many", "since when", 多少; reply phrases; request frames): each file's ``[patterns]`` table
names them, each with a comment naming the module that uses it and its golden test, and
``pattern``/``compiled`` give them to the code. A pattern's ``{words:NAME}`` is the word list
NAME of its own table (``{words:A+B}`` two lists together), ``{months}``, ``{month_names}``
and ``{weekdays}`` the calendar's names below, each as ``alternation`` writes them. Patterns
that are no language (Markdown, code fences, URLs, numbers, citations) stay in the code.

The tables sit with the providers because search (``providers.terms``) needs the stopwords
below the nodes. Month and weekday names are python-dateutil's (``parserinfo``), the parser
that reads the dates themselves (``date_in``), so a rule that finds a date and the parser
that reads it know the same names.
"""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from collections.abc import Iterable
from functools import cache
from importlib.resources import files
from typing import Any

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
def _file(language: str) -> dict[str, Any]:
    """The table of ``language`` as its TOML file holds it, read once."""
    if language not in LANGUAGES:
        raise ValueError(f"no word table for language {language!r} (have {LANGUAGES})")
    with files(__name__).joinpath(f"{language}.toml").open("rb") as handle:
        return tomllib.load(handle)


@cache
def table(language: str) -> dict[str, list[str]]:
    """The word lists of ``language`` ("en" or "zh"), by name, read once from its TOML file."""
    return {name: list(v) for name, v in _file(language).items() if isinstance(v, list)}


@cache
def patterns(language: str) -> dict[str, str]:
    """The ``[patterns]`` table of ``language``: each pattern's text, placeholders unfilled.

    An entry written as a list of pieces is the pieces one after the other.
    """
    entries = _file(language).get("patterns", {})
    return {name: v if isinstance(v, str) else "".join(v) for name, v in entries.items()}


def words(name: str, *languages: str) -> frozenset[str]:
    """The words of the list ``name`` in ``languages`` (English when none is given)."""
    return frozenset(w for language in languages or ("en",) for w in table(language)[name])


_PLACEHOLDER = re.compile(r"\{(words:[\w+]+|months|month_names|weekdays)\}")


def _filled(name: str, language: str) -> str:
    """The pattern ``name`` of ``language``'s table, its placeholders filled."""
    entries = patterns(language)
    if name not in entries:
        raise KeyError(
            f"no pattern {name!r} in the [patterns] table of providers/language/{language}.toml"
        )

    def fill(match: re.Match[str]) -> str:
        kind, _, lists = match.group(1).partition(":")
        if kind == "words":
            return alternation(frozenset().union(*(words(n, language) for n in lists.split("+"))))
        return alternation({"months": MONTHS, "month_names": MONTH_NAMES}.get(kind, WEEKDAY_NAMES))

    return _PLACEHOLDER.sub(fill, entries[name])


@cache
def pattern(name: str, *languages: str) -> str:
    """The language pattern ``name`` of ``languages``' tables (English when none is given).

    The languages' entries are alternatives, in the order given ("en", "zh": English first).
    A KeyError names the table and the entry when one is missing.
    """
    return "|".join(_filled(name, language) for language in languages or ("en",))


@cache
def compiled(name: str, *languages: str, flags: int = 0) -> re.Pattern[str]:
    """``pattern(name, *languages)`` compiled with ``flags`` (``re.I``…)."""
    return re.compile(pattern(name, *languages), flags)


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
