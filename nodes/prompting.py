"""Evidence as a prompt sees it, the thread's earlier turns, and the ``[src:ID]`` citations."""

from __future__ import annotations

import re
from collections.abc import Iterable

from state.models import AUTHORITY_LABELS, Evidence
from state.schemas import SearchState

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


def cited_ids(answer: str) -> list[str]:
    """Citation ids in order of first appearance."""
    return list(dict.fromkeys(CITATION.findall(answer)))


def conversation_of(state: SearchState, turns: int = 3) -> str:
    """The last few turns of the thread, for prompts."""
    return "\n".join(
        f"Q: {t['question']}\nA: {t['answer'][:500]}" for t in state.get("turns", [])[-turns:]
    )
