"""Markdown as readable blocks, parsed by markdown-it (CommonMark), not by regular expressions.

What a person would read, one block per paragraph: headings as ``# title``, hard-wrapped
paragraphs joined into one line, list items one per line (``- item``, ``1. step``) so a list
stays one block, code fences kept whole, a table as one block of ``a | b`` rows. An HTML block
is read as the text it renders as (``html_text``); HTML comments, link reference definitions
and images' markup are dropped: they are never quoted. Node.js's API metadata comment
(``<!-- YAML added: v0.1.90 -->``) is read as its site shows it: "Added in: v0.1.90", and a
"History" table of versions and changes (``api_metadata``); so is its
``<!-- source_link=lib/fs.js -->``: "Source Code: lib/fs.js".

Documentation sites' call-outs are read as the prose they render as, not as code: MkDocs
admonitions (``!!! note "Title"``, collapsible ``??? tip``), Material's content tabs
(``=== "Windows"``), PyMdown blocks (``/// warning | Title`` … ``///``), Docusaurus and MyST
containers (``:::tip`` … ``:::``) and GitHub alerts
(``> [!NOTE]``). Their bodies are indented or fenced; CommonMark alone reads an indented body
as a code block. Each is read as its title, then its body: "Windows: Use `irm` to download the
script:" and the code block under it. mkdocstrings' ``::: package.Name`` directives and
snippet includes (``--8<-- "file.md"``) are dropped: the built site puts other files there,
which the page does not hold. Attribute lists (``{: #anchor }``) and Material's icons
(``:material-check:``) are markup, never words. Sphinx's Markdown (MyST) is read as its site
renders it (``_myst_as_markdown``; roles in ``inline_text``), and so is a reStructuredText
page (``rst_as_markdown``).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.admon import admon_plugin
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.footnote import footnote_plugin

# footnotes (a reference's mark a superscript number, the note right after the block that marks
# it: the site shows it at the page's end, a chunk of the page's last section would hold it
# there) and definition lists ("Term" then ": what it means") as Python-Markdown, MyST
# and Pandoc read them
_PARSER = (
    MarkdownIt("commonmark")
    .enable("table")
    .use(admon_plugin)
    .use(footnote_plugin)
    .use(deflist_plugin)
)
_MDX_PARSER = (
    MarkdownIt("commonmark")
    .enable("table")
    .disable("code")
    .use(admon_plugin)
    .use(footnote_plugin)
    .use(deflist_plugin)
)

# a Material content tab, ``=== "Label"`` (``===+`` opens it first), read as an admonition
_TAB = re.compile(r'^(\s*)===\+?[ \t]+"([^"]*)"[ \t]*$')
# a PyMdown block's opening line, ``/// type | title``, or a Docusaurus, Starlight or MyST
# container's, ``:::tip Title``, ``:::tip[Title]``, ``:::tip{icon="heart"}`` or ``:::{note}``;
# closed by the same run of marks
_BLOCK = re.compile(
    r"^(/{3,})[ \t]*([\w-]+)(?:[ \t]*\|[ \t]*(.*?))?[ \t]*$"
    r"|^(:{3,})\{?([A-Za-z][\w-]*)\}?(?:\[(.*?)\]|[ \t]+(.*?))?(?:\{[^{}]*\})?[ \t]*$"
)
_FENCE = re.compile(r"^\s*(?:(?:[-*+]|\d+[.)])\s+)?(`{3,}(?![^`]*`)|~{3,})")
# VitePress's container, ``::: tip Title`` (a space after the marks; ``::: details``,
# ``::: code-group``): told from mkdocstrings' directive below by the bare ``:::`` closing it
_SPACED_BLOCK = re.compile(r"^(:{3,})[ \t]+([A-Za-z][\w-]*)(?:[ \t]+(.*?))?[ \t]*$")
# containers that only group what they hold (VitePress's tabs of code blocks): no call-out
_PLAIN_BLOCKS = frozenset({"code-group", "raw", "v-pre"})
# VitePress's containers (and its call-outs' usual names); a spaced line of another name is a
# container only with a title: ``::: httpx`` alone is mkdocstrings' directive
_VITEPRESS_KINDS = _PLAIN_BLOCKS | {"info", "tip", "warning", "danger", "details", "note"}
# mkdocstrings' directive, ``::: package.module.Name`` and its options: the site builds the
# API reference there; the page holds none of its words
_AUTODOC = re.compile(r"^:::\s+[\w.]+")
# pymdownx.snippets' include, ``--8<-- "file.md"`` (a line of its own, or a block of file
# names between two ``--8<--`` lines): the site puts the file there; the page holds none of it
_SNIPPET = re.compile(r"""^\s*--8<--\s+(["'])[^"']+\1\s*$""")
_SNIPPET_MARK = "--8<--"
# a GitHub alert's first words inside a block quote
_ALERT = re.compile(r"^\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*", re.IGNORECASE)


# MyST (Sphinx's Markdown): a directive is a fence whose info is ``{name} arguments``; its
# body opens with options (``:maxdepth: 2``). A target label, ``(name)=`` on a line of its
# own, is an anchor; an attribute block, ``{.hide-header}`` or ``{#id}`` on a line of its
# own, is markup for the element after it.
_MYST_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,}|:{3,})\{([\w:.-]+)\}[ \t]*(.*?)\s*$")
_MYST_OPTION = re.compile(r"^\s*:[\w-]+:(?:\s.*)?$")
_MYST_LABEL = re.compile(r"^\s*\([^()\s][^()]*\)=\s*$")
_MYST_ATTRS = re.compile(r"^\s*\{[.#][\w-]+(?:\s+[.#][\w-]+)*\}\s*$")
# an rST directive inside ``{eval-rst}``: ``.. code-block:: bash``, ``.. click:example::``
_RST_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+([\w:.-]+)::[ \t]*(.*?)\s*$")
#: rST directives whose body is code (Sphinx's and its extensions': an example that runs)
_RST_CODE = frozenset(
    {"click:example", "click:run", "doctest", "testcode", "ipython", "jupyter-execute"}
)
#: directives the built site fills from elsewhere (a table of contents, an API page from
#: docstrings — every ``auto…`` one —, an included file, a picture): the page holds none of
#: their words (``_dropped``)
_MYST_DROPPED = frozenset(
    {
        "toctree", "contents", "currentmodule", "module", "include", "literalinclude",
        "image", "raw", "index", "highlight", "py:module", "py:currentmodule", "meta",
    }
)  # fmt: skip
#: directives whose body is code in the language their argument names
_MYST_CODE = frozenset({"code-block", "code", "sourcecode", "code-cell"})
#: directives whose body is Markdown the site lays out (tabs, cards, a list as a table)
_MYST_PROSE = frozenset(
    {
        "tab-set", "card", "grid", "grid-item", "grid-item-card", "div",
        "container", "list-table", "table", "glossary", "margin", "epigraph", "pull-quote",
        "highlights", "hlist", "centered", "rubric", "figure", "only",
    }
)  # fmt: skip
#: call-outs, read as an admonition: their title, then their body
_MYST_CALLOUTS = {
    "versionadded": "Added in version",
    "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version",
    "versionremoved": "Removed in version",
}
_MYST_CALLOUT_KINDS = frozenset(
    {
        "note", "warning", "tip", "important", "caution", "attention", "danger", "error",
        "hint", "seealso", "admonition", "dropdown", "topic", "sidebar", *_MYST_CALLOUTS,
    }
)  # fmt: skip
#: a tab (sphinx-design's ``{tab-item} Linux``, sphinx-tabs' ``.. group-tab:: Bash``): read as
#: a Material content tab is, "Linux: …" and its body
_TAB_KINDS = frozenset({"tab-item", "tab", "group-tab"})


