"""Markdown as readable blocks, parsed by markdown-it (CommonMark), not by regular expressions.

What a person would read, one block per paragraph: headings as ``# title``, hard-wrapped
paragraphs joined into one line, list items one per line (``- item``, ``1. step``) so a list
stays one block, code fences kept whole, a table as one block of ``a | b`` rows. HTML
comments and blocks
(``<!-- YAML … -->``), link reference definitions and images' markup are dropped: they are
never quoted.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.token import Token

_PARSER = MarkdownIt("commonmark").enable("table")


def inline_text(token: Token) -> str:
    """The words of an inline token: code spans kept in backticks, markup and HTML dropped."""
    parts: list[str] = []
    for child in token.children or []:
        if child.type == "text":
            parts.append(child.content)
        elif child.type == "code_inline":
            parts.append(f"`{child.content}`")
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
    return " ".join("".join(parts).split())


def readable_markdown(text: str) -> str:
    """``text`` (Markdown or plain text) as blocks separated by blank lines."""
    tokens = _PARSER.parse(text)
    blocks: list[str] = []
    lists: list[list[int]] = []  # per open list: [next number, or -1 for bullets]
    item_lines: list[str] = []
    row: list[str] = []
    table: list[str] = []
    heading = 0
    for i, token in enumerate(tokens):
        kind = token.type
        if kind == "heading_open":
            heading = int(token.tag[1])
        elif kind == "bullet_list_open":
            lists.append([-1])
        elif kind == "ordered_list_open":
            lists.append([int(token.attrGet("start") or 1)])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
            if not lists and item_lines:
                blocks.append("\n".join(item_lines))
                item_lines = []
        elif kind == "inline":
            words = inline_text(token)
            if not words:
                continue
            if heading:
                blocks.append(f"{'#' * heading} {words}")
                heading = 0
            elif row is not None and tokens[i - 1].type in ("th_open", "td_open"):
                row.append(words)
            elif lists:
                opener = _item_opener(tokens, i)
                if opener:
                    counter = lists[-1]
                    marker = "-" if counter[0] < 0 else f"{counter[0]}."
                    if counter[0] >= 0:
                        counter[0] += 1
                    item_lines.append(f"{'  ' * (len(lists) - 1)}{marker} {words}")
                elif item_lines:  # a second paragraph of the same item
                    item_lines[-1] += f" {words}"
            else:
                blocks.append(words)
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close":
            if row:
                table.append(" | ".join(row))
            row = []
        elif kind == "table_close":  # one block: the header row, then a row per line
            blocks.append("\n".join(table))
            table = []
        elif kind in ("fence", "code_block"):
            code = f"```{token.info.strip()}\n{token.content.rstrip()}\n```"
            if lists and item_lines:
                item_lines.append(code)
            else:
                blocks.append(code)
    return "\n\n".join(blocks)


def _item_opener(tokens: list[Token], i: int) -> bool:
    """Whether the inline token at ``i`` is the first paragraph of its list item."""
    j = i - 1
    while j >= 0 and tokens[j].type == "paragraph_open":
        j -= 1
    return j >= 0 and tokens[j].type == "list_item_open"


def first_heading(text: str) -> str | None:
    """The heading a document opens with, as markdown-it reads it; None when it opens otherwise.

    A Python comment inside a fenced block ("# Using the top-level API:") is code, not the
    document's title; nor is a heading at the end of a page that opens with prose.
    """
    tokens = [t for t in _PARSER.parse(text) if t.type != "html_block"]
    if len(tokens) > 1 and tokens[0].type == "heading_open":
        return inline_text(tokens[1]) or None
    return None
