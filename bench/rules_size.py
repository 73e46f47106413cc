"""The size of the language rules: regular expressions, listed words and thresholds.

    python -m bench.rules_size --rev 33bfb2b --json bench/results/rules_size.json

Counted over ``nodes/`` and the text utilities the reader builds on (``providers/terms.py``,
``providers/sentences.py``, the word tables of ``providers/language``), at the working tree
and at ``--rev`` (git), by reading the code as a parser does (``ast``): a regular expression
is a call of ``re.compile`` (its alternatives counted by ``|`` at any depth, with the module's
string constants it interpolates, ``rf"(?:{_MONTHS})"``, read in); a listed word is a string
in a ``frozenset``/``set``/``tuple`` literal or a ``"…".split()`` of several words; a threshold
is a module-level UPPER_CASE name bound to a number.

Words moved out of the code into data tables (the ``*.toml`` word lists under those paths,
``providers/language/en.toml`` and ``zh.toml``) are still listed words: each string in a
table's lists counts. ``listed_words`` is their sum with the words in code, reported apart as
``listed_words_in_code`` and ``listed_words_in_tables``. Names a library supplies (dateutil's
months and weekdays) are not counted: they are no longer ours to keep. ``entries`` is the
alternatives and the listed words together: a word moved from a pattern into a table moves
from one to the other and leaves it unchanged.

Language patterns moved into the tables (their ``[patterns]`` tables) are still regular
expressions: each entry counts as one, its alternatives by ``|`` as in code (a placeholder,
``{words:NAME}``, is its word list, already counted as listed words). ``regexes`` and
``alternatives`` are the sums over code and tables, reported apart as ``…_in_code`` and
``…_in_tables``; a ``re.compile`` in code counts the alternatives of its own text only, not
those of the table patterns it reads (``pattern(…)``, ``compiled(…)``).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import time
import tomllib
from pathlib import Path
from typing import Any

from bench.report import command_line, write

FILES = ("nodes", "providers/terms.py", "providers/sentences.py", "providers/language")


def count(sources: dict[str, str]) -> dict[str, Any]:
    """Rules in each file's source text, and in all."""
    per: dict[str, dict[str, int]] = {}
    for path, text in sources.items():
        if path.endswith(".toml"):
            patterns = table_patterns(text)
            per[path] = {
                **_ZERO,
                "listed_words_in_tables": table_words(text),
                "regexes_in_tables": len(patterns),
                "alternatives_in_tables": sum(p.count("|") + 1 for p in patterns),
            }
            continue
        tree = ast.parse(text)
        constants = {
            stmt.targets[0].id: stmt.value.value
            for stmt in tree.body
            if isinstance(stmt, ast.Assign)
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        }
        regexes = alternatives = words = thresholds = 0
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "compile"
                and node.args
            ):
                regexes += 1
                pattern = "".join(
                    c.value
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                    else constants.get(c.id, "")
                    if isinstance(c, ast.Name)
                    else ""
                    for c in ast.walk(node.args[0])
                )
                alternatives += pattern.count("|") + 1
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "split"
                and isinstance(node.func.value, ast.Constant)
                and isinstance(node.func.value.value, str)
                and not node.args
                and len(node.func.value.value.split()) >= 3
            ):
                words += len(node.func.value.value.split())
            elif isinstance(node, ast.Set | ast.Tuple) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
            ):
                words += len(node.elts) if len(node.elts) >= 3 else 0
        for stmt in tree.body:
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else None
            value = stmt.value if isinstance(stmt, ast.Assign) else None
            if (
                isinstance(target, ast.Name)
                and target.id.lstrip("_").isupper()
                and isinstance(value, ast.Constant)
                and isinstance(value.value, int | float)
                and not isinstance(value.value, bool)
            ):
                thresholds += 1
        per[path] = {
            **_ZERO,
            "regexes_in_code": regexes,
            "alternatives_in_code": alternatives,
            "listed_words_in_code": words,
            "thresholds": thresholds,
        }
    total = {k: sum(p[k] for p in per.values()) for k in _ZERO}
    listed = total["listed_words_in_code"] + total["listed_words_in_tables"]
    alternatives = total["alternatives_in_code"] + total["alternatives_in_tables"]
    return {
        "files": sum(1 for p in per if p.endswith(".py")),
        "tables": sum(1 for p in per if p.endswith(".toml")),
        "regexes": total["regexes_in_code"] + total["regexes_in_tables"],
        "alternatives": alternatives,
        **total,
        "listed_words": listed,
        # what a person maintaining the rules reads: every alternative and every listed word
        "entries": alternatives + listed,
    }


_ZERO = {
    "regexes_in_code": 0,
    "regexes_in_tables": 0,
    "alternatives_in_code": 0,
    "alternatives_in_tables": 0,
    "listed_words_in_code": 0,
    "listed_words_in_tables": 0,
    "thresholds": 0,
}


def table_patterns(text: str) -> list[str]:
    """The patterns of a TOML table's ``[patterns]`` (an entry of pieces is their text joined)."""
    entries = tomllib.loads(text).get("patterns", {})
    return [v if isinstance(v, str) else "".join(v) for v in entries.values()]


def table_words(text: str) -> int:
    """The strings in a TOML word table's lists (at any depth), its patterns left out."""

    def strings(value: Any) -> int:
        if isinstance(value, str):
            return 1
        if isinstance(value, list):
            return sum(strings(v) for v in value)
        if isinstance(value, dict):
            return sum(strings(v) for v in value.values())
        return 0

    table = tomllib.loads(text)
    return sum(strings(v) for k, v in table.items() if k != "patterns" and not isinstance(v, str))


def tree_sources() -> dict[str, str]:
    out = {}
    for entry in FILES:
        root = Path(entry)
        paths = (
            sorted(root.rglob("*.py")) + sorted(root.rglob("*.toml")) if root.is_dir() else [root]
        )
        out |= {str(p): p.read_text() for p in paths}
    return out


def rev_sources(rev: str) -> dict[str, str]:
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, *FILES],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {
        p: subprocess.run(
            ["git", "show", f"{rev}:{p}"], capture_output=True, text=True, check=True
        ).stdout
        for p in listed
        if p.endswith((".py", ".toml"))
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", required=True, help="the revision to compare with")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    started = time.time()
    out = {
        "systems": {
            f"before ({args.rev})": count(rev_sources(args.rev)),
            "after (working tree)": count(tree_sources()),
        }
    }
    write(args.json, {"command": command_line("bench.rules_size", args), **out}, started)


if __name__ == "__main__":
    main()