def _myst_as_markdown(text: str, depth: int = 0) -> str:
    """MyST's directives, labels and attribute blocks as the Markdown the site renders.

    A call-out (``{note}``, ``{versionadded} 4.0``, ``{admonition} Title``) becomes the
    admonition the parser reads; a code directive a code block in its language; an
    ``{eval-rst}`` body its reStructuredText read alike (``_rst_as_markdown``); an object's
    description (``{py:function} send(to)``, ``{envvar} CLICK_HOME``) its signature as code,
    then its prose; the directives the site fills from elsewhere (``{toctree}``,
    ``{contents}``, ``{currentmodule}``, ``{image}``…) and labels and attribute blocks are
    dropped; a layout directive (``{tab-item} Linux``, ``{list-table}``, a figure's caption)
    is read as its body. Any other is a chunk of code in the language it names (R
    Markdown's and Quarto's ```` ```{r} ````, ```` ```{python} ````). Code fences, and a
    directive indented as code, are left as they are; directives nest at most
    ``MAX_DIRECTIVE_DEPTH`` deep (deeper ones are read as text).
    """
    out: list[str] = []
    fence = ""
    lines = text.splitlines()
    at = 0
    while at < len(lines):
        line = lines[at]
        at += 1
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            out.append(line)
            continue
        directive = _MYST_FENCE.match(line) if depth < MAX_DIRECTIVE_DEPTH else None
        if directive is not None and (
            len(directive.group(1).expandtabs(4)) >= 4  # an indented code block shows it
            or (directive.group(2)[0] == "`" and "`" in directive.group(4))  # inline code
        ):
            directive = None
        if directive is None:
            if opened:
                fence = opened.group(1)
            elif _MYST_LABEL.match(line) or _MYST_ATTRS.match(line):
                continue
            out.append(line)
            continue
        indent, marks, name, argument = directive.groups()
        end = next(
            (
                j
                for j in range(at, len(lines))
                if lines[j].strip().startswith(marks[0] * len(marks))
                and not lines[j].strip().lstrip(marks[0])
            ),
            len(lines),
        )
        raw = lines[at:end]
        at = end + 1
        body = raw[_options_end(raw) :]
        name = name.lower()
        if _dropped(name):
            continue
        if name in _MYST_CODE:
            out += [f"{indent}{x}" for x in _code(argument.split()[0] if argument else "", body)]
        elif name in _MYST_CALLOUT_KINDS or name in _TAB_KINDS or _DESCRIBED.match(name):
            inner = _myst_as_markdown("\n".join(_dedent(body)), depth + 1).splitlines()
            out += [f"{indent}{x}" if x.strip() else "" for x in _callout(name, argument, inner)]
        elif name == "eval-rst":
            rst = _rst_as_markdown(_dedent(body), depth + 1)
            out += [f"{indent}{x}" if x.strip() else "" for x in rst]
            out.append("")
        elif name in _MYST_PROSE:
            out += [f"{indent}{argument}", ""] if argument and name not in _UNSHOWN_ARGUMENT else []
            out += _myst_as_markdown("\n".join(body), depth + 1).splitlines()
            out.append("")
        else:  # an R Markdown or Quarto chunk (```{r}, ```{python}): code in that language
            out += [f"{indent}{x}" for x in _code(name, raw)]
    return "\n".join(out)


#: How deep directives nest before the inner ones are read as text (a page of unclosed
#: directives would otherwise recurse once per line).
MAX_DIRECTIVE_DEPTH = 12
#: an object's description: its argument is a signature or a name (``{py:function} f(x)``)
_DESCRIBED = re.compile(
    r"^(?:(?:py|js|c|cpp|rst|std):)?(?:function|class|method|attribute|data|exception|"
    r"decorator|property|envvar|option|cmdoption|confval|describe|object|program)$"
)
#: layout directives whose argument is no text of the page (a picture's path, a condition)
_UNSHOWN_ARGUMENT = frozenset({"figure", "only"})
#: rST call-outs whose first line's words open their body (``.. warning:: Do not …``); other
#: directives' are an argument: a title (``.. admonition:: Title``), a version, a label
_RST_BODY_ON_FIRST_LINE = frozenset(
    {"note", "warning", "tip", "important", "caution", "attention", "danger", "error", "hint",
     "seealso"}
)  # fmt: skip
#: a code block's caption option, ``:caption: flaskr/db.py``
_CAPTION = re.compile(r"^\s*:caption:\s+(\S.*?)\s*$")
# an rST line that is no directive but starts with "..": a comment, a label
# (``.. _arguments:``), a substitution (``.. |name| replace:: x``): nothing the site shows
_RST_COMMENT = re.compile(r"^\s*\.\.(?:\s|$)")
# an rST section title's underline: one punctuation mark repeated (``~~~~``, ``----``)
_RST_UNDERLINE = re.compile(r"""^([=\-~^"'`#*+:.])\1{2,}\s*$""")
# an rST hyperlink, ```the docs <https://…>`_``: the site shows its text
_RST_LINK = re.compile(r"`([^`<>]+?)\s*<[^`<>]+>`__?")


def _options_end(lines: list[str]) -> int:
    """Where a directive's body starts: after its options (``:key: value``) and blank lines."""
    n = 0
    while n < len(lines) and (_MYST_OPTION.match(lines[n]) or not lines[n].strip()):
        n += 1
    return n


def _code(language: str, body: list[str]) -> list[str]:
    """``body`` as a fenced code block, its fence longer than any run of backticks in it."""
    longest = max((len(m) for x in body for m in re.findall(r"`{3,}", x)), default=2)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{language}", *body, fence]


#: an rST list item's first line: ``- x``, ``* x``, ``+ x``, ``1. x``, ``#. x``, ``(a) x``, ``a) x``
_RST_ITEM = re.compile(r"^\s*(?:[-*+•]|\(?(?:\d+|#|[A-Za-z]|[ivxlcdm]+)[.)])\s+\S")
#: an auto-numbered item, ``#. x``, which CommonMark reads as text: it numbers ``1. x``
_RST_AUTO_NUMBER = re.compile(r"^(\s*)#\.(\s)")
#: a named reference, ```the tutorial`_``, and a footnote's or citation's mark (``[#]_``)
_RST_REFERENCE = re.compile(r"`([^`<>]+?)`__?(?![\w`])")
_RST_FOOTNOTE_MARK = re.compile(r"\s?\[(?:#[\w-]*|\*|\d+|[A-Za-z][\w.-]*)\]_(?!\w)")
#: a grid table's border: ``+-----+----+`` (``=`` under its header)
_RST_GRID_BORDER = re.compile(r"^\+(?:[-=]+\+)+\s*$")
#: a simple table's border: runs of ``=`` parted by spaces, one run per column
_RST_TABLE_BORDER = re.compile(r"^=+(?: +=+)+\s*$")
#: a substitution's definition, ``.. |fetch| replace:: ``fetch()`` `` or ``.. |x| image:: x.png``
_RST_SUBSTITUTION = re.compile(r"^\s*\.\.\s+\|([^|]+)\|\s+([\w-]+)::\s*(.*)$")
#: an inline literal, ````x````, kept as it is (its parentheses keep it in ``re.split``'s list)
_RST_LITERAL = re.compile(r"(``.+?``)", re.S)
#: a reference by a name of one word, ``Kerberos_``, ``requests-oauthlib_``
_RST_NAMED = re.compile(r"(?<![\w`/:.-])([A-Za-z][\w.+-]*?[A-Za-z0-9])__?(?![\w`])")
#: a substitution left when every one the page defines is replaced: Sphinx's |version|
_RST_UNDEFINED = re.compile(r"\|(?:version|release|today)\|_?")
#: a field at the head of an rST page (``:orphan:``, ``:tocdepth: 2``): metadata for Sphinx
_RST_FIELD = re.compile(r"^:[\w -]+:(?:\s.*)?$")


def rst_as_markdown(text: str) -> str:
    """A reStructuredText page (``.rst``) as the Markdown of what its Sphinx site shows.

    Section titles (underlined, or over- and underlined, by any punctuation mark) become
    headings, one level per adornment style in the order the page first uses it, as rST
    defines them; a transition (a lone line of marks) and the fields heading the page
    (``:orphan:``) are dropped. The rest is read as an ``{eval-rst}`` body is
    (``_rst_as_markdown``): directives by their kind, literal blocks as code, block quotes
    and definitions as prose.
    """
    lines = _rst_substituted(text.expandtabs(8).splitlines())
    out: list[str] = []
    styles: list[tuple[str, bool]] = []  # adornment styles, in the order first used
    started = False  # past the fields heading the page
    at = 0
    while at < len(lines):
        line = lines[at]
        title = _rst_title(lines, at)
        if title is not None:
            words, style, used = title
            if style not in styles:
                styles.append(style)
            level = min(styles.index(style) + 1, 6)
            out += ["", f"{'#' * level} {words}", ""]
            at += used
            started = True
            continue
        at += 1
        if not started and _RST_FIELD.match(line):
            continue
        table_at = (
            _rst_simple_table if _RST_TABLE_BORDER.match(line)
            else _rst_grid_table if _RST_GRID_BORDER.match(line)
            else None
        )  # fmt: skip
        table = table_at(lines, at - 1) if table_at and (not out or not out[-1].strip()) else None
        if table is not None:  # a simple or grid table: a Markdown one, a row per row
            rows, used = table
            out += ["", *rows, ""]
            at += used - 1
            continue
        started = started or bool(line.strip())
        if _RST_UNDERLINE.match(line) and (not out or not out[-1].strip()):
            continue  # a transition between paragraphs
        out.append(line)
    return "\n".join(_rst_as_markdown(out))


#: ASCII punctuation that Markdown may read as markup; a plain-text file means it literally.
_MARKUP = re.compile(r"([!-/:-@\[-`{-~])")
#: A line of a plain-text list (a package, a setting, a comment, an item).
_TEXT_ITEM = re.compile(r"^\s*(?:[-*+•#]|\d+[.)])\s|^\s*[\w.\[\],-]+\s*(?:[=<>!~]=?|@)")
#: Lines shorter than this, every one but the last, are lines as written, not wrapped prose.
_WRAPPED_MIN = 50


