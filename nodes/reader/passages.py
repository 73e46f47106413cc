"""The offline reader's honest reply when it is not sure: the closest passages, quoted whole.

A good search engine shows the passage, not a verdict on it. Each passage keeps what makes
it useful — the code block a sentence introduces, a list, a table — and is cited; the
sentence most likely to answer is marked in bold. The whole reply stays under
``MAX_REPLY_CHARS``: a passage longer than its share is shown around its marked sentence,
whole blocks only, with "…" where text was left out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import NamedTuple

from seekgraph.providers.sentences import (
    ITEM,
    ORDERED,
    blocks,
    frame,
    is_code,
    is_label,
    is_list,
    is_table,
    split_sentences,
)
from seekgraph.providers.terms import term_set
from seekgraph.state.models import Evidence, heading_of

#: The first line of a ``passages`` reply.
PASSAGES_HEADER = "I could not confirm a direct answer; the closest passages are:"
#: A reply is shorter than this unless the person asks for more.
MAX_REPLY_CHARS = 1500
#: How many passages a ``passages`` reply shows at most.
MAX_PASSAGES = 3
#: The room (characters) kept for each later passage while an earlier one is quoted whole.
PASSAGE_FLOOR = 300
#: The most room kept for a later passage's lead-in and the code it introduces.
LEAD_IN_FLOOR = 350


def closest(
    ranked: Iterable[tuple[str, Evidence]], limit: int = MAX_PASSAGES
) -> list[tuple[Evidence, str]]:
    """Distinct passages in the search's order, each with its likeliest sentence.

    The search's order is kept even when two passages share a document: on the dev sets
    (``bench/devsets.py``, tuning halves) the passage that states the fact was the first by
    relevance in 50 of 87 questions where it was kept, the first after keeping one passage per
    document in fewer; the second passage of a page is often the rest of the answer.
    """
    seen: dict[str, tuple[Evidence, str]] = {}
    for sentence, ev in ranked:
        seen.setdefault(ev["source_id"], (ev, sentence))
    return list(seen.values())[:limit]


def body_of(ev: Evidence) -> str:
    """A passage's text without the ``# heading`` line its snippet starts with."""
    snippet = str(ev["snippet"])
    if heading_of(ev):
        return snippet.split("\n", 1)[1].strip() if "\n" in snippet else ""
    return snippet.strip()


def _mark(block: str, sentence: str) -> str:
    """``block`` with ``sentence`` in bold (its words may be wrapped over lines there)."""
    words = sentence.strip().split()
    if not words or is_code(block) or "**" in sentence or "\n" in sentence.strip():
        return block
    pattern = r"\s+".join(re.escape(w) for w in words)
    match = re.search(pattern, block)
    if match is None:
        return block
    return f"{block[: match.start()]}**{match.group(0)}**{block[match.end() :]}"


def excerpt(
    ev: Evidence,
    sentence: str,
    budget: int,
    strict: bool = False,
    wanted: frozenset[str] = frozenset(),
) -> str:
    """``_excerpt``; when ``strict``, with its "…" and bold marks inside ``budget`` too.

    Past the budget by the marks alone, a reply's last passage was left out whole (its
    retry had the same room).
    """
    text = _excerpt(ev, sentence, budget, strict, wanted)
    if not strict or len(text) <= budget or budget <= 0:
        return text
    # the largest room whose excerpt, marks and all, fits (a search: a fixed step could pass
    # over the one room that keeps a code block)
    lo, hi, best = 0, budget - 1, ""
    while lo <= hi:
        mid = (lo + hi) // 2
        tried = _excerpt(ev, sentence, mid, strict, wanted)
        if len(tried) <= budget:
            best, lo = tried, mid + 1
        else:
            hi = mid - 1
    return best or text


