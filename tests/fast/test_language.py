"""The word tables: data per language, shipped with the package, each list saying its use."""

from __future__ import annotations

import re
from importlib.resources import files

from seekgraph.providers.language import LANGUAGES, MONTHS, alternation, table


def test_each_list_has_words_no_repeats_and_a_comment_saying_what_it_is_for() -> None:
    for language in LANGUAGES:
        lines = (
            files("seekgraph.providers.language")
            .joinpath(f"{language}.toml")
            .read_text()
            .splitlines()
        )
        starts = [i for i, line in enumerate(lines) if re.match(r"^\w+ = \[", line)]
        assert len(starts) == len(table(language))
        assert all(lines[i - 1].startswith("# ") for i in starts), language
        for name, entries in table(language).items():
            assert entries and len(set(entries)) == len(entries), (language, name)


def test_month_names_are_dateutils_every_form() -> None:
    assert {"sep", "sept", "september", "may"} <= MONTHS and len(MONTHS) == 24


def test_a_space_in_an_entry_matches_any_whitespace() -> None:
    assert re.fullmatch(alternation(["no charge", "free"]), "no \n charge")