def text_as_markdown(text: str) -> str:
    """A plain-text file (``.txt``) as the Markdown of itself, shown as it is written.

    Nothing in it is markup: ``# comment`` in a ``requirements.txt`` is no heading, and
    ``*`` no emphasis. A paragraph (lines between blank lines) of flowing, hard-wrapped text
    is one paragraph of prose; a paragraph of short lines, or of list items, settings or
    pinned packages, keeps its lines as written (a ``text`` code block).
    """
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.expandtabs(8).strip("\n")):
        lines = [line.rstrip() for line in paragraph.splitlines() if line.strip()]
        if not lines:
            continue
        items = sum(bool(_TEXT_ITEM.match(line)) for line in lines)
        short = all(len(line.strip()) < _WRAPPED_MIN for line in lines[:-1])
        if len(lines) > 1 and (short or 2 * items >= len(lines)):
            ticks = max((len(m) for m in re.findall(r"`+", paragraph)), default=0)
            fence = "`" * max(3, ticks + 1)
            kept = textwrap.dedent("\n".join(lines)).splitlines()
            out.append("\n".join([f"{fence}text", *kept, fence]))
        else:
            out.append(_MARKUP.sub(r"\\\1", " ".join(line.strip() for line in lines)))
    return "\n\n".join(out)


def _rst_substituted(lines: list[str]) -> list[str]:
    """``lines`` with each ``|name|`` that a ``.. |name| replace:: text`` defines replaced.

    A reference to it (``|fetch|_``) reads as its text too; a picture's (``.. |logo|
    image:: logo.png``) reads as nothing. Definitions are comments to the reader after.
    """
    defined: dict[str, str] = {}
    for line in lines:
        found = _RST_SUBSTITUTION.match(line)
        if found is not None:
            name, kind, value = found.groups()
            defined[name] = value.strip() if kind == "replace" else ""
    if not defined:
        return lines
    used = re.compile(r"\|(" + "|".join(re.escape(n) for n in defined) + r")\|(?:__?)?")
    return [
        line if _RST_SUBSTITUTION.match(line) else used.sub(lambda m: defined[m.group(1)], line)
        for line in lines
    ]


#: How many lines a simple table may take (its bottom border is looked for no further)
MAX_TABLE_LINES = 2000


def _rst_simple_table(lines: list[str], at: int) -> tuple[list[str], int] | None:
    """The simple table whose top border is ``lines[at]``, as Markdown rows; else None.

    Its columns are the border's runs of ``=``; a line whose first column is blank continues
    the row above it; a second border under the first rows makes them the header. Returns
    the rows (header, separator, body) and how many lines the table took.
    """
    border = lines[at]
    spans = [(m.start(), m.end()) for m in re.finditer(r"=+", border)]
    end = next(
        (
            j
            for j in range(at + 1, min(len(lines), at + MAX_TABLE_LINES))
            if _RST_TABLE_BORDER.match(lines[j])
            and lines[j].rstrip() == border.rstrip()
            and (j + 1 == len(lines) or not lines[j + 1].strip())
        ),
        None,
    )
    if end is None or end == at + 1:
        return None
    rows: list[list[str]] = []
    header = 0
    for line in lines[at + 1 : end]:
        if _RST_TABLE_BORDER.match(line):
            header = header or len(rows)
            continue
        if not line.strip():
            continue
        cells = [
            line[start : spans[n + 1][0] if n + 1 < len(spans) else len(line)].strip()
            for n, (start, _) in enumerate(spans)
        ]
        if rows and not cells[0]:
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
        else:
            rows.append(cells)
    return (_markdown_table(rows, header), end - at + 1) if rows else None


def _rst_grid_table(lines: list[str], at: int) -> tuple[list[str], int] | None:
    """The grid table whose top border is ``lines[at]``, as Markdown rows; else None.

    A row is the lines between two borders, each cell's lines joined; a border of ``=``
    closes the header. A row whose cells span columns keeps the cells it has. Returns the
    rows and how many lines the table took.
    """
    end = at + 1
    while end < min(len(lines), at + MAX_TABLE_LINES) and lines[end][:1] in ("+", "|"):
        end += 1
    if end - at < 3 or not _RST_GRID_BORDER.match(lines[end - 1]):
        return None
    rows: list[list[str]] = []
    header = 0
    cells: list[str] = []
    for line in lines[at + 1 : end]:
        if _RST_GRID_BORDER.match(line):  # a row ends
            if cells:
                rows.append(cells)
                cells = []
            header = header or (len(rows) if "=" in line else 0)
            continue
        parts = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and len(parts) == len(cells):
            cells = [f"{a} {b}".strip() for a, b in zip(cells, parts, strict=True)]
        else:
            cells = [*cells, *parts] if cells else parts
    return (_markdown_table(rows, header), end - at) if rows else None


def _markdown_table(rows: list[list[str]], header: int) -> list[str]:
    """A table's rows as Markdown's, its first ``header`` rows (one when 0) above the rule.

    Every row is as wide as the widest; a ``|`` in a cell is escaped.
    """
    width = max(len(row) for row in rows)
    shown = [
        "| " + " | ".join(c.replace("|", "\\|") for c in row + [""] * (width - len(row))) + " |"
        for row in rows
    ]
    header = header or 1
    return [*shown[:header], "|" + "|".join("---" for _ in range(width)) + "|", *shown[header:]]


def _rst_title(lines: list[str], at: int) -> tuple[str, tuple[str, bool], int] | None:
    """The section title at ``lines[at]``: its words, adornment style and lines; else None.

    A title is a line of text under a line of one repeated punctuation mark as long (an
    underline; docutils takes one of 4 marks or more under a longer title), or between two
    such lines of the same mark (an overline too). Only a title at the page's margin counts:
    indented, the lines are a block's (code, a quote).
    """
    line = lines[at]
    below = lines[at + 1] if at + 1 < len(lines) else ""
    mark = _RST_UNDERLINE.match(line)
    if mark and at + 2 < len(lines):  # an overline, the title, then its underline
        words = lines[at + 1].strip()
        under = lines[at + 2].rstrip()
        if (
            words
            and under == line.rstrip()
            and len(under) >= min(len(words), 4)
            and not _RST_UNDERLINE.match(lines[at + 1])
        ):
            return words, (mark.group(1), True), 3
        return None
    if not line.strip() or line[0].isspace() or (at and lines[at - 1].strip()):
        return None
    under_mark = _RST_UNDERLINE.match(below)
    # docutils takes an underline shorter than its title (with a warning) from 4 marks on
    short = len(below.rstrip()) < min(len(line.rstrip()), 4)
    if under_mark is None or below[0].isspace() or short:
        return None
    return line.strip(), (under_mark.group(1), False), 2


def _rst_as_markdown(lines: list[str], depth: int = 0) -> list[str]:
    """ReStructuredText (an ``{eval-rst}`` body) as the Markdown of what its site shows.

    Directives by their kind, as ``_myst_as_markdown`` reads MyST's: ``.. code-block:: bash``
    (and an example that runs, ``.. click:example::``) a code block, ``.. caution::`` an
    admonition, ``.. autoclass::`` and the like dropped, ``.. tabs::`` and ``.. group-tab::
    Bash`` their label and body; a paragraph ending in ``::`` introduces the literal block
    indented under it; comments, labels and substitutions are dropped, a section title's
    underline too, a hyperlink reads as its text. The rest (paragraphs, lists, ````code````)
    reads as Markdown.
    """
    out: list[str] = []
    para: list[str] = []  # the lines of the paragraph being read: its markup spans lines

    def flush() -> None:
        if para:
            out.extend(_rst_inline("\n".join(para)).split("\n"))
            para.clear()

    # an auto-numbered list's next number per indentation: its items are numbered as the
    # site numbers them even when a tab or a code block between them ends Markdown's list
    numbers: dict[int, int] = {}

    def numbered(line: str) -> str:
        nonlocal numbers
        column = len(line) - len(line.lstrip())
        item = _RST_AUTO_NUMBER.match(line)
        numbers = {k: n for k, n in numbers.items() if k < column or (item and k == column)}
        if item is None:
            return line
        numbers[column] = numbers.get(column, 0) + 1
        return _RST_AUTO_NUMBER.sub(rf"\g<1>{numbers[column]}.\2", line)

    parents: list[int] = []  # _parents(lines), once a line asks
    at = 0
    while at < len(lines):
        line = lines[at]
        at += 1
        directive = _RST_DIRECTIVE.match(line)
        comment = directive is None and _RST_COMMENT.match(line) is not None
        literal = directive is None and not comment and line.rstrip().endswith("::")
        if directive is None and not comment and not literal:
            if not line.strip():
                flush()
                out.append(line)
                continue
            if _RST_UNDERLINE.match(line) and (para or (out and out[-1].strip())):
                flush()
                out.append("")  # the title above stays a paragraph of its own
                continue
            parents = parents or _parents(lines)
            quoted = _rst_quoted(lines, at - 1, parents)
            if quoted:  # a block quote, a definition: prose, which CommonMark reads as code
                flush()
                block = lines[at - 1 : at - 1 + quoted]
                at += quoted - 1
                inner = _dedent(block)
                out += [""] if out and out[-1].strip() and not _RST_ITEM.match(out[-1]) else []
                out += _rst_as_markdown(inner, depth + 1) if depth < MAX_DIRECTIVE_DEPTH else inner
                out.append("")
                continue
            if line.lstrip().startswith(">>> ") and not para and (not out or not out[-1].strip()):
                end = next((j for j in range(at, len(lines)) if not lines[j].strip()), len(lines))
                out += _code("pycon", _dedent(lines[at - 1 : end]))
                at = end
                continue
            para.append(numbered(line))
            continue
        if not literal:
            flush()
        column = len(line) - len(line.lstrip())
        numbers = {k: n for k, n in numbers.items() if k < column}  # a list ends before it
        end = at
        while end < len(lines) and (
            not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > column
        ):
            end += 1
        block = lines[at:end]
        at = end
        while block and not block[-1].strip():
            block.pop()
        if comment:
            continue
        block = block[next((n for n, x in enumerate(block) if x.strip()), len(block)) :]
        options = block[: _options_end(block)] if directive else []
        block = block[len(options) :]
        if literal:  # "Example::" → "Example:" and its code; a lone "::" says nothing
            lead = line.rstrip()[:-2].rstrip()
            lead = f"{lead}:" if lead and not lead.endswith(":") else lead
            para += [lead] if lead else []
            flush()
            out += [""] if lead else []
            out += [*_code("", _dedent(block)), ""] if any(x.strip() for x in block) else []
            continue
        _, name, argument = directive.groups()  # type: ignore[union-attr]
        name = name.lower()
        body = _dedent(block)
        if argument and name in _RST_BODY_ON_FIRST_LINE:  # ".. warning:: Do not …": its text
            body, argument = [argument, *body], ""
        inner = _rst_as_markdown(body, depth + 1) if depth < MAX_DIRECTIVE_DEPTH else body
        if _dropped(name):
            continue
        if name in _MYST_CODE or name in _RST_CODE:
            language = argument.split()[0] if argument else "python" if name in _RST_CODE else ""
            # its caption, shown above it (often the file it goes in: "flaskr/db.py")
            caption = next((m.group(1) for x in options if (m := _CAPTION.match(x))), "")
            out += ["", f"{caption.rstrip(':')}:", ""] if caption else []
            out += ["", *_code(language, body), ""]
        elif name in _MYST_CALLOUT_KINDS or name in _TAB_KINDS or _DESCRIBED.match(name):
            out += _callout(name, argument, inner)
        else:  # a set of tabs, a list-table, a container: its label, then its body
            # an extension's own directive (``.. pip-command-usage:: freeze``) is filled in
            # by its code when the site is built: its argument is that code's input, not text
            shown = argument and name in _MYST_PROSE and name not in _UNSHOWN_ARGUMENT
            out += ["", argument, ""] if shown else [""]
            out += inner
            out.append("")
    flush()
    return out


