"""The offline reader's honest reply when it is not sure: the closest passages, quoted whole.

A good search engine shows the passage, not a verdict on it. Each passage keeps what makes
it useful — the code block a sentence introduces, a list, a table — and is cited; the
sentence most likely to answer is marked in bold. The whole reply stays under
``MAX_REPLY_CHARS``: a passage longer than its share is shown around its marked sentence,
whole blocks only, with "…" where text was left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from seekgraph.providers.sentences import blocks, split_sentences
from seekgraph.state.models import Evidence, heading_of

#: The first line of a ``passages`` reply.
PASSAGES_HEADER = "I could not confirm a direct answer; the closest passages are:"
#: A reply is shorter than this unless the person asks for more.
MAX_REPLY_CHARS = 1500
#: How many passages a ``passages`` reply shows at most.
MAX_PASSAGES = 3


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


def _is_code(block: str) -> bool:
    return block.lstrip().startswith(("```", "~~~"))


def _mark(block: str, sentence: str) -> str:
    """``block`` with ``sentence`` in bold (its words may be wrapped over lines there)."""
    words = sentence.strip().split()
    if not words or _is_code(block) or "**" in sentence or "\n" in sentence.strip():
        return block
    pattern = r"\s+".join(re.escape(w) for w in words)
    match = re.search(pattern, block)
    if match is None:
        return block
    return f"{block[: match.start()]}**{match.group(0)}**{block[match.end() :]}"


def excerpt(ev: Evidence, sentence: str, budget: int, strict: bool = False) -> str:
    """The passage around ``sentence``, whole blocks only, within ``budget`` characters.

    The block holding the sentence comes first; then what it introduces (a block ending in
    ":" and the code or list after it travel together, even past ``budget`` unless
    ``strict``), then what comes before it. A block is never cut: the text is the author's,
    and half a code block is no answer.
    """
    parts = blocks(body_of(ev))
    if not parts:
        return ""
    squeezed = " ".join(sentence.split())
    at = next((i for i, b in enumerate(parts) if squeezed and squeezed in " ".join(b.split())), 0)
    if len(parts[at]) > budget and not _is_code(parts[at]):
        parts[at] = _trim(parts[at], sentence, budget)
    lo = hi = at
    size = len(parts[at])
    while True:
        after = hi + 1 < len(parts)
        before = lo > 0
        if not after and not before:
            break
        introduces = after and (parts[hi].rstrip().endswith(":") or _is_code(parts[hi + 1]))
        if introduces or not before:
            nxt = len(parts[hi + 1]) + 2
            if size + nxt > budget and (strict or not (introduces and hi == at)):
                break
            hi, size = hi + 1, size + nxt
        else:
            prev = len(parts[lo - 1]) + 2
            if size + prev > budget:
                break
            lo, size = lo - 1, size + prev
    shown = [_mark(b, sentence) if i == at else b for i, b in enumerate(parts) if lo <= i <= hi]
    text = "\n\n".join(shown)
    return ("… " if lo > 0 else "") + text + ("\n\n…" if hi < len(parts) - 1 else "")


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


def shares(needs: list[int], room: int, weights: list[int]) -> list[int]:
    """Room per passage: each gets what it needs while its fair share allows it.

    A passage's fair share is the room left, split by ``weights``; the passages that need
    less than theirs are shown whole first, and what they leave is split among the others,
    which are quoted around their marked sentence. A fixed split cut a short passage's
    answering line ("… your user's privileges") to make room for a long page of code.
    """
    out = [0] * len(needs)
    left, weight = room, sum(weights)
    for i in sorted(range(len(needs)), key=lambda j: needs[j] / weights[j]):
        out[i] = max(min(needs[i], left * weights[i] // max(weight, 1)), 0)
        left, weight = left - out[i], weight - weights[i]
    return out


def passages_reply(chosen: list[tuple[Evidence, str]], limit: int = MAX_REPLY_CHARS) -> str:
    """The ``passages`` reply: the header, then each passage under its place, cited.

    Each passage is quoted whole when its fair share of the room allows (``shares``), else
    around its likeliest sentence. The first — the likeliest by the search — counts twice
    (it held the fact in 50 of the 87 dev questions where the fact was kept, the next two
    in 21) and keeps the code or list its sentence introduces even past its share, as long
    as two fifths of the room are left to the others; the others give up such a block
    rather than take the room of the passages after them.
    """
    out = [PASSAGES_HEADER]
    room = limit - len(PASSAGES_HEADER) - 2
    labels = [f"{n + 1}. {where(ev)} [src:{ev['source_id']}]" for n, (ev, _) in enumerate(chosen)]
    needs = [
        len(label) + 4 + len(excerpt(ev, sentence, limit))
        for label, (ev, sentence) in zip(labels, chosen, strict=True)
    ]
    for n, (ev, sentence) in enumerate(chosen):
        label = labels[n]
        share = shares(needs[n:], room, [2 if n == 0 else 1] + [1] * (len(chosen) - n - 1))[0]
        text = excerpt(ev, sentence, max(share - len(label) - 4, 0))
        others = room * 2 // 5 if n == 0 and len(chosen) > 1 else 0
        if len(text) + len(label) + 4 > max(share, room - others) or (n > 0 and len(text) > share):
            text = excerpt(ev, sentence, max(share - len(label) - 4, 0), strict=True)
        if text and len(text) + len(label) + 4 > room:  # its one block is longer than its share
            text = excerpt(ev, sentence, max(room - len(label) - 4, 0), strict=True)
        if not text or len(text) + len(label) + 4 > room:
            continue
        out.append(f"{label}\n\n{text}")
        room -= len(out[-1]) + 2
    return "\n\n".join(out)


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
    # a procedure's steps are quoted as the unit the reader numbered
    procedure = "\n" in sentence.strip() and len(sentence) <= room
    text = sentence.strip() if procedure else excerpt(ev, sentence, min(room, ANSWER_PASSAGE_CHARS))
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