def _excerpt(
    ev: Evidence,
    sentence: str,
    budget: int,
    strict: bool = False,
    wanted: frozenset[str] = frozenset(),
) -> str:
    """The passage around ``sentence``, whole blocks only, within ``budget`` characters.

    The block holding the sentence comes first; then what it introduces (a block ending in
    ":" and the code or list after it travel together, even past ``budget`` unless
    ``strict``), then what comes before it. A paragraph is never cut mid-sentence: the text
    is the author's. A code block, list or table longer than the room left is cut to its lines
    that say most of ``wanted`` (the question's terms), "…" where lines were left out: the
    sentence that introduces code is half an answer without it. When the excerpt would end on
    such a sentence without its code, the blocks between it and the marked one give way to
    "…" (golden case: test_reader.py, ``…_keeps_it_when_the_blocks_between_give_way``).
    """
    parts = blocks(body_of(ev))
    if not parts:
        return ""
    # a unit that opens with its sentence and takes the list or code it introduces is found,
    # and marked, by that sentence (``providers.sentences.sentences``): in the block followed
    # by what it introduces ("Example:" may open more than one)
    follows = ""
    if not is_code(sentence.strip()) and not is_list(sentence.strip()):
        sentence, _, follows = sentence.strip().partition("\n")
    squeezed = " ".join(sentence.split())
    holding = [i for i, b in enumerate(parts) if squeezed and squeezed in " ".join(b.split())]
    opening = " ".join(follows.split())[:80]
    at = next(
        (
            i
            for i in holding
            if i + 1 < len(parts) and " ".join(parts[i + 1].split()).startswith(opening)
        ),
        holding[0] if holding else 0,
    )
    if len(parts[at]) > budget:
        if _is_lines(parts[at]):
            parts[at] = _lines_window(parts[at], wanted, budget, sentence)
        else:
            parts[at] = _trim(parts[at], sentence, budget)
    lo = hi = at
    size = len(parts[at])
    while True:
        after = hi + 1 < len(parts)
        before = lo > 0
        if not after and not before:
            break
        introduces = after and (parts[hi].rstrip().endswith(":") or is_code(parts[hi + 1]))
        # what the marked sentence introduces may start with a label of its own: a tab's
        # ("pyproject.toml:") or a code block's title, then the code
        leads = hi == at or (hi == at + 1 and is_label(parts[hi]))
        if introduces or not before:
            nxt = len(parts[hi + 1]) + 2
            if size + nxt > budget and (strict or not (introduces and leads)):
                # what the sentence introduces, or a list, code block or table below that says
                # what was asked, is cut to what says it
                cut = _cut_beside(parts[hi + 1], wanted, budget - size - 2, introduces and leads)
                if cut is not None:
                    parts[hi + 1] = cut
                    hi, size = hi + 1, size + len(cut) + 2
                break
            hi, size = hi + 1, size + nxt
        else:
            prev = len(parts[lo - 1]) + 2
            if size + prev > budget:
                # so is one above (an options list above its method's one-line description)
                cut = _cut_beside(parts[lo - 1], wanted, budget - size - 2)
                if cut is not None:
                    parts[lo - 1] = cut
                    lo, size = lo - 1, size + len(cut) + 2
                break
            lo, size = lo - 1, size + prev
    order: list[int] = list(range(lo, hi + 1))
    # the marked sentence introduces the code right after it ("To start a proxy:" and its
    # command): that code is the answer and stays
    own = hi > at and parts[at].rstrip().endswith(":") and _is_lines(parts[at + 1])
    # the excerpt ends on a later sentence that introduces code it left out
    ends_on_lead_in = hi > at + 1 and hi + 1 < len(parts) and parts[hi].rstrip().endswith(":")
    if own and ends_on_lead_in:
        # a later lead-in that would end the excerpt without its code ("Then try it:") says
        # nothing without it and is left out; a paragraph that says more before its colon
        # ("…it will be redirected with a 308 redirect. …make sure…:") stays
        if len(split_sentences(" ".join(parts[hi].split()))) <= 1:
            hi -= 1
            order = list(range(lo, hi + 1))
    elif ends_on_lead_in:
        # ("…with the `allow_redirects` parameter:"), half an answer: the blocks between the
        # marked one and it give way to "…", so that the sentence keeps its code
        middle = sum(len(parts[i]) + 2 for i in range(at + 1, hi))
        room = budget - (size - middle) - len(_GAP) - 2
        code = parts[hi + 1] if len(parts[hi + 1]) + 2 <= room else None
        if code is None and is_code(parts[hi + 1]):
            code = _cut_beside(parts[hi + 1], wanted, room - 2, True)
        if code is not None and is_code(code):
            parts[hi + 1] = code
            order = [*range(lo, at + 1), -1, hi, hi + 1]
            hi += 1
    # a lead-in of one sentence left without what it introduces, and naming nothing asked
    # ("npm:", a code group's tab; "Example usage:"), says nothing: the excerpt ends before it
    while (
        wanted
        and order[-1] > at
        and order[-1] + 1 < len(parts)
        and parts[order[-1]].rstrip().endswith(":")
        and not _is_lines(parts[order[-1]])
        and len(split_sentences(" ".join(parts[order[-1]].split()))) <= 1
        and not wanted & term_set(parts[order[-1]])
    ):
        order.pop()
        hi = order[-1]
    shown = [_GAP if i < 0 else _mark(parts[i], sentence) if i == at else parts[i] for i in order]
    text = "\n\n".join(shown)
    # "…" opens a paragraph's line; a code block, list or table opens its own line (a fence
    # after "… " is no fence)
    cut = ("…\n\n" if _is_lines(shown[0]) else "… ") if lo > 0 else ""
    if shown[0].startswith("…"):  # a block cut at its top says so itself
        cut = ""
    # (a list cut at its end already says "…")
    more = hi < len(parts) - 1 and not text.endswith(_GAP)
    return cut + text + ("\n\n…" if more else "")