def _parents(lines: list[str]) -> list[int]:
    """For each line, the nearest line above it that is less indented and not blank (-1)."""
    stack: list[tuple[int, int]] = []  # (indentation, line), more indented towards the end
    parents: list[int] = []
    for n, line in enumerate(lines):
        if not line.strip():
            parents.append(-1)
            continue
        column = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= column:
            stack.pop()
        parents.append(stack[-1][1] if stack else -1)
        stack.append((column, n))
    return parents


def _rst_inline(text: str) -> str:
    """An rST paragraph's inline markup as what the site shows, outside its ````literals````.

    A hyperlink (```the docs <https://…>`_``, over a line break too) and a named reference
    (```wall clock`_``, ``Kerberos_``) read as their text; a footnote's mark (``[#]_``), an
    escaped space (a backslash and a space) and a substitution no page defines
    (``|version|``, Sphinx's own) read as nothing.
    """
    pieces = _RST_LITERAL.split(text)
    for n in range(0, len(pieces), 2):  # the text between literals
        piece = _RST_FOOTNOTE_MARK.sub("", _RST_LINK.sub(r"\1", pieces[n]))
        piece = _RST_NAMED.sub(r"\1", _RST_REFERENCE.sub(r"\1", piece))
        pieces[n] = _RST_UNDEFINED.sub("", piece.replace("\\ ", ""))
    return "".join(pieces)


def _rst_quoted(lines: list[str], at: int, parents: list[int]) -> int:
    """How many lines from ``lines[at]`` are an indented block of prose (0: none there).

    An indented line opens one (a block quote, or a definition under its term) unless the
    nearest line less indented above it is a list item's: there it is the item's own text,
    which Markdown reads alike. Literal blocks and directives are read before this is asked.
    ``parents``: ``_parents(lines)``.
    """
    line = lines[at]
    column = len(line) - len(line.lstrip())
    if not column or not line.strip():
        return 0
    if parents[at] >= 0 and _RST_ITEM.match(lines[parents[at]]):
        return 0
    end = at + 1
    while end < len(lines) and (
        not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) >= column
    ):
        end += 1
    while end > at + 1 and not lines[end - 1].strip():
        end -= 1
    return end - at


def _dropped(name: str) -> bool:
    """Whether a directive (MyST's or rST's) is one the site fills from elsewhere."""
    return name in _MYST_DROPPED or name.startswith("auto")


def _callout(name: str, argument: str, inner: list[str]) -> list[str]:
    """A call-out or a tab as the admonition the parser reads; its title alone when empty."""
    if _DESCRIBED.match(name):  # an object's signature or name, as the site shows it: code
        title = f"`{argument}`" if argument and "`" not in argument else argument
    elif name in _MYST_CALLOUTS:
        title = f"{_MYST_CALLOUTS[name]} {argument}".strip()
    else:
        title = argument or name.capitalize()
    title = title.replace('"', "'")
    if not any(x.strip() for x in inner):  # ```{versionadded} 4.0``` and nothing else
        return ["", f"{title}.", ""] if title and name not in _TAB_KINDS else []
    plain = name in _MYST_CALLOUTS or name not in _MYST_CALLOUT_KINDS  # versions, signatures
    kind = "tab" if name in _TAB_KINDS else "note" if plain else name
    # two blank lines in a row end an admonition's body (mdit_py_plugins' admon): one stays
    body = [x for n, x in enumerate(inner) if x.strip() or (n and inner[n - 1].strip())]
    return ["", f'!!! {kind} "{title}"', "", *(f"    {x}" if x.strip() else "" for x in body), ""]


def _dedent(lines: list[str]) -> list[str]:
    """``lines`` without the indentation they all share (``textwrap.dedent``)."""
    return textwrap.dedent("\n".join(lines)).split("\n") if lines else []


#: A Hugo shortcode alone on its line: ``{{% note %}}``, ``{{< /tab >}}``, ``{{< tabs a="b" >}}``
_HUGO_LINE = re.compile(r"^\s*\{\{([<%])\s*(/?)\s*([\w-]+)(.*?)\s*[>%]\}\}\s*$")
#: A link target Hugo resolves, ``{{< relref "docs" >}}``: the page it names
_HUGO_REF = re.compile(r"""\{\{[<%]\s*(?:rel)?ref\s+["']([^"']*)["']\s*[>%]\}\}""")
#: Any other shortcode inside a line: what the theme draws there (an icon, a badge)
_HUGO_ANY = re.compile(r"\{\{[<%].*?[>%]\}\}")
_HUGO_PARAM = re.compile(r"""(\w+)=["']([^"']*)["']""")
#: Shortcodes a theme draws as a call-out around their body
_HUGO_CALLOUTS = frozenset(
    {"note", "tip", "info", "hint", "warning", "caution", "danger", "important", "alert",
     "admonition", "callout"}
)  # fmt: skip


#: An MDX page's ES module lines: what its components come from, never words
_MDX_ESM = re.compile(
    r"""^(?:import\s+(?:["'{]|[\w*{}\s,]+?\s+from\s+["'])"""
    r"|export\s+(?:const|let|var|function|async|default|class|\{|\*))"
)
#: A JSX comment, ``{/* … */}``
_MDX_COMMENT = re.compile(r"\{/\*.*?\*/\}")
#: A JSX element alone on its line: ``<TabItem value="npm" label="npm">``, ``</Tabs>``,
#: ``<Image src={x} />`` (a component's name is capitalized; HTML's are not)
_MDX_TAG = re.compile(r"^\s*<(/?)([A-Z][\w.]*)((?:\s+[^<>]*?)?)\s*(/?)>\s*$")
_MDX_ATTR = re.compile(r"""(\w+)=(?:"([^"]*)"|'([^']*)'|\{["'`]([^"'`]*)["'`]\})""")
#: Components a site draws as a call-out around their body (Docusaurus, Starlight, Nextra)
_MDX_CALLOUTS = frozenset({"Admonition", "Aside", "Callout", "Note", "Tip", "Warning"})


def is_mdx(text: str) -> bool:
    """A ``.md`` page written as MDX, as Docusaurus reads every ``.md`` page by default.

    It has an ``import``/``export`` line at the start of a line, or a component opened and
    closed on lines of their own (``<Tabs>`` … ``</Tabs>``), outside code. Plain Markdown has
    neither: an HTML tag's name is lower case, and a sentence does not open ``import X from "``.
    """
    fence = ""
    opened: set[str] = set()
    for line in text.splitlines():
        fence, is_code_line = fence_after(line, fence)
        if is_code_line:
            continue
        if _MDX_ESM.match(line):
            return True
        tag = _MDX_TAG.match(line)
        if tag is not None and not tag.group(4):  # (a self-closing one proves nothing)
            if not tag.group(1):
                opened.add(tag.group(2))
            elif tag.group(2) in opened:
                return True
    return False


