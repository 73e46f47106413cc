r"""mdBook's own links, read as its site shows them: the files a page includes are in it.

mdBook's ``links`` preprocessor (``crates/mdbook-driver/src/builtin_preprocessors/links.rs``)
puts a file where a page says ``{{#include file.md}}``, ``{{#include file.rs:anchor}}`` or
``{{#include file.rs:2:10}}``; ``{{#rustdoc_include file.rs:anchor}}`` puts the whole file there
with the lines outside the anchor hidden (``# `` lines, which a Rust code block does not show);
``{{#playground file.rs}}`` puts the file in a Rust code block; ``{{#title My Title}}`` titles
the page; ``\{{#include file.rs}}`` is how a page shows the link itself. An included page's
own links are expanded too, ``MAX_DEPTH`` deep, as mdBook does.

A page only includes a file of the folder being indexed, read as indexing reads it: Markdown
or plain text without front matter naming its own readers (``acl:``, ``attendees:``), or source
code (``CODE_SUFFIXES``). A link to a file outside the folder, in a hidden or passed-over
folder, of another type (mail, chat, HTML, keys), to a file already in the chain of includes,
or past ``MAX_EXPANDED_CHARS``, is left out (the page's other text is kept); a page that names
its own readers includes nothing (``includes=False``). The page's readers never read through
an include what they could not read.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

import frontmatter

#: Includes inside included files, as deep as mdBook goes.
MAX_DEPTH = 10
#: No more than this many characters are read from one included file.
MAX_INCLUDED_CHARS = 1_000_000
#: A page and all it includes, at most (a page including itself twice doubles at each level).
MAX_EXPANDED_CHARS = 5_000_000
#: What a page may include: Markdown and plain text (read as indexing reads them, front matter
#: and all), and source code, which indexing does not read. Never a file that indexing gives
#: readers of its own (mail, chat exports, HTML with an ``acl`` meta, Office files), nor one it
#: passes over (keys, credentials, data).
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".txt"})
CODE_SUFFIXES = frozenset(
    {
        ".rs", ".py", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".c", ".h", ".cc",
        ".cpp", ".hpp", ".java", ".kt", ".swift", ".rb", ".sh", ".bash", ".zsh", ".ps1",
        ".toml", ".hbs", ".css", ".scss", ".sql", ".lua", ".php", ".cs", ".fs", ".ex", ".exs",
        ".hs", ".ml", ".scala", ".r", ".jl", ".zig", ".dart", ".vue", ".svelte", ".proto",
        ".yaml", ".yml",
    }
)  # fmt: skip

# links.rs's ``find_links``: an escaped link, or a link's type and its target and settings
# (on one line, bounded: a page of unclosed ``{{#include`` is read in linear time)
_LINK = re.compile(
    r"\\\{\{#[^}\n]{0,300}\}\}"
    r"|\{\{[ \t]*#([a-zA-Z0-9_]+)[ \t]+([^}\n]{1,300})\}\}"
)
_ANCHOR_START = re.compile(r"ANCHOR:\s*([\w_-]+)")
_ANCHOR_END = re.compile(r"ANCHOR_END:\s*([\w_-]+)")
_KINDS = frozenset({"include", "rustdoc_include", "playground", "playpen", "title"})


def expand_links(
    text: str,
    page: Path,
    root: Path,
    passed_over: Collection[str] = (),
    includes: bool = True,
) -> tuple[str, str | None]:
    """``text`` of ``page`` with its mdBook links replaced; and the title it sets, if any.

    ``passed_over``: the names of folders indexing passes over (no file in one is included).
    ``includes=False`` (a page that names its own readers, whom an included file's readers
    may not cover): no file is included, the links are left out.
    """
    if "{{" not in text:
        return text, None
    title: list[str] = []
    reader = _Reader(root.resolve(), frozenset(passed_over), includes)
    expanded = _expand(text, page.parent, reader, (page.resolve(),), title)
    return expanded, (title[-1] if title else None)


class _Reader:
    def __init__(self, root: Path, passed_over: frozenset[str], includes: bool) -> None:
        self.root, self.passed_over, self.includes = root, passed_over, includes
        self.left = MAX_EXPANDED_CHARS
        self.read_before: dict[Path, str | None] = {}

    def read(self, path: Path, chain: tuple[Path, ...]) -> tuple[Path, str] | None:
        """The file and its text, if a page may include it (module docstring)."""
        if not self.includes or self.left <= 0:
            return None
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError):  # a loop of links
            return None
        if resolved in chain:  # a file including itself
            return None
        if resolved not in self.read_before:
            self.read_before[resolved] = self._text(resolved)
        text = self.read_before[resolved]
        if text is None:
            return None
        self.left -= len(text)
        return resolved, text

    def _text(self, resolved: Path) -> str | None:
        try:
            if not resolved.is_relative_to(self.root):
                return None
            suffix = resolved.suffix.lower()
            if suffix not in MARKDOWN_SUFFIXES | CODE_SUFFIXES or not resolved.is_file():
                return None
            parts = resolved.relative_to(self.root).parts
            if any(p[:1] == "." or p in self.passed_over for p in parts):
                return None
            with resolved.open(encoding="utf-8", errors="replace") as f:
                text = f.read(MAX_INCLUDED_CHARS)
        except OSError:
            return None
        if suffix in MARKDOWN_SUFFIXES:
            try:  # front matter as indexing reads it: a file naming its own readers stays out
                post = frontmatter.loads(text)
            except Exception:  # noqa: BLE001 - unreadable front matter: not included
                return None
            if {"acl", "attendees"} & {str(k).lower() for k in post.metadata}:
                return None
            text = post.content
        return text


def _expand(
    text: str, base: Path, reader: _Reader, chain: tuple[Path, ...], title: list[str]
) -> str:
    out: list[str] = []
    line = ""  # the text since the last line break written (a link's indentation)
    at = 0
    for link in _LINK.finditer(text):
        kind, argument = link.group(1), link.group(2)
        if kind is not None and kind not in _KINDS:
            continue  # not mdBook's (a template's ``{{#each}}``): words as written
        before = text[at : link.start()]
        line = (line + before).rsplit("\n", 1)[-1]
        out.append(before)
        at = link.end()
        if kind is None:  # an escaped link: the page shows it without its backslash
            out.append(link.group(0)[1:])
            line += link.group(0)[1:]
            continue
        if kind == "title":
            title.append(argument.strip())
            continue
        target, _, settings = argument.strip().partition(" ")
        path, _, lines = target.partition(":")
        found = reader.read(base / path, chain) if len(chain) <= MAX_DEPTH else None
        if found is None:
            continue  # outside the folder, its own readers, unreadable: left out
        where, included = found
        if kind == "playground" or kind == "playpen":
            attributes = ",".join(settings.split())
            body = _without_anchors(included.splitlines())
            included = f"```rust{',' + attributes if attributes else ''}\n{body}\n```\n"
        elif kind == "rustdoc_include":
            included = _rustdoc_lines(included, lines)
        else:
            included = _lines(included, lines)
        included = _expand(included, where.parent, reader, (*chain, where), title)
        # the included lines are indented as the link is (a link inside a list item)
        prefix = line if not line.strip() else ""
        written = f"\n{prefix}".join(included.splitlines())
        out.append(written)
        line = (line + written).rsplit("\n", 1)[-1]
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
