r"""mdBook's own links, read as its site shows them: the files a page includes are in it.

mdBook's ``links`` preprocessor (``crates/mdbook-driver/src/builtin_preprocessors/links.rs``)
puts a file where a page says ``{{#include file.md}}``, ``{{#include file.rs:anchor}}`` or
``{{#include file.rs:2:10}}``; ``{{#rustdoc_include file.rs:anchor}}`` puts the whole file there
with the lines outside the anchor hidden (``# `` lines, which a Rust code block does not show);
``{{#playground file.rs}}`` puts the file in a Rust code block; ``{{#title My Title}}`` titles
the page; ``\{{#include file.rs}}`` is how a page shows the link itself. An included page's
own links are expanded too, ``MAX_DEPTH`` deep, as mdBook does.

A page only includes a file of the folder being indexed that indexing reads too: a link to a
file outside it, in a hidden or passed-over folder, to a file whose front matter names its own
readers (``acl:``, ``attendees:``), or to one that cannot be read, is left out (the page's
other text is kept). The page's readers never read through it what they could not read.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

#: Includes inside included files, as deep as mdBook goes.
MAX_DEPTH = 10
#: No more than this many characters are read from one included file.
MAX_INCLUDED_CHARS = 1_000_000

# links.rs's ``find_links``: an escaped link, or a link's type and its target and settings
_LINK = re.compile(r"\\\{\{#.*?\}\}|\{\{\s*#([a-zA-Z0-9_]+)\s+([^}]+)\}\}")
_ANCHOR_START = re.compile(r"ANCHOR:\s*([\w_-]+)")
_ANCHOR_END = re.compile(r"ANCHOR_END:\s*([\w_-]+)")
_KINDS = frozenset({"include", "rustdoc_include", "playground", "playpen", "title"})
# front matter that names who may read the file
_OWN_READERS = re.compile(r"\A---[ \t]*\r?\n(?:(?!---).*\n)*?(?:acl|attendees)[ \t]*:", re.M)


def expand_links(
    text: str, page: Path, root: Path, passed_over: Collection[str] = ()
) -> tuple[str, str | None]:
    """``text`` of ``page`` with its mdBook links replaced; and the title it sets, if any.

    ``passed_over``: the names of folders indexing passes over (no file in one is included).
    """
    if "{{" not in text:
        return text, None
    title: list[str] = []
    reader = _Reader(root.resolve(), frozenset(passed_over))
    expanded = _expand(text, page.parent, reader, 0, title)
    return expanded, (title[-1] if title else None)


class _Reader:
    def __init__(self, root: Path, passed_over: frozenset[str]) -> None:
        self.root, self.passed_over = root, passed_over

    def read(self, path: Path) -> str | None:
        """The file's text, if a page may include it (module docstring)."""
        try:
            resolved = path.resolve()
            if not resolved.is_relative_to(self.root) or not resolved.is_file():
                return None
            parts = resolved.relative_to(self.root).parts
            if any(p[:1] == "." or p in self.passed_over for p in parts):
                return None
            with resolved.open(encoding="utf-8", errors="replace") as f:
                text = f.read(MAX_INCLUDED_CHARS)
        except OSError:
            return None
        return None if _OWN_READERS.match(text) else text


def _expand(text: str, base: Path, reader: _Reader, depth: int, title: list[str]) -> str:
    out: list[str] = []
    at = 0
    for link in _LINK.finditer(text):
        kind, argument = link.group(1), link.group(2)
        if kind is None:  # an escaped link: the page shows it without its backslash
            out.append(text[at : link.start()] + link.group(0)[1:])
            at = link.end()
            continue
        if kind not in _KINDS:  # not mdBook's (a template's ``{{#each}}``): words as written
            continue
        out.append(text[at : link.start()])
        at = link.end()
        if kind == "title":
            title.append(argument.strip())
            continue
        target, _, settings = argument.strip().partition(" ")
        path, _, lines = target.partition(":")
        included = reader.read(base / path)
        if included is None:
            continue  # outside the folder, or unreadable: the page is read without it
        if kind == "playground" or kind == "playpen":
            attributes = ",".join(settings.split())
            body = _without_anchors(included.splitlines())
            included = f"```rust{',' + attributes if attributes else ''}\n{body}\n```\n"
        elif kind == "rustdoc_include":
            included = _rustdoc_lines(included, lines)
        else:
            included = _lines(included, lines)
        if depth < MAX_DEPTH:
            included = _expand(included, (base / path).parent, reader, depth + 1, title)
        # the included lines are indented as the link is (a link inside a list item)
        prefix = "".join(out).rsplit("\n", 1)[-1]
        if prefix.strip():
            prefix = ""
        out.append(f"\n{prefix}".join(included.splitlines()))
    out.append(text[at:])
    return "".join(out)


def _range(lines: str, count: int) -> range:
    """``take_lines``' range: ``2:10`` is lines 2 to 10, ``2`` line 2, ``2:`` from 2, ``:10``."""
    start_text, colon, end_text = lines.partition(":")
    start = int(start_text) - 1 if start_text.isdigit() and int(start_text) > 0 else 0
    if end_text.isdigit():
        end = int(end_text)
    elif start_text.isdigit() and not colon:
        end = start + 1
    else:
        end = count
    return range(start, max(start, min(end, count)))


def _is_anchor(lines: str) -> bool:
    return bool(lines) and not lines.split(":", 1)[0].isdigit() and lines.split(":", 1)[0] != ""


def _without_anchors(lines: list[str]) -> str:
    """The lines but mdBook's anchor comments (``// ANCHOR: name``), which no site shows."""
    return "\n".join(x for x in lines if not _ANCHOR_START.search(x) and not _ANCHOR_END.search(x))


def _anchored(lines: list[str], anchor: str) -> list[bool]:
    """For each line: whether it is inside ``anchor`` (its own anchor lines are not)."""
    inside, out = False, []
    for line in lines:
        start, end = _ANCHOR_START.search(line), _ANCHOR_END.search(line)
        if end and end.group(1) == anchor:
            inside = False
            out.append(False)
        elif start and start.group(1) == anchor:
            inside = True
            out.append(False)
        else:
            out.append(inside)
    return out


def _lines(text: str, lines: str) -> str:
    """``{{#include}}``: the anchor's lines, or the range's, or the whole file."""
    split = text.splitlines()
    if _is_anchor(lines):
        kept = [x for x, inside in zip(split, _anchored(split, lines), strict=True) if inside]
    elif lines:
        kept = [split[i] for i in _range(lines, len(split))]
    else:
        kept = split
    return _without_anchors(kept)


def _rustdoc_lines(text: str, lines: str) -> str:
    """``{{#rustdoc_include}}``: the whole file, lines outside the part hidden (``# ``)."""
    split = text.splitlines()
    if _is_anchor(lines):
        shown = _anchored(split, lines)
    elif lines:
        wanted = set(_range(lines, len(split)))
        shown = [i in wanted for i in range(len(split))]
    else:
        shown = [True] * len(split)
    kept = [
        x if visible else f"# {x}"
        for x, visible in zip(split, shown, strict=True)
        if not _ANCHOR_START.search(x) and not _ANCHOR_END.search(x)
    ]
    return "\n".join(kept)