def mdx_as_markdown(text: str) -> str:
    """An MDX page (``.mdx``: Docusaurus, Starlight, Nextra) as the Markdown its site shows.

    Its ``import``/``export`` lines and JSX comments are code that builds the page, never
    words; a tab (``<TabItem label="npm">``, ``<Tab label=…>``) reads as its label and body,
    like a Material tab; an ``<Admonition type="warning">`` (or ``<Aside>``, ``<Callout>``)
    as a call-out; any other component (``<Tabs>``, ``<Image … />``) is dropped, what it
    wraps kept, its ``title`` and ``description`` said (a ``<LinkCard title="starlight-blog"
    description="Add a blog…" />`` is all a page says of that plugin). A component's tag may
    run over several lines, or hold its body on its own line. MDX has no indented code:
    indentation inside components is layout, so a code fence indented under a component is
    read where its list item (or the page) puts it. Code blocks are left as written.
    """
    out: list[str] = []
    fence, shift = "", 0  # the open code fence, and the indentation its lines lose
    item = 0  # the content column of the list item being read (0: none)
    opened: list[str] = []  # the components read as blocks, innermost last
    in_esm = False  # in an import or export block: it runs to the next blank line (MDX)
    for line in _mdx_lines(text):
        was_open = bool(fence)
        fence, is_code_line = fence_after(line, fence)
        if is_code_line:
            if not was_open:  # an opening fence: read where its item or the page puts it
                indent = len(line) - len(line.lstrip())
                shift = max(0, indent - item)
            out.append(_unindented(line, shift))
            continue
        line = _MDX_COMMENT.sub("", line)  # (one on a line of its own, or inside one)
        in_esm = bool(line.strip()) and (in_esm or bool(_MDX_ESM.match(line)))
        if in_esm:
            continue
        indent = len(line) - len(line.lstrip())
        tag = _MDX_TAG.match(line)
        if tag is None:
            if (marker := _MDX_ITEM.match(line)) is not None:
                item = len(marker.group(0))
            elif line.strip() and indent < item:
                item = 0
            out.append(line)
            continue
        closing, name, attrs, alone = tag.groups()
        if closing:
            if opened and opened[-1] == name:
                opened.pop()
                out += ["", "///", ""]
            continue
        params = {m.group(1): next(g for g in m.groups()[1:] if g is not None)
                  for m in _MDX_ATTR.finditer(attrs)}  # fmt: skip
        said = ": ".join(p for p in (params.get("title"), params.get("description")) if p)
        lead = " " * min(indent, item)  # inside a list item: its words stay in the item
        if len(opened) >= MAX_DIRECTIVE_DEPTH:  # (deeper: its body is kept as is)
            continue
        if name in ("TabItem", "Tab") and not alone:
            label = params.get("label") or params.get("value") or "Tab"
            if item:  # a block would end the list: the label leads the tab's body
                out += ["", f"{lead}{label}:", ""]
            else:
                opened.append(name)
                out += ["", f"/// tab | {label}", ""]
        elif name in _MDX_CALLOUTS and not alone:
            kind = params.get("type") or ("note" if name in ("Admonition", "Aside") else name)
            title = params.get("title", "")
            if item:
                out += ["", f"{lead}{title or kind.capitalize()}:", ""]
            else:
                opened.append(name)
                out += ["", f"/// {kind.lower()}" + (f" | {title}" if title else ""), ""]
        elif said:  # a card, a link card: its title and description are what it says
            out += ["", f"{lead}{said}" if alone else f"{lead}{said.rstrip(':.')}:", ""]
    return "\n".join(out)


#: A list item's marker and the spaces after it (its content starts after them)
_MDX_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])[ \t]+(?=\S)")
#: A component's opening tag, its body and its closing tag on one line
_MDX_INLINE = re.compile(r"^(\s*)(<([A-Z][\w.]*)(?:\s[^<>]*)?>)(.+)(</\3>)\s*$")


def _mdx_lines(text: str) -> list[str]:
    """``text``'s lines, each component's tag on one line of its own.

    A tag that runs over several lines (props one per line) is joined into one; a component
    written on one line with its body (``<TabItem label="npm">npm i</TabItem>``) is split
    into its tag, its body and its closing tag.
    """
    out: list[str] = []
    fence = ""
    lines = text.splitlines()
    # the characters tags may be read over, in all: a page of tags that never close
    # (``<Foo bar={`` on 40,000 lines) is read in linear time, the rest of its lines as text
    budget = 2 * len(text) + 10_000
    at = 0
    while at < len(lines):
        line = lines[at]
        at += 1
        fence, is_code_line = fence_after(line, fence)
        if is_code_line or not re.match(r"^\s*<[A-Z]", line) or budget <= 0:
            out.append(line)
            continue
        tag, end = _tag_end(lines, at - 1)
        budget -= sum(len(x) + 1 for x in lines[at - 1 : (end + 1 if tag else at + MAX_TAG_LINES)])
        if tag is not None and end > at - 1:
            line, at = tag, end + 1
        inline = _MDX_INLINE.match(line)
        if inline is not None:
            indent, opening, _, body, closing = inline.groups()
            out += [f"{indent}{opening}", f"{indent}{body}", f"{indent}{closing}"]
        else:
            out.append(line)
    return out


def _tag_end(lines: list[str], at: int) -> tuple[str | None, int]:
    """The opening tag that starts on ``lines[at]`` as one line, and the line it ends on.

    ``None`` when it does not end within ``MAX_TAG_LINES`` lines (then the line is text).
    """
    depth, quote = 0, ""
    parts: list[str] = []
    for n in range(at, min(len(lines), at + MAX_TAG_LINES)):
        line = lines[n]
        start = line.index("<") + 1 if n == at else 0
        for i in range(start, len(line)):
            ch = line[i]
            if quote:
                quote = "" if ch == quote else quote
            elif ch in "\"'`":
                quote = ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth = max(0, depth - 1)
            elif ch == ">" and depth == 0:
                parts.append(line[: i + 1].strip() if n > at else line[: i + 1])
                rest = line[i + 1 :]
                joined = " ".join(parts)
                return (joined + rest if n > at else line), n
        parts.append(line.strip() if n > at else line.rstrip())
    return None, at


#: How many lines one component's opening tag may run over (its props, one per line)
MAX_TAG_LINES = 200


def _unindented(line: str, shift: int) -> str:
    """``line`` without up to ``shift`` characters of its leading whitespace."""
    strip = min(shift, len(line) - len(line.lstrip()))
    return line[strip:]


def fence_for(code: str) -> str:
    """Backticks that fence ``code``: more than any run in it (a page's own code blocks)."""
    longest = max((len(run) for run in re.findall(r"`{3,}", code)), default=2)
    return "`" * (longest + 1)


def fence_after(line: str, fence: str) -> tuple[str, bool]:
    """The code fence open after ``line`` ("" for none), and whether ``line`` is code's."""
    marks = _FENCE.match(line)
    if fence:
        mark = marks.group(1) if marks else ""
        closes = bool(mark) and mark[0] == fence[0] and len(mark) >= len(fence)
        return ("" if closes else fence), True
    return (marks.group(1), True) if marks else ("", False)


def _hugo_as_markdown(text: str) -> str:
    """Hugo's shortcodes read as the page they render: call-outs and tabs as PyMdown blocks.

    ``{{% note %}}`` … ``{{% /note %}}`` is a call-out ("Note: …"); a tab of ``{{< tabs
    tabName1="[project]" … >}}`` is titled by its name ("[project]:" and its code); a link to
    ``{{< relref "docs" >}}`` points at that page; any other shortcode (``{{< step >}}``, an
    icon) is the theme's markup, never words: it is dropped and what it wraps is kept. Code
    blocks are left as written.
    """
    if "{{" not in text:
        return text
    out: list[str] = []
    fence = ""
    names: dict[str, str] = {}  # the open tabs' names, by tab id
    opened: list[str] = []  # the shortcodes read as blocks, innermost last

    for line in text.splitlines():
        fence, is_code_line = fence_after(line, fence)
        if is_code_line:
            out.append(line)
            continue
        code = _HUGO_LINE.match(line)
        if code is None:
            out.append(_HUGO_ANY.sub("", _HUGO_REF.sub(r"\1", line)) if "{{" in line else line)
            continue
        _, closing, name, args = code.groups()
        name = name.lower()
        params: dict[str, str] = dict(_HUGO_PARAM.findall(args))
        if closing:
            if opened and opened[-1] == name:
                opened.pop()
                out += ["", "///", ""]
            continue
        if name == "tabs":
            for key, value in params.items():
                if key.startswith("tabID") and key[5:]:
                    names[value] = params.get(f"tabName{key[5:]}", value)
        elif len(opened) < MAX_DIRECTIVE_DEPTH and (name == "tab" or name in _HUGO_CALLOUTS):
            title = params.get("title") or names.get(params.get("tabID", ""), "")
            if name == "tab":
                title = title or params.get("name", "") or next(iter(params.values()), "Tab")
            opened.append(name)
            out += ["", f"/// {name}" + (f" | {title}" if title else ""), ""]
    return "\n".join(out)