#: What stands for blocks an excerpt leaves out between two it shows
_GAP = "…"


#: The least room worth cutting a code block, list or table into (characters).
_MIN_LINES = 120


def _cut_beside(
    block: str, wanted: frozenset[str], left: int, introduced: bool = False
) -> str | None:
    """A code block, list or table next to the shown text, cut into the ``left`` room.

    Only one the shown sentence introduces, or one that holds what was asked (``wanted``),
    and only when the room is worth it (``_MIN_LINES``); None otherwise.
    """
    if not _is_lines(block) or left < _MIN_LINES:
        return None
    if not introduced and not wanted & term_set(block):
        return None
    return _lines_window(block, wanted, left)


def _is_lines(block: str) -> bool:
    """A code block, a list or a table: a block whose lines may be shown apart."""
    return is_code(block) or is_list(block) or is_table(block)


def _lines_window(
    block: str, wanted: frozenset[str] | set[str], budget: int, marked: str = ""
) -> str:
    """A code block, list or table cut to what says most of ``wanted``, within ``budget``.

    A list is cut to its items (``_items_window``); a code block or table to a run of lines
    (``_run_window``), which reads ``marked``'s terms as wanted too.
    """
    if is_list(block):
        return _items_window(block, wanted, budget, marked)
    return _run_window(block, set(wanted) | term_set(marked), budget)


class _Item(NamedTuple):
    """A list item: its lines ``[start, end)``, indent, and the first lines of its parents."""

    start: int
    end: int
    indent: int
    parents: tuple[int, ...]


def _items(lines: list[str]) -> list[_Item]:
    """Each list item with the first line of each item it is nested in (one pass).

    An item is its marker line and the lines after it that continue it (wrapped text, a
    code block: its "- " lines are code, not items).
    """
    starts, fenced = [], False
    for i, line in enumerate(lines):
        if is_code(line):  # a code block inside an item is the item's, whole
            fenced = not fenced
        elif not fenced and ITEM.match(line):
            starts.append(i)
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    out: list[_Item] = []
    open_items: list[tuple[int, int]] = []  # (indent, first line) of the items still open
    for a, b in zip(starts, [*starts[1:], len(lines)], strict=True):
        indent = len(lines[a]) - len(lines[a].lstrip())
        while open_items and open_items[-1][0] >= indent:
            open_items.pop()
        out.append(_Item(a, b, indent, tuple(line for _, line in open_items)))
        open_items.append((indent, a))
    return out


