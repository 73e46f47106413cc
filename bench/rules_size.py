"""The size of the language rules: regular expressions, listed words and thresholds.

    python -m bench.rules_size --rev 33bfb2b --json bench/results/rules_size.json

Counted over ``nodes/`` and the text utilities the reader builds on
(``providers/terms.py``, ``providers/sentences.py``), at the working tree and at ``--rev``
(git), by reading the code as a parser does (``ast``): a regular expression is a call of
``re.compile`` (its alternatives counted by ``|`` at any depth); a listed word is a string in
a ``frozenset``/``set``/``tuple`` literal or a ``"…".split()`` of several words; a threshold
is a module-level UPPER_CASE name bound to a number.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.report import command_line, write

FILES = ("nodes", "providers/terms.py", "providers/sentences.py")


def count(sources: dict[str, str]) -> dict[str, Any]:
    """Rules in each file's source text, and in all."""
    per: dict[str, dict[str, int]] = {}
    for path, text in sources.items():
        tree = ast.parse(text)
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
                    for c in ast.walk(node.args[0])
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
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
            "regexes": regexes,
            "alternatives": alternatives,
            "listed_words": words,
            "thresholds": thresholds,
        }
    total = {k: sum(p[k] for p in per.values()) for k in next(iter(per.values()), {})}
    return {"files": len(per), **total}


def tree_sources() -> dict[str, str]:
    out = {}
    for entry in FILES:
        paths = sorted(Path(entry).rglob("*.py")) if Path(entry).is_dir() else [Path(entry)]
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
        if p.endswith(".py")
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", required=True, help="the revision to compare with")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    started = time.time()
    out = {"before": count(rev_sources(args.rev)), "after": count(tree_sources())}
    write(args.json, {"command": command_line("bench.rules_size", args), **out}, started)


if __name__ == "__main__":
    main()