def _callouts_as_admonitions(text: str) -> str:
    """Tabs, PyMdown blocks and colon containers rewritten as the admonitions the parser reads.

    Lines inside a fenced code block are left as they are; snippet includes (``--8<--``) are
    dropped, in code too. MyST's directives are read first (``_myst_as_markdown``).
    """
    text = _hugo_as_markdown(_myst_as_markdown(text))
    out: list[str] = []
    fence = ""
    # the marks (/// or :::) of each open block, innermost last, and whether it is a call-out
    # (its body indented under it) or only groups what it holds (``_PLAIN_BLOCKS``)
    blocks: list[tuple[str, bool]] = []
    base = 0  # the outermost open block's indentation (one opened inside a list item's text)
    lines = text.splitlines()
    bare = _bare_marks(lines)  # the lines that are a run of colons alone, outside code
    closing = -1  # the line that closes the block of snippet files being skipped
    for at, line in enumerate(lines):
        if at <= closing:
            continue
        if _SNIPPET.match(line):
            continue  # a file the site puts here (in a code block too)
        if not fence and line.strip() == _SNIPPET_MARK:
            # a block of file names, one per line, up to a bare mark; else the line is text
            end = next(
                (
                    j
                    for j in range(at + 1, len(lines))
                    if not lines[j].strip() or lines[j].strip() == _SNIPPET_MARK
                ),
                None,
            )
            if end is not None and lines[end].strip() == _SNIPPET_MARK:
                closing = end
                continue
        fence, is_code_line = fence_after(line, fence)
        if not is_code_line:
            tab = _TAB.match(line)
            # a block opens at the margin, or inside a list item's text ("1. Step" then
            # "   :::tip"): three spaces at most, four would make it indented code
            lead = len(line) - len(line.lstrip(" "))
            block = _BLOCK.match(line.strip()) if lead <= 3 else None
            spaced = _SPACED_BLOCK.match(line.strip()) if lead <= 3 else None
            if spaced and (
                bare.get(spaced.group(1), -1) <= at
                or (spaced.group(2) not in _VITEPRESS_KINDS and not spaced.group(3))
            ):
                spaced = None  # no closing marks, or a bare name: mkdocstrings' directive
            block = block or spaced
            if tab:
                line = f'{tab.group(1)}!!! tab "{tab.group(2)}"'
            elif blocks and line.strip() == blocks[-1][0]:
                blocks.pop()
                if out and out[-1].strip():
                    out.append("")
                continue
            elif block and len(blocks) < MAX_DIRECTIVE_DEPTH:  # (deeper: read as text)
                marks, kind, *titles = (g for g in block.groups() if g is not None)
                base = base if blocks else lead
                callout = not (marks.startswith(":") and kind in _PLAIN_BLOCKS)
                blocks.append((marks, callout))
                if callout:
                    title = (titles[0] if titles else kind.capitalize()).replace('"', "'")
                    depth = sum(c for _, c in blocks) - 1
                    out.append(" " * base + "    " * depth + f'!!! {kind} "{title}"')
                continue
        if not fence and not line.strip() and out and not out[-1].strip():
            continue  # one blank line: a block's body ends at a second one
        if blocks and line.strip():
            shift = min(base, len(line) - len(line.lstrip(" ")))
            line = " " * base + "    " * sum(c for _, c in blocks) + line[shift:]
        out.append(line)
    return "\n".join(out)


def _bare_marks(lines: list[str]) -> dict[str, int]:
    """Each run of three or more colons alone on a line, outside code: its last line."""
    fence, found = "", {}
    for at, line in enumerate(lines):
        fence, is_code_line = fence_after(line, fence)
        if not is_code_line and re.fullmatch(r":{3,}", line.strip()):
            found[line.strip()] = at
    return found


#: Material for MkDocs' icons (``:material-check:``, ``:octicons-arrow-right-24:``): pictures
_ICON = re.compile(r":(?:material|octicons|fontawesome|simple)-[\w-]+:")
#: Python-Markdown's attribute lists (``## Title {: #anchor }``, ``[Start](x){ .md-button }``,
#: ``{: .annotate }`` under a list): what the site turns into HTML attributes, never words
_ATTR = r"""(?:[#.][\w:-]+|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s{}"'`]+))"""
_ATTRS = rf"\{{:?\s*{_ATTR}(?:\s+{_ATTR})*\s*\}}"
#: ... right after a link, an image, emphasis or a code span (the element's attributes)
_ATTR_AFTER = re.compile(rf"^{_ATTRS}")
#: ... at the end of a heading, after a space
_ATTR_HEADING = re.compile(rf"[ \t]+{_ATTRS}\s*$")
#: ... on a line of its own at the end of a block (a paragraph's, a list item's)
_ATTR_BLOCK = re.compile(rf"^\s*{_ATTRS}\s*$")
#: the inline elements an attribute list may follow
_ATTRIBUTED = frozenset(
    {"link_close", "image", "em_close", "strong_close", "code_inline", "s_close"}
)


#: a MyST role (``{func}``) or an rST one (``:func:``, ``:py:class:``) right before a code span
_ROLE = re.compile(
    r"(?:(?<=[\s(\[])|^)(?:\{([\w:.-]+)\}|:((?:[\w.-]+:)?[\w.-]+):)$"
    r"|(?<=\w)\{(sup|sub)\}$"  # MyST's superscript right after its word: compatible{sup}`1`
)
#: roles that link to a section or a term: read as their text, not as code
_LINK_ROLES = frozenset({"ref", "doc", "term", "any", "numref", "std:ref", "std:doc"})
#: roles that name a numbered document: {pep}`538` reads "PEP 538"
_NUMBERED_ROLES = {"pep": "PEP", "rfc": "RFC"}
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
#: a cross-reference's target after its text: ``positional arguments <arguments>``
_ROLE_TARGET = re.compile(r"\s*<[^<>]+>$")


def inline_text(token: Token, heading: bool = False) -> str:
    """The words of an inline token: code spans kept in backticks, markup and HTML dropped.

    Attribute lists are markup too, where Python-Markdown reads them: right after a link,
    image, emphasis or code span (``[Start](x){ .md-button }``), at the end of a heading
    (``## Title {: #anchor }``, ``heading``) and on the last line of a block (``{: .annotate }``
    under a list). Elsewhere braces are words: ``up{job="x"}``, ``{:.2f}``.
    """
    parts: list[str] = []
    words = ""  # the text since the last code span
    children = token.children or []
    last = len(children) - 1
    for n, child in enumerate(children):
        before = children[n - 1].type if n else ""
        if child.type == "text":
            text = child.content
            if before in _ATTRIBUTED:
                text = _ATTR_AFTER.sub("", text)
            if n == last and before in ("softbreak", "hardbreak") and _ATTR_BLOCK.match(text):
                text = ""
            words += text
        elif child.type in ("softbreak", "hardbreak"):
            words += " "
        elif child.type == "footnote_ref" and not heading:  # its note follows the block
            words += str(int(child.meta.get("id", 0)) + 1).translate(_SUPERSCRIPT)
        elif child.type == "image":
            words += child.content
        elif child.type == "code_inline":
            role = _ROLE.search(words)
            if role is not None:  # MyST's {func}`name` or rST's :func:`name`: a role's markup
                words = words[: role.start()]
            content = child.content
            kind = (
                next(g for g in role.groups() if g is not None).lower() if role is not None else ""
            )
            if role is not None:  # ``~click.Context.params``: the tilde is the role's markup;
                # {class}`Commands <Command>`: the site shows the title, not the target
                # and so are ``.flask.g``'s leading dot (look nearby) and ``!``'s (no link)
                shown = re.sub(r"^[~!]*(?:\.(?=[\w~]))?~?", "", content)
                content = _ROLE_TARGET.sub("", shown) or content
            if kind in ("sup", "sub"):  # a footnote's number, a formula's index: text
                raised = content.translate(_SUPERSCRIPT) if kind == "sup" else content
                parts += [_ICON.sub("", words), raised]
            elif kind in _NUMBERED_ROLES:  # {pep}`538`: "PEP 538"
                parts += [_ICON.sub("", words), f"{_NUMBERED_ROLES[kind]} {content}"]
            elif kind in _LINK_ROLES:  # a cross-reference reads as its text; one without
                # (the site shows its target's title) as the words of its target's name
                titled = _ROLE_TARGET.search(shown) is not None
                parts += [_ICON.sub("", words), content if titled else _target_words(content)]
            else:  # fenced by more backticks than any run in it (`` ``` `` is three)
                marks = "`" * (max((len(r) for r in re.findall(r"`+", content)), default=0) + 1)
                pad = " " if content[:1] == "`" or content[-1:] == "`" else ""
                parts += [_ICON.sub("", words), f"{marks}{pad}{content}{pad}{marks}"]
            words = ""
        elif child.type == "html_inline" and _HTML_CODE.match(child.content):
            words += "`"  # <code>…</code>: a code span written in HTML
        elif child.type == "html_inline" and (
            before == "html_inline" or _IMAGE.match(child.content)
        ):
            # an element with nothing in it: an icon (<i class="fa-eye"></i>), an image
            # (a link's "external" arrow)
            words += _EMPTY
    parts.append(_ICON.sub("", words))
    # "an eyeball icon (<i …></i>) which": no "()" where the icon was; "or ZeroSSL <img>.":
    # no space before the full stop
    text = _EMPTY_PARENS.sub("", "".join(parts))
    text = _EMPTY_BEFORE_STOP.sub("", text).replace(_EMPTY, "")
    if heading:
        text = _ATTR_HEADING.sub("", text)
    return " ".join(text.split())


