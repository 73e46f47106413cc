"""How a document's text reads: blocks (fence-aware), sentences (sentencex), lists, tables.

Chunking cuts documents at blocks; the extractive answer quotes sentences, a list with its
lead-in, a table row with its header.
"""

from __future__ import annotations

import re

from seekgraph.providers.language import compiled
from seekgraph.providers.terms import CJK

#: A line that opens a list item ("- ", "* ", "1. ").
ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
#: A line that opens a numbered list item ("1. ", "2) ").
ORDERED = re.compile(r"^\s*\d+[.)]\s+")
#: A line that completes the sentence before it ("Default: 30 s") rather than standing alone.
_COMPLETES = compiled("completing_line", flags=re.I)
#: A lead-in keeps the list it introduces when the list is at most this long.
_LEAD_IN_LIST_CHARS = 900
#: A code block up to this long travels with the sentence that introduces it ("…:").
_LEAD_IN_CODE_CHARS = 500


def said_of(unit: str) -> str:
    """What a quotable unit says in words: a lead-in without the code block it carries."""
    return unit if unit.startswith("```") else unit.split("\n```", 1)[0]


def is_code(block: str) -> bool:
    """A block that is a fenced code block (or a line that is a fence)."""
    return block.lstrip().startswith(("```", "~~~"))


def is_list(block: str) -> bool:
    """A block that is a Markdown list (its first line is an item)."""
    return bool(ITEM.match(block))


#: The longest line read as a label of what follows it ("pyproject.toml:", "npm:").
MAX_LABEL_CHARS = 60


def is_label(block: str) -> bool:
    """One short line ending in ":" that names what follows (a tab, a code block's title)."""
    text = block.strip()
    return "\n" not in text and text.endswith(":") and len(text) <= MAX_LABEL_CHARS


def is_table(block: str) -> bool:
    """A block that is a table: two lines or more, every one with cells ("a | b")."""
    lines = [line for line in block.splitlines() if line.strip()]
    return len(lines) > 1 and all(" | " in line for line in lines)


def frame(block: str) -> tuple[list[str], list[str], list[str]]:
    """A block's lines as (head, body, tail): what frames its lines, and those lines.

    A code block's fences, a table's header row (and the rule under it); a list or a
    paragraph has neither. A piece of the block shown or chunked apart keeps them: a row
    without its header is a row of values.
    """
    lines = block.splitlines()
    head: list[str] = []
    tail: list[str] = []
    if is_code(block):
        head = lines[:1]
        tail = lines[-1:] if len(lines) > 1 and is_code(lines[-1]) else []
    elif is_table(block):
        rule = len(lines) > 1 and not lines[1].strip(" |:-")
        head = lines[: 2 if rule else 1]
    return head, lines[len(head) : len(lines) - len(tail)], tail


_FENCE_MARKS = re.compile(r"^\s*(`{3,})\s*(\S*)")


def fence_step(line: str, open_fence: str) -> tuple[str, bool]:
    """The fence open after ``line`` (its backticks, "" for none); whether it is a fence line.

    Only a run of as many backticks or more, with nothing after it, closes a fence: a
    ```` ````text ```` example may hold a ```` ``` ```` block of its own.
    """
    marks = _FENCE_MARKS.match(line)
    run, info = (marks.group(1), marks.group(2)) if marks else ("", "")
    if not open_fence:
        return run, bool(run)
    closes = len(run) >= len(open_fence) and not info
    return ("" if closes else open_fence), closes


def blocks(text: str) -> list[str]:
    """Blank-line separated blocks; a fenced code block is one block, blank lines and all."""
    out: list[str] = []
    current: list[str] = []
    fence = ""  # the open fence's backticks: closed by as many or more, alone on a line
    for line in text.splitlines():
        after, fence_line = fence_step(line, fence)
        if fence_line:
            if not fence and current and not ITEM.match(current[0]):
                out.append("\n".join(current))
                current = []
            fence = after
            current.append(line)
            if not fence and not ITEM.match(current[0]):
                out.append("\n".join(current))
                current = []
            continue
        if not line.strip() and not fence:
            if current:
                out.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        out.append("\n".join(current))
    return [b.strip("\n") for b in out if b.strip()]