def _cut_words(text: str, budget: int) -> str:
    """``text`` within ``budget``: cut at a word's end, "…" after it."""
    if len(text) <= budget:
        return text
    cut = text[: max(budget - 2, 0)].rsplit(" ", 1)[0]
    return f"{cut} …" if cut else ""


#: The least of an item a numbered list cut to a share of its room shows.
_MIN_ITEM_CHARS = 24
#: A numbered list whose asked items come after at most this many others is shown from its top.
_MAX_LEAD_ITEMS = 3


def _items_window(block: str, wanted: frozenset[str] | set[str], budget: int, marked: str) -> str:
    """A long list cut to its items that say most of what was asked, in the list's order.

    An options list of an API reference holds one answer per item, far apart: a run of lines
    around the likeliest sentence showed the options next to it, not the one the question
    names. Each item is weighed by the question's terms it holds, a term held by few items
    weighing more (``cancelId`` over "button" in a dialog's options); the item holding
    ``marked`` (the reader's likeliest sentence) comes first, cut to its sentences around it
    when it is longer than the room. Then the items nearest it, while they fit. An item keeps
    the first line of each item it is nested in ("- `options` Object"), and "…" stands where
    items were left out (a paragraph of its own in a numbered list: a "…" line would join the
    item above and renumber the items below).
    """
    lines = block.splitlines()
    items = _items(lines)
    wanted = set(wanted)
    said = [term_set(" ".join(lines[it.start : it.end])) & wanted for it in items]
    df: dict[str, int] = {}
    for seen in said:
        for t in seen:
            df[t] = df.get(t, 0) + 1
    weight = [sum(math.log(1 + len(items) / df[t]) for t in seen) for seen in said]
    squeezed = " ".join(marked.split())
    home = next(
        (
            k
            for k, it in enumerate(items)
            if squeezed and squeezed in " ".join(" ".join(lines[it.start : it.end]).split())
        ),
        None,
    )
    numbered = bool(ORDERED.match(block))
    # a "…" between items: a paragraph of its own in a numbered list, else a line
    between = ["", "…", ""] if numbered else ["…"]
    gap = 3 if numbered else 2  # what it takes, counted for each line shown
    shown: dict[int, str] = {}  # line -> its text as shown
    size = 0

    def cost(rows: dict[int, str]) -> int:
        return sum(len(t) + 1 + gap for i, t in rows.items() if i not in shown)

    weighed = sorted(
        (k for k, w in enumerate(weight) if w > 0 and k != home), key=lambda k: (-weight[k], k)
    )
    near = home if home is not None else 0
    nearest = sorted(range(len(items)), key=lambda k: (abs(k - near), k))
    phases: tuple[tuple[str, list[int]], ...] = (
        ("home", [home] if home is not None else []),
        ("weighed", weighed),
        ("near", nearest),
    )
    picked = [k for k in (home, *weighed) if k is not None]
    if numbered and picked and min(picked) <= _MAX_LEAD_ITEMS:
        # a numbered list is a sequence ("from highest to lowest"): without its first few
        # items, its second reads as its first. It is shown from its first item to the last
        # one that says what was asked, the others cut to a share of the room if need be
        last = items[max(picked)].end
        lead = {i: lines[i] for i in range(items[0].start, last)}
        asked = {i for k in picked for i in range(items[k].start, items[k].end)}
        whole = sum(len(t) + 1 for t in lead.values()) + gap  # no gap inside, "…" after
        others = [i for i in lead if i not in asked]
        if whole > budget and others:
            room = budget - gap - sum(len(lead[i]) + 1 for i in asked)
            share = room // len(others) - 1
            if share >= _MIN_ITEM_CHARS:
                lead.update({i: _cut_words(lead[i], share) for i in others})
                whole = sum(len(t) + 1 for t in lead.values()) + gap
        if whole <= budget:
            size = whole
            shown.update(lead)
            phases = (("near", nearest),)
    for phase, ks in phases:
        for k in ks:
            it = items[k]
            rows = {i: lines[i] for i in (*it.parents, *range(it.start, it.end))}
            if size + cost(rows) > budget and phase == "home":
                # the likeliest item, longer than the room: its words around the marked
                # sentence (its code block left out: cut, code is no longer code)
                first = lines[it.start].strip()
                marker = m.group(0).strip() + " " if (m := ITEM.match(first)) else ""
                prose = [first[len(marker) :].strip() if marker else first]
                for line in lines[it.start + 1 : it.end]:
                    if is_code(line):
                        break
                    prose.append(line.strip())
                room = budget - cost({i: lines[i] for i in it.parents}) - gap - 1
                room -= it.indent + len(marker)
                text = _cut_words(_trim(" ".join(prose), marked, room), room)
                rows = {i: lines[i] for i in it.parents} | (
                    {it.start: " " * it.indent + marker + text} if text else {}
                )
            if size + cost(rows) > budget:
                if phase == "near" and shown:
                    break  # the nearest items, without holes
                continue
            size += cost(rows)
            shown.update({i: t for i, t in rows.items() if i not in shown})
    if not shown:
        return "…"
    out: list[str] = []
    last = -1
    for i in sorted(shown):
        if i > last + 1:
            out += between[1:] if numbered and not out else between  # no blank line atop
        out.append(shown[i])
        last = i
    if last < len(lines) - 1:
        out += between[:-1] if numbered else between
    return "\n".join(out)