_HTML_CODE = re.compile(r"^</?code(?:\s[^>]*)?>$", re.I)
_EMPTY = "\x00"
_EMPTY_PARENS = re.compile(rf"\s?\(\s*{_EMPTY}\s*\)")
_EMPTY_BEFORE_STOP = re.compile(rf"\s*{_EMPTY}\s*(?=[.,;:!?)\]](?:[\s.,;:!?)\]]|$))")  # not .env
_IMAGE = re.compile(r"^<img\b", re.I)

#: A code block's title among its info string's settings: ``python title="app.py"``
_CODE_TITLE = re.compile(r"""(?:^|\s)title=(["'])(.+?)\1""")  # (not a quoted string's words)
#: ... or VitePress's, in brackets: ``js [vite.config.js]``, a code group's tab ``bash [npm]``
_CODE_LABEL = re.compile(r"(?:^|\s)\[([^\[\]]+)\]")


def _target_words(target: str) -> str:
    """A cross-reference's target as words: ``../topics/vcs-support`` reads "vcs support".

    A page's path reads as its file's name (the site shows that page's title), a folder's
    ``index`` as the folder's, a label of another project's documentation
    (``pypug:dependency-specifiers``) without its prefix.
    """
    path = target.rsplit(":", 1)[-1].strip("/").split("/")
    name = path[-2] if path[-1] == "index" and len(path) > 1 else path[-1]  # a folder's page
    return name.replace("-", " ").replace("_", " ") or target


def readable_markdown(text: str, indented_code: bool = True) -> str:
    """``text`` (Markdown or plain text) as blocks separated by blank lines.

    ``indented_code=False`` reads as MDX does: a line indented by four spaces is no code
    block (a component's body is indented for layout).
    """
    parser = _PARSER if indented_code else _MDX_PARSER
    tokens = parser.parse(_callouts_as_admonitions(text))
    out = _Blocks(notes=_footnotes(tokens))
    in_notes = False
    for i, token in enumerate(tokens):
        kind = token.type
        if kind in ("footnote_block_open", "footnote_block_close"):
            in_notes = kind.endswith("_open")
            continue
        if in_notes:  # placed after the blocks that mark them (``_Blocks.place_notes``)
            continue
        _read_token(out, tokens, i)
        if kind.endswith("_close") and kind != "dt_close" and not out.nested:
            out.place_notes()  # (a defined term's note after its definition)
    out.place_notes(every=True)  # a note nothing marks, where the site shows it
    return "\n\n".join(out.blocks)


def _read_token(out: _Blocks, tokens: list[Token], i: int) -> None:
    """One markdown-it token read into ``out``."""
    token = tokens[i]
    kind = token.type
    if out.title and not out.in_title and kind in _BLOCK_OPENERS and not out.nested:
        if kind != "paragraph_open":  # a list, a table or code under an admonition's title
            out.blocks.append(f"{out.title}:")
            out.title = ""
    if kind in ("admonition_title_open", "admonition_title_close", "dt_open", "dt_close"):
        out.in_title = kind.endswith("_open")  # a call-out's title, a defined term
        if kind == "dt_close":
            out.term = out.title
    elif kind == "dd_open" and not out.title:  # a term's second definition: the term again
        out.title = out.term
    elif kind == "heading_open":
        out.heading = int(token.tag[1])
    elif kind in ("bullet_list_open", "ordered_list_open"):
        if not out.lists:
            out.contents = True
        out.lists.append([-1 if kind == "bullet_list_open" else int(token.attrGet("start") or 1)])
    elif kind in ("bullet_list_close", "ordered_list_close"):
        out.close_list()
    elif kind == "inline":
        out.inline(tokens, i)
    elif kind == "tr_open":
        out.row = []
    elif kind == "tr_close":
        if out.row:
            out.table.append(" | ".join(out.row))
        out.row = []
    elif kind == "table_close":  # one block: the header row, then a row per line
        out.blocks.append("\n".join(out.table))
        out.table = []
    elif kind == "html_block" and _YAML_META.match(token.content):
        out.blocks.extend(api_metadata(token.content))
    elif kind == "html_block" and (link := _SOURCE_LINK.match(token.content)):
        out.blocks.append(f"Source Code: {link.group(1)}")
    elif kind == "html_block" and not token.content.lstrip().startswith("<!--"):
        out.html(token.content)
    elif kind in ("fence", "code_block"):
        # fenced by more backticks than any run in it: an example of Markdown that holds
        # a code block of its own stays one block
        marks = fence_for(token.content)
        # the info string's first word is the language; the rest is the site's settings
        # (``{9-26}``, ``hl_lines="3"``, ``ins={4}``), but for a title, which names the
        # file the code goes in (``title="astro.config.mjs"``): said before the code
        language, _, settings = token.info.strip().partition(" ")
        if language.startswith("["):  # VitePress's ```[.env]: a title and no language
            language, settings = "", token.info.strip()
        if caption := _CODE_TITLE.search(settings) or _CODE_LABEL.search(settings):
            out.code(f"{caption.group(caption.lastindex or 1)}:")
        shown = _shown_lines(token.content, token.info)
        out.code(f"{marks}{language}\n{shown.rstrip()}\n{marks}")


def _footnotes(tokens: list[Token]) -> dict[int, list[str]]:
    """Each footnote's blocks by its number, read as the page's own (its code blocks too)."""
    notes: dict[int, list[str]] = {}
    inside: list[Token] = []
    number = None
    for token in tokens:
        if token.type == "footnote_open":
            number, inside = int(token.meta.get("id", 0)), []
        elif token.type == "footnote_close" and number is not None:
            note = _Blocks()
            for i in range(len(inside)):
                _read_token(note, inside, i)
            notes[number], number = note.blocks, None
        elif number is not None and token.type != "footnote_anchor":
            inside.append(token)
    return notes


#: mdBook's and rustdoc's hidden lines of Rust code (``# fn main() {``; ``##`` shows "#"),
#: ``hide_lines_rust`` in mdbook-html; other languages' by their ``hidelines=PREFIX``
_RUST_HIDDEN = re.compile(r"^(\s*)#(#?)( ?)(.*)$")
_HIDELINES = re.compile(r"(?:^|[\s,])hidelines=(\S+?)(?:,|\s|$)")


#: Twoslash's markup in a ``twoslash`` code block (TypeScript's documentation sites, VitePress):
#: ``// ---cut---`` hides what is above it, ``// ---cut-after---`` what is below; compiler
#: settings (``// @noErrors``, ``// @filename: a.ts``) and queries (``// ^?``) are hidden too
_CUT_BEFORE = re.compile(r"^\s*//\s*---cut(?:-before)?---\s*$")
_CUT_AFTER = re.compile(r"^\s*//\s*---cut-after---\s*$")
_TWOSLASH_NOTE = re.compile(r"^\s*//\s?(?:@\w+(?::.*)?|\^+[?|]?.*)\s*$")


def _twoslash_shown(code: str) -> str:
    """A twoslash block's lines as its site shows them (``_CUT_BEFORE``, ``_TWOSLASH_NOTE``)."""
    lines = code.splitlines()
    starts = [i for i, line in enumerate(lines) if _CUT_BEFORE.match(line)]
    if starts:
        lines = lines[starts[-1] + 1 :]
    ends = [i for i, line in enumerate(lines) if _CUT_AFTER.match(line)]
    if ends:
        lines = lines[: ends[0]]
    return "\n".join(line for line in lines if not _TWOSLASH_NOTE.match(line))


def _item_title(tokens: list[Token], i: int) -> bool:
    """The inline at ``i`` is a list item's first paragraph, all in bold, and more follows it."""
    children = [c for c in tokens[i].children or [] if c.type != "text" or c.content.strip()]
    return (
        _item_opener(tokens, i)
        and len(children) >= 3
        and children[0].type == "strong_open"
        and children[-1].type == "strong_close"
        and sum(c.type == "strong_open" for c in children) == 1
        and i + 2 < len(tokens)
        and tokens[i + 2].type != "list_item_close"
    )


def _shown_lines(code: str, info: str) -> str:
    """A code block's lines as its site shows them: lines the site hides left out."""
    if "twoslash" in info.split():
        code = _twoslash_shown(code)
    language = re.split(r"[\s,{]", info.strip(), maxsplit=1)[0].lower()
    prefix = _HIDELINES.search(info)
    if language != "rust" and prefix is None:
        return code
    kept = []
    for line in code.splitlines():
        if prefix is not None and language != "rust":
            if not line.lstrip().startswith(prefix.group(1)):
                kept.append(line)
            continue
        hidden = _RUST_HIDDEN.match(line)
        if hidden is None or (not hidden.group(2) and not hidden.group(3) and hidden.group(4)):
            kept.append(line)  # ``#[derive]``, ``#![allow]``: code
        elif hidden.group(2):  # ``##x`` shows as ``#x``
            kept.append(f"{hidden.group(1)}#{hidden.group(3)}{hidden.group(4)}")
    return "\n".join(kept)