def split_sentences(paragraph: str) -> list[str]:
    """Sentences of one paragraph (sentencex: abbreviations such as "e.g." do not end one)."""
    from sentencex import segment

    language = "zh" if CJK.search(paragraph) else "en"
    out: list[str] = []
    glued = False  # the previous piece ended inside a word ("redis." + "ConnectionPool")
    for piece in segment(language, paragraph):
        if glued and out:
            out[-1] += piece
        else:
            out.append(piece)
        glued = not piece[-1:].isspace() and not CJK.search(piece[-2:])
    return [s.strip() for s in out if s.strip()]


#: Numbered steps with code up to this long are one unit, their code in place
_STEPS_WITH_CODE_CHARS = 900


def _list_units(lines: list[str]) -> list[str]:
    """A list block: numbered steps stay one unit, in order; each bullet item is one.

    A code fence inside an item becomes a unit of its own.
    """
    code: list[str] = []
    items: list[tuple[bool, str]] = []  # (top level, text)
    fenced = ""  # the open fence's backticks: only as many close it (a fence inside a fence)
    for line in lines:
        after, fence = fence_step(line, fenced)
        if fenced or after:
            code.append(line.strip() if fence else line)
            fenced = after
            continue
        if ITEM.match(line) or not items:
            items.append((not line[:1].isspace(), line.strip()))
        else:  # a wrapped continuation of the item above
            top, text = items[-1]
            items[-1] = (top, f"{text} {line.strip()}")
    top_level = [text for top, text in items if top]
    if len(top_level) > 1 and all(ORDERED.match(text) for text in top_level):
        if code and sum(len(x) + 1 for x in lines) <= _STEPS_WITH_CODE_CHARS:
            # short steps keep their code where it is: "1. Install it:" and its command
            return ["\n".join(x if x.lstrip().startswith("```") else x.rstrip() for x in lines)]
        return ["\n".join(text for _, text in items), *(["\n".join(code)] if code else [])]
    units = [ITEM.sub("", text).strip() for _, text in items]
    return [u for u in units if u] + (["\n".join(code)] if code else [])


def table_rows(lines: list[str]) -> list[str]:
    """A table's rows, each read with its header: "Library version: 3.5.3; Supported: 6.2"."""
    header = [cell.strip() for cell in lines[0].split(" | ")]
    rows = []
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.split(" | ")]
        pairs = [f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=False) if c]
        rows.append("; ".join(pairs))
    return rows


def sentences(text: str) -> list[str]:
    """Quotable units of text: whole sentences, list items, numbered steps, code blocks.

    Paragraphs are split at sentence ends only (a hard-wrapped line break is not one, nor
    the dot of "e.g."); a numbered list stays one unit, in order (steps); a bullet list gives
    one unit per item; a fenced code block is one unit, fences included; headings are not
    quoted; a table row is read with its header; a line such as "Default: 30 s" stays with
    the sentence it completes, and a sentence ending in ":" keeps the short list or code
    block it introduces.
    """
    units: list[str] = []
    lead_in = False  # the last unit ends with ":" and may take the list that follows
    for block in blocks(text):
        block = block.strip()
        if block.startswith("#"):
            lead_in = False
            continue
        if block.startswith("```"):
            if lead_in and len(block) <= _LEAD_IN_CODE_CHARS:
                units[-1] = f"{units[-1]}\n{block}"  # "To disable verification:" and its code
            else:
                units.append(block)
            lead_in = False
            continue
        lines = [line for line in block.splitlines() if line.strip()]
        if is_table(block):
            units += table_rows(lines)
            lead_in = False
            continue
        if ITEM.match(lines[0]):
            listed = _list_units(lines)
            if lead_in and len(block) <= _LEAD_IN_LIST_CHARS and not block.count("```"):
                items = [ln.strip() for ln in lines]
                units[-1] = units[-1] + "\n" + "\n".join(items)
            else:
                units += listed
            lead_in = False
            continue
        paragraph = re.sub(r"^>\s*", "", " ".join(line.strip() for line in lines))
        for part in split_sentences(paragraph):
            if len(part) < 3:
                continue
            if units and _COMPLETES.match(part) and "```" not in units[-1]:
                units[-1] = f"{units[-1]} {part}"
            else:
                units.append(part)
        lead_in = bool(units) and units[-1].endswith(":")
    return units
