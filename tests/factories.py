"""Builders of plain test data: hits, evidence, a search state, a chat export folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seekgraph.sources.indexes.memory import InMemorySource, MemoryDocument
from seekgraph.state.budget import new_budget


def make_hit(source_id: str, score: float = 0.5, snippet: str = "s", **over: Any) -> Any:
    hit: dict[str, Any] = {
        "source_id": source_id,
        "doc_id": source_id.split("#")[0],
        "source": source_id.split("/")[0],
        "kind": "kb",
        "authority": 3,
        "title": "T",
        "snippet": snippet,
        "score": score,
        "url": None,
        "updated_at": None,
        "version": None,
        "deprecated": False,
        "superseded_by": None,
        "query": "q",
    }
    hit.update(over)
    return hit


def make_evidence(
    source_id: str,
    snippet: str = "s",
    *,
    score: float = 0.8,
    kept_by: str = "rerank",
    round_: int = 1,
    scores: dict[str, float] | None = None,
    **over: Any,
) -> Any:
    ev = make_hit(source_id, score, snippet, **over)
    ev.update(
        {
            "scores": {"retrieval": score, **(scores if scores is not None else {"rerank": 0.8})},
            "kept_by": kept_by,
            "queries": [ev["query"]],
            "round": round_,
        }
    )
    return ev


def make_state(question: str = "q", **over: Any) -> Any:
    state: dict[str, Any] = {
        "question": question,
        "mode": "extractive",
        "model": None,
        "sources": ["kb", "chat"],
        "budget": new_budget(
            now=1e12, max_rounds=3, max_tokens=1000, max_seconds=60, max_bad_attempts=2
        ),
        "variants": [],
        "tried_queries": [],
        "hits": [],
        "evidence": [],
        "source_failures": [],
        "filter_log": [],
        "documents_read": [],
        "bridge_terms": [],
        "turns": [],
        "verdict": {
            "action": "search",
            "reason": "",
            "coverage": 0.0,
            "missing": [],
            "read_doc_ids": [],
            "gap_questions": [],
        },
        "answer": "",
        "answer_check": {"ok": True, "unknown_citations": [], "reason": ""},
    }
    state.update(over)
    return state


def single_doc_source(text: str = "Install the WireGuard VPN client.") -> InMemorySource:
    doc = MemoryDocument("kb/vpn", "Connecting to the VPN", text, acl=["group:everyone"])
    return InMemorySource("kb", "kb", [doc])


def write_chat_export(
    folder: Path, channel: str, messages: list[tuple[str, str, str, str]]
) -> Path:
    """A chat export folder: one JSONL file of (id, author, ts, text) messages in ``channel``."""
    folder.mkdir()
    (folder / "export.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "channel": channel, "author": a, "ts": ts, "text": t}) + "\n"
            for i, a, ts, t in messages
        )
    )
    return folder


def people_workspace(root: Path, users: dict[str, dict[str, Any]]) -> Path:
    """A workspace with one tiny public knowledge base and these ``users`` (their e-mails…)."""
    (root / "kb").mkdir(parents=True)
    (root / "kb" / "a.md").write_text("# A\n\nNothing here.\n")
    config = {
        "sources": [{"name": "kb", "kind": "kb", "acl": ["group:everyone"]}],
        "users": {n: {"groups": ["everyone"], **info} for n, info in users.items()},
    }
    (root / "workspace.json").write_text(json.dumps(config))
    return root
