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


def cited_ids(answer: str) -> list[str]:
    """Citation ids in order of first appearance."""
    return list(dict.fromkeys(CITATION.findall(answer)))


def conversation_of(state: SearchState, turns: int = 3) -> str:
    """The last few turns of the thread, for prompts."""
    return "\n".join(
        f"Q: {t['question']}\nA: {t['answer'][:500]}" for t in state.get("turns", [])[-turns:]
    )
