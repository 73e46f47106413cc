"""Evidence as a prompt sees it, the thread's earlier turns, and the ``[src:ID]`` citations."""

from __future__ import annotations

import re
from collections.abc import Iterable

from seekgraph.state.models import AUTHORITY_LABELS, Evidence
from seekgraph.state.schemas import SearchState

CITATION = re.compile(r"\[src:([^\]\s]+)\]")


def render_evidence(evidence: Iterable[Evidence], limit_chars: int = 1200) -> str:
    """Evidence as XML-tagged blocks for a prompt."""
    blocks = []
    for ev in evidence:
        attrs = (
            f'id="{ev["source_id"]}" doc_id="{ev["doc_id"]}" kind="{ev["kind"]}" '
            f'authority="{AUTHORITY_LABELS.get(ev["authority"], ev["authority"])}" '
            f'updated="{ev["updated_at"] or "unknown"}"'
        )
        if ev["deprecated"]:
            attrs += ' deprecated="true"'
        blocks.append(f"<source {attrs}>\n{ev['title']}\n{ev['snippet'][:limit_chars]}\n</source>")
    return "\n".join(blocks)


#: A citation in a form of the model's own: ``[kb/vpn#0]``, ``(src: kb/vpn#0)``,
#: ``[source: a#1, b#2]``.
_LOOSE_CITATION = re.compile(
    r"[\[(]\s*(?:(?:src|source|id)\s*:\s*)?([^\[\]()\s,;]+(?:\s*[,;]\s*[^\[\]()\s,;]+)*)\s*[\])]",
    re.I,
)


def repair_citations(answer: str, known: set[str]) -> str:
    """``answer`` with citations of known ids written as ``[src:ID]``, whatever their form.

    Small local models often drop the ``src:``, list several ids in one bracket, or write
    the source's name with a colon (Qwen 1.5B: ``[docs:orjson#37]`` for ``docs/orjson#37``).
    """

    def known_as(cited: str) -> str | None:
        if cited in known:
            return cited
        slashed = cited.replace(":", "/", 1)
        return slashed if slashed in known else None

    def fix(m: re.Match[str]) -> str:
        ids = [known_as(i.strip()) for i in re.split(r"[,;]", m.group(1))]
        return "".join(f"[src:{i}]" for i in ids) if all(ids) else m.group(0)

    return _LOOSE_CITATION.sub(fix, answer)


#: a tag of the prompt's layout, with or without attributes: ``<needs>``, ``<source id="…">``
_TAG = re.compile(r"</?([a-z_]+)(?:\s[^<>]*)?>")


#: a block holding no other block: ``<question>…</question>``
_BLOCK = re.compile(r"<([a-z_]+)(?:\s[^<>]*)?>((?:(?!</?[a-z_]+[\s>]).)*?)</\1>", re.S)


#: a <source …> block, closed or cut off (at the next source, the end of the sources, or the
#: reply's end)
_SOURCE_BLOCK = re.compile(r"<source\b[^>]*>.*?(?:</source>|(?=<source\b)|(?=</sources>)|\Z)", re.S)


#: the blocks of a prompt that quote others' words: the sources and the thread's earlier turns
_QUOTED = re.compile(r"<(sources|conversation)>.*?</\1>", re.S)


def layout_tags(prompt: str) -> set[str]:
    """The tags of the prompt's own layout (``question``, ``needs``, ``sources``, ``source``…).

    A tag-like word inside a source is the document's, not the prompt's: a placeholder such as
    ``pip install <package>`` or ``-v <version>`` copied into a right answer is kept.
    """
    quoted = "".join(m.group(0) for m in _QUOTED.finditer(prompt))
    own = set(_TAG.findall(_QUOTED.sub(lambda m: f"<{m.group(1)}></{m.group(1)}>", prompt)))
    return own | ({"source"} if "<source " in quoted or "<source>" in quoted else set())


def _flat(text: str) -> str:
    return " ".join(text.split())


def strip_echo(answer: str, prompt: str) -> str:
    """``answer`` without what it copies of its prompt's layout and words.

    Qwen 0.5B repeats its prompt — ``<question>…</question> <needs>…</needs> <sources>…`` —
    before or instead of an answer, or wraps its answer in one of the prompt's blocks
    (``<needs> - an amount: Python 3.10 or later [src:…] </needs>``, ``<answer>…</answer>``).
    Removed: a block of the prompt's layout that the prompt holds whole, any ``<source>``
    block (a copy, however partial, of what the model was shown), the tags themselves,
    a line of the prompt's own (a rule, the question), and a need's label ("- an amount:").
    A source's sentence or an earlier answer's line the reply repeats stays: it is the
    reply's claim, to be cited.
    """
    layout = layout_tags(prompt)
    tags = layout | {"answer"}
    whole = _flat(prompt)
    # what the prompt says itself: not its sources, nor the thread's earlier answers (a
    # follow-up's answer may repeat a line of the last one)
    outside = _flat(_QUOTED.sub(" ", prompt))
    needs = re.search(r"<needs>(.*?)</needs>", prompt, re.S)
    labels = re.findall(r"^- ([^:\n]{1,40}):", needs.group(1) if needs else "", re.M)

    def copied_block(m: re.Match[str]) -> str:
        return "" if m.group(1) in layout and _flat(m.group(2)) in whole else m.group(0)

    # a source copied in part, or with attributes of its own, is still no answer: a model's
    # own words are never inside a <source> block (Qwen 0.5B: "orjson # numpy Note a …")
    out = _SOURCE_BLOCK.sub("", answer) if "source" in layout else answer
    before = None
    while out != before:  # innermost blocks first: a copied <sources> holds copied <source>s
        before, out = out, _BLOCK.sub(copied_block, out)
    out = _TAG.sub(lambda m: "\n" if m.group(1) in tags else m.group(0), out)
    lines = []
    for line in out.splitlines():
        text = _flat(line).lstrip("- ").strip()
        if len(text) >= 20 and text in outside:
            continue
        for label in labels:
            line = re.sub(rf"^\s*-?\s*{re.escape(label)}:\s*", "", line)
        lines.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def cited_ids(answer: str) -> list[str]:
    """Citation ids in order of first appearance."""
    return list(dict.fromkeys(CITATION.findall(answer)))


def conversation_of(state: SearchState, turns: int = 3) -> str:
    """The last few turns of the thread, for prompts."""
    return "\n".join(
        f"Q: {t['question']}\nA: {t['answer'][:500]}" for t in state.get("turns", [])[-turns:]
    )