@dataclass
class _Blocks:
    """The blocks read so far, and where the walk of markdown-it's tokens stands."""

    blocks: list[str] = field(default_factory=list)
    title: str = ""  # an admonition's title, said before its first block
    in_title: bool = False
    term: str = ""  # the last defined term (each of its definitions is said with it)
    lists: list[list[int]] = field(default_factory=list)  # per open list: next number, or -1
    item_lines: list[str] = field(default_factory=list)
    row: list[str] = field(default_factory=list)
    table: list[str] = field(default_factory=list)
    heading: int = 0
    notes: dict[int, list[str]] = field(default_factory=dict)  # footnotes' blocks by number
    marked: list[int] = field(default_factory=list)  # marked in the block being read
    contents: bool = False  # the open list is, so far, only links to the page's own sections

    @property
    def nested(self) -> bool:
        return bool(self.lists or self.row or self.table)

    def place_notes(self, every: bool = False) -> None:
        """The notes the last block marked (``every``: those not placed yet), after it."""
        for number in sorted(self.notes) if every else self.marked:
            if note := self.notes.pop(number, []):
                mark = str(number + 1).translate(_SUPERSCRIPT)
                self.blocks += [f"{mark} {note[0]}", *note[1:]]
        self.marked = []

    def close_list(self) -> None:
        self.lists.pop()
        if not self.lists and self.item_lines:
            # a page's table of contents ("1. [Structure](#structure)") is the site's
            # navigation: each of its sections is read where it stands
            if not self.contents:
                self.blocks.append("\n".join(self.item_lines))
            self.item_lines = []

    def inline(self, tokens: list[Token], i: int) -> None:
        self.marked += [
            int(c.meta.get("id", 0)) for c in tokens[i].children or [] if c.type == "footnote_ref"
        ]
        text = inline_text(tokens[i], heading=bool(self.heading))
        words = _ALERT.sub(lambda m: f"{m.group(1).capitalize()}: ", text)
        if not words:
            if self.lists:  # an item's heading of an icon alone: no colon for the next words
                self.heading = 0
            return
        if self.in_title:
            self.title = words.rstrip(":")
        elif self.heading and not self.lists:
            self.blocks.append(f"{'#' * self.heading} {words}")
            self.heading = 0
        elif tokens[i - 1].type in ("th_open", "td_open"):
            self.row.append(words)
        elif self.lists:
            self.contents = self.contents and _section_link(tokens[i])
            if self.title:  # a call-out inside a list item: its title leads its first words
                words, self.title = f"{self.title}: {words}", ""
            if self.heading or _item_title(tokens, i):
                # an item's heading ("- #### Quick start guide"), or its title in bold over
                # more of the item ("1. **Update the config**" then its text), leads its text
                self.heading = 0
                words += "" if words[-1] in ".:?!" else ":"
            if _item_opener(tokens, i):
                counter = self.lists[-1]
                marker = "-" if counter[0] < 0 else f"{counter[0]}."
                if counter[0] >= 0:
                    counter[0] += 1
                self.item_lines.append(f"{'  ' * (len(self.lists) - 1)}{marker} {words}")
            elif self.item_lines and self.item_lines[-1].startswith("```"):
                self.item_lines.append(words)  # the item goes on after its code block
            elif self.item_lines:  # a second paragraph of the same item
                self.item_lines[-1] += f" {words}"
        elif _AUTODOC.match(words):  # replaced by generated docs when the site is built
            self.title = ""
        elif self.title:
            self.blocks.append(f"{self.title}: {words}")
            self.title = ""
        else:
            self.blocks.append(words)

    def html(self, content: str) -> None:
        from seekgraph.sources.ingestion.html_text import html_blocks  # (bs4: when needed)

        embedded = html_blocks(content)  # a generated reference's <dl>, a <table>
        if self.lists and self.item_lines and embedded:
            self.item_lines[-1] += " " + " ".join(" ".join(b.split()) for b in embedded)
        else:
            self.blocks.extend(embedded)

    def code(self, fence: str) -> None:
        if self.lists and self.item_lines:
            self.item_lines.append(fence)
        else:
            self.blocks.append(fence)


_BLOCK_OPENERS = frozenset(
    {
        "paragraph_open",
        "heading_open",
        "bullet_list_open",
        "ordered_list_open",
        "table_open",
        "fence",
        "code_block",
    }
)


def _section_link(token: Token) -> bool:
    """Whether an inline token is one link to a section of its own page, and nothing else."""
    children = [c for c in token.children or [] if c.type != "softbreak"]
    return (
        len(children) >= 3
        and children[0].type == "link_open"
        and str(children[0].attrGet("href") or "").startswith("#")
        and children[-1].type == "link_close"
        and sum(c.type == "link_open" for c in children) == 1
    )


def _item_opener(tokens: list[Token], i: int) -> bool:
    """Whether the inline token at ``i`` is the first paragraph of its list item."""
    j = i - 1
    while j >= 0 and tokens[j].type in ("paragraph_open", "heading_open"):
        j -= 1
    return j >= 0 and tokens[j].type == "list_item_open"


#: Node.js's API metadata: an HTML comment opening with "YAML" (its doc tool's ``isYAMLBlock``)
_YAML_META = re.compile(r"^\s*<!--\s*YAML[ \t]*\n(?P<body>.*?)-->", re.S)
#: Node.js's link to an API's source file, shown on its site as "Source Code: lib/fs.js"
_SOURCE_LINK = re.compile(r"^\s*<!--\s*source_link=(\S+)\s*-->\s*$")
#: What each of the metadata's version keys is called on the built site
_VERSION_KEYS = {"added": "Added in", "deprecated": "Deprecated since", "removed": "Removed in"}


def api_metadata(comment: str) -> list[str]:
    """Node.js's ``<!-- YAML … -->`` metadata as the blocks its site shows.

    "Added in: v0.1.90" (deprecated and removed alike); with ``changes``, a "History" table
    of versions and what changed, newest first, the version it was added in last, as
    Node's doc tool (``tools/doc/html.mjs``, ``parseYAML``) renders it. Metadata that does not
    parse, or is not laid out so, is left out, as the comment was before; the page is read.
    """
    match = _YAML_META.match(comment)
    try:
        meta = yaml.safe_load(match.group("body")) if match else None
        return _metadata_blocks(meta) if isinstance(meta, dict) else []
    except Exception:  # noqa: BLE001 - YAML's errors, a date out of range, nesting too deep
        return []


def _metadata_blocks(meta: dict[str, Any]) -> list[str]:
    """``api_metadata``'s blocks from the parsed metadata."""

    def versions(value: Any) -> str:
        return ", ".join(str(v) for v in (value if isinstance(value, list) else [value]))

    said = {key: versions(meta[key]) for key in _VERSION_KEYS if meta.get(key)}
    listed = meta.get("changes")
    changes = (
        [c for c in listed if isinstance(c, dict) and c.get("version")]
        if isinstance(listed, list)
        else []
    )
    out: list[str] = []
    if changes:
        rows = [(versions(c["version"]), _described(c.get("description"))) for c in changes]
        rows += [
            (said[k], f"{_VERSION_KEYS[k]}: {said[k]}")
            for k in ("deprecated", "removed")
            if k in said
        ]
        rows.sort(key=lambda row: _version_key(row[0]), reverse=True)
        if "added" in said:
            rows.append((said["added"], f"Added in: {said['added']}"))
        out.append("History:")
        out.append("\n".join(["Version | Changes", *(f"{v} | {d}" for v, d in rows)]))
    else:
        out.extend(f"{_VERSION_KEYS[k]}: {v}" for k, v in said.items())
    if meta.get("napiVersion"):
        out.append(f"N-API version: {versions(meta['napiVersion'])}")
    return out


def _described(description: Any) -> str:
    """A change's description (Markdown) as words, on one line."""
    if not description:
        return ""
    tokens = _PARSER.parseInline(str(description))
    return inline_text(tokens[0]).replace(" | ", " / ") if tokens else ""


def _version_key(versions: str) -> tuple[int, ...]:
    """The oldest of ``"v18.0.0, v16.15.0"`` as numbers, to order a history by."""
    keys = [tuple(int(n) for n in re.findall(r"\d+", v)) or (0,) for v in versions.split(",")]
    return min(keys)


def first_heading(text: str) -> str | None:
    """The heading a document opens with, as markdown-it reads it; None when it opens otherwise.

    A Python comment inside a fenced block ("# Using the top-level API:") is code, not the
    document's title; nor is a heading at the end of a page that opens with prose. A call-out
    above the title ("This page is a draft") is not its opening.
    """
    tokens = [t for t in _PARSER.parse(_callouts_as_admonitions(text)) if t.type != "html_block"]
    while tokens and tokens[0].type == "admonition_open":  # a call-out above the title
        end = next(
            (n for n, t in enumerate(tokens) if t.type == "admonition_close" and t.level == 0),
            len(tokens) - 1,
        )
        tokens = tokens[end + 1 :]
    if len(tokens) > 1 and tokens[0].type == "heading_open":
        return inline_text(tokens[1], heading=True) or None
    return None
