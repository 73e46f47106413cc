"""The word and pattern tables: data per language, shipped with the package, each saying its use."""

from __future__ import annotations

import ast
import re
from importlib.resources import files
from pathlib import Path

import pytest

from seekgraph.providers.language import (
    LANGUAGES,
    MONTHS,
    alternation,
    compiled,
    pattern,
    patterns,
    table,
)

ROOT = Path(__file__).resolve().parents[2]


def _lines(language: str) -> list[str]:
    """The lines of ``language``'s table file as the package ships it."""
    table_file = files("seekgraph.providers.language").joinpath(f"{language}.toml")
    return table_file.read_text().splitlines()


def test_each_list_has_words_no_repeats_and_a_comment_saying_what_it_is_for() -> None:
    for language in LANGUAGES:
        lines = _lines(language)
        lines = lines[: lines.index("[patterns]")] if "[patterns]" in lines else lines
        starts = [i for i, line in enumerate(lines) if re.match(r"^\w+ = \[", line)]
        assert len(starts) == len(table(language))
        assert all(lines[i - 1].startswith("# ") for i in starts), language
        for name, entries in table(language).items():
            assert entries and len(set(entries)) == len(entries), (language, name)


def test_month_names_are_dateutils_every_form() -> None:
    assert {"sep", "sept", "september", "may"} <= MONTHS and len(MONTHS) == 24


def test_a_space_in_an_entry_matches_any_whitespace() -> None:
    assert re.fullmatch(alternation(["no charge", "free"]), "no \n charge")


def test_every_pattern_of_the_tables_compiles_and_says_its_use() -> None:
    for language in LANGUAGES:
        lines = _lines(language)
        after = lines[lines.index("[patterns]") :]
        for name in patterns(language):
            re.compile(pattern(name, language))
            first = next(i for i, line in enumerate(after) if line.startswith(f"{name} = "))
            # a comment above it, or above the run of one-line entries it belongs to
            above = (line for line in after[:first][::-1] if not re.match(r"^\w+ = '.*'$", line))
            assert next(above).startswith("# "), (language, name)


def test_a_missing_entry_is_named_with_its_table() -> None:
    with pytest.raises(KeyError, match=r"no pattern 'no_such_entry' in .*providers/language/zh"):
        pattern("no_such_entry", "zh")


def _asked_for() -> set[tuple[str, str]]:
    """Every ``pattern(name, …)``/``compiled(name, …)`` the code makes: (name, language)."""
    asked = set()
    for path in [*ROOT.glob("nodes/**/*.py"), *ROOT.glob("providers/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in {"pattern", "compiled"}
                and node.args
                and all(isinstance(a, ast.Constant) for a in node.args)
            ):
                name, *languages = (a.value for a in node.args)
                asked |= {(name, language) for language in languages or ["en"]}
    return asked


def test_every_pattern_the_code_asks_for_is_in_the_tables() -> None:
    asked = _asked_for()
    assert len(asked) > 20
    for name, language in asked:
        assert name in patterns(language), (name, language)
        compiled(name, language)
    # and no entry is left that nothing reads
    assert {(n, lang) for lang in LANGUAGES for n in patterns(lang)} <= asked