def _run_window(block: str, wanted: frozenset[str] | set[str], budget: int) -> str:
    """A code block, list or table cut to the run of lines that says most of ``wanted``.

    A code block keeps its fences, a table its header row (and the rule under it): a row
    without its header is a row of values. "…" stands where lines were left out. Of equal
    runs, the earliest, moved so that its first line saying any of ``wanted`` stands a third
    of the way down.
    """
    head, lines, tail = frame(block)
    room = budget - sum(len(x) + 1 for x in head + tail) - 4
    joined = _logical_lines(lines) if is_code(block) else lines
    # (a continued command longer than the room is cut by its lines, as any other line run)
    body = joined if all(len(unit) + 1 <= room for unit in joined) else lines
    said = [term_set(line) & wanted for line in body]
    best: tuple[int, int, int] = (-1, 0, 0)
    for lo in range(len(body)):
        hi, size, seen = lo, 0, set[str]()
        while hi < len(body) and size + len(body[hi]) + 1 <= room:
            size, seen, hi = size + len(body[hi]) + 1, seen | said[hi], hi + 1
        if hi > lo and len(seen) > best[0]:
            best = (len(seen), lo, hi)
    if best[0] < 0:
        return block if not body else "\n".join(head + ["…"] + tail)
    _, lo, hi = best
    hit = [i for i in range(lo, hi) if said[i]]
    if hit:  # what it says first stands a third of the way down: the lines above set it up
        lo = max(0, min(hit[0], hit[0] - (hi - lo - (hit[-1] - hit[0] + 1)) // 3))
        hi, size = lo, 0
        while hi < len(body) and size + len(body[hi]) + 1 <= room:
            size, hi = size + len(body[hi]) + 1, hi + 1
    # a configuration's lines keep the keys and the section they sit under: "port: 9090"
    # without "web:" above it, or a TOML key without its "[table]", says where it goes no more
    above = _nested_in(body, lo) if head and _DATA_FENCE.match(head[0]) and lo > 0 else []
    if above:
        lo, hi, above = _with_nesting(body, said, lo, hi, above, room)
    shown = [*above, *range(lo, hi)]
    cut, last = list(head), -1
    for i in shown:
        if i > last + 1:
            cut.append("…")
        cut.append(body[i])
        last = i
    return "\n".join(cut + (["…"] if hi < len(body) else []) + tail)


def _with_nesting(
    body: list[str], said: list[set[str]], lo: int, hi: int, above: list[int], room: int
) -> tuple[int, int, list[int]]:
    """The run ``lo:hi`` with the lines ``above`` it sits under, made to fit ``room``.

    Room is made on the side that says less; the run is kept alone when the lines above
    would leave out every line of it that says anything asked.
    """
    run, told = (lo, hi), any(said[lo:hi])
    while hi > lo + 1:
        size = sum(len(x) + 1 for x in body[lo:hi]) + sum(len(body[i]) + 3 for i in above)
        if size <= room:  # (each line above, and the "…" after it)
            return lo, hi, above
        if len(said[hi - 1]) > len(said[lo]):
            lo += 1
            above = _nested_in(body, lo)
        else:
            hi -= 1
    size = len(body[lo]) + 1 + sum(len(body[i]) + 3 for i in above)
    if size <= room and (said[lo] or not told):
        return lo, hi, above
    return run[0], run[1], []


#: A fenced block in a configuration language: its lines are keys nested in keys or tables.
_DATA_FENCE = re.compile(r"\s*(`{3,}|~{3,})\s*(ya?ml|toml|ini|cfg|conf|json[c5]?)\s*$", re.I)
#: A TOML or INI table header: ``[tool.poetry]``, ``[[tool.poetry.source]]``.
_SECTION = re.compile(r"\s*\[\[?[A-Za-z_][\w.\-\"' ]*\]\]?\s*(#.*)?$")


def _nested_in(lines: list[str], at: int) -> list[int]:
    """The lines above ``lines[at]`` that it sits under, top first.

    Each less indented key above it (YAML, JSON) and the table header of its section (TOML,
    INI).
    """
    first = next((line for line in lines[at:] if line.strip()), "")
    if _SECTION.match(first):
        return []  # a table's name is its whole path
    indent = len(first) - len(first.lstrip())
    out: list[int] = []
    for i in range(at - 1, -1, -1):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith(("#", "//", ";")):
            continue
        if _SECTION.match(line):
            out.append(i)
            break
        depth = len(line) - len(line.lstrip())
        if depth < indent:
            out.append(i)
            indent = depth
    return sorted(out)


def _logical_lines(lines: list[str]) -> list[str]:
    r"""A code block's lines, a line ending in a backslash joined to the next one.

    A command continued over lines (a shell's ``sudo security add-trusted-cert … \`` and the
    line after it) is one command: cut inside, it fails when pasted.
    """
    out: list[str] = []
    for line in lines:
        if out and out[-1].rstrip().endswith("\\"):
            out[-1] += "\n" + line
        else:
            out.append(line)
    return out


def _trim(block: str, sentence: str, budget: int) -> str:
    """A long paragraph cut to whole sentences around ``sentence``, "…" where cut."""
    units = split_sentences(" ".join(block.split()))
    squeezed = " ".join(sentence.split())
    at = next((i for i, u in enumerate(units) if squeezed in u or u in squeezed), 0)
    lo = hi = at
    size = len(units[at]) if units else 0
    while hi + 1 < len(units) and size + len(units[hi + 1]) + 1 <= budget:
        hi, size = hi + 1, size + len(units[hi + 1]) + 1
    while lo > 0 and size + len(units[lo - 1]) + 1 <= budget:
        lo, size = lo - 1, size + len(units[lo - 1]) + 1
    text = " ".join(units[lo : hi + 1])
    return ("… " if lo > 0 else "") + text + (" …" if hi < len(units) - 1 else "")


def where(ev: Evidence) -> str:
    """A passage's document and section, as "Title › Section"."""
    path = heading_of(ev).split(" › ")
    title = str(ev["title"])
    if path[0] == title:  # the page's own title opens its sections' path
        path = path[1:]
    return " › ".join([title, *[p for p in path if p]])


def passages_reply(
    chosen: list[tuple[Evidence, str]], limit: int = MAX_REPLY_CHARS, question: str = ""
) -> str:
    """The ``passages`` reply: the header, then each passage under its place, cited.

    In the search's order, each passage is quoted whole while the room left keeps
    ``PASSAGE_FLOOR`` for each one after it (or less, if it needs less); else it is quoted
    around its marked sentence within what it may take, a long code block, list or table cut
    to its lines that say most of the question's terms (a table keeps its header row). On
    the dev sets' tuning halves (``bench/devsets.py``) this showed the fact in 71 of 105
    questions, against 67 when each passage had a fair share (the first twice) and 65 with a
    floor of 450.
    """
    out = [PASSAGES_HEADER]
    room = limit - len(PASSAGES_HEADER) - 2
    places = [f"{where(ev)} [src:{ev['source_id']}]" for ev, _ in chosen]
    wanted = frozenset(term_set(question))
    needs = [
        len(place) + 8 + len(excerpt(ev, sentence, limit, wanted=wanted))
        for place, (ev, sentence) in zip(places, chosen, strict=True)
    ]
    # a passage whose marked sentence introduces code ("add the following to your
    # configuration file:") is kept room for that code too: the sentence alone is half an
    # answer (golden case: test_reader.py, ``…_keeps_room_for_the_code_a_later_one_introduces``)
    floors = [
        max(PASSAGE_FLOOR, min(len(place) + 8 + lead, LEAD_IN_FLOOR) if lead else 0)
        for place, (ev, sentence) in zip(places, chosen, strict=True)
        for lead in [_lead_in_size(ev, sentence, wanted)]
    ]
    for n, (ev, sentence) in enumerate(chosen):
        label = f"{len(out)}. {places[n]}"  # numbered as shown: the header is out[0]
        reserve = sum(
            min(need, floor) for need, floor in zip(needs[n + 1 :], floors[n + 1 :], strict=True)
        )
        may = min(needs[n], room - reserve)
        text = excerpt(ev, sentence, max(may - len(label) - 4, 0), True, wanted)
        if text and len(text) + len(label) + 4 > room:
            text = excerpt(ev, sentence, max(room - len(label) - 4, 0), True, wanted)
        if not text or len(text) + len(label) + 4 > room:
            continue
        out.append(f"{label}\n\n{text}")
        room -= len(out[-1]) + 2
    return "\n\n".join(out)


def _lead_in_size(ev: Evidence, sentence: str, wanted: frozenset[str]) -> int:
    """The length of ``sentence`` with what it introduces, when it ends in ":" (else 0)."""
    first = sentence.strip().split("\n", 1)[0]
    if not first.rstrip().endswith(":"):
        return 0
    return len(excerpt(ev, sentence, len(first), wanted=wanted))


#: The most of an ``answered`` reply its answering passage may take.
ANSWER_PASSAGE_CHARS = 1000


def answer_reply(
    chosen: list[tuple[Evidence, str]], header: str, also: list[str], limit: int = MAX_REPLY_CHARS
) -> str:
    """The ``answered`` reply: the passage that answers, then the other quotes that fit.

    The passage is quoted around its answering sentence (in bold) with the code, list or
    table that sentence introduces — the sentence alone is half an answer ("To disable
    verification:" without the code). Quotes from other passages follow as lines, cited.
    """
    ev, sentence = chosen[0]
    label = f"{where(ev)} [src:{ev['source_id']}]"
    room = limit - len(header) - len(label) - 6
    # a procedure's steps are quoted as the unit the reader numbered; a sentence with the list
    # or code it introduces ("…:") is quoted with its passage around it
    lines = sentence.strip().split("\n")
    procedure = len(lines) > 1 and not lines[0].endswith(":") and len(sentence) <= room
    budget = min(room, ANSWER_PASSAGE_CHARS)
    text = sentence.strip() if procedure else excerpt(ev, sentence, budget, strict=True)
    out = [header, f"{label}\n\n{text}"]
    used = sum(len(x) + 2 for x in out)
    more: list[str] = []
    for line in also:
        if f"[src:{ev['source_id']}]" in line or sentence and sentence in line:
            continue
        if used + len(line) + 1 >= limit:
            break
        more.append(line)
        used += len(line) + 1
    if more:
        out.append("\n".join(more))
    return "\n\n".join(out)
