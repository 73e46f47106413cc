"""``evaluate``: is the evidence relevant, complete and fresh enough? Answer, read, or search.

The reader judges (``Reader.judge``: word coverage offline, a structured verdict from the
model in LLM mode); this node keeps the flow's rules: pages a web result points to and pages
the question names are read first, the verdict holds only the steps this flow has, and the
round is counted against the budget.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import kept, relevance
from seekgraph.nodes.plumbing.services import Services, node_name, now
from seekgraph.nodes.plumbing.web import typed_urls
from seekgraph.nodes.reader import reader_for
from seekgraph.state.budget import exhausted, spend
from seekgraph.state.events import node_event
from seekgraph.state.models import is_pointer
from seekgraph.state.schemas import SearchState, Verdict


def unread_pointers(state: SearchState) -> list[str]:
    """Pages a kept web search result points to, not read yet (best first)."""
    read = set(state.get("documents_read", []))
    pointers = sorted(
        (ev for ev in kept(state.get("evidence", [])) if is_pointer(ev)),
        key=relevance,
        reverse=True,
    )
    return list(dict.fromkeys(ev["doc_id"] for ev in pointers if ev["doc_id"] not in read))


ACTIONS = frozenset({"answer", "read", "search"})
"""What ``evaluate`` may decide; a flow without a step leaves its action out."""


def within(verdict: Verdict, actions: frozenset[str]) -> Verdict:
    """The verdict with only the steps this flow has: no reading → search; no search → answer."""
    if verdict["action"] == "read" and not verdict["read_doc_ids"]:
        verdict = {**verdict, "action": "search"}
    if verdict["action"] == "read" and "read" not in actions:
        verdict = {**verdict, "action": "search", "read_doc_ids": []}
        verdict["reason"] += " (this flow reads no documents whole)"
    if verdict["action"] == "search" and "search" not in actions:
        verdict = {**verdict, "action": "answer", "gap_questions": []}
        verdict["reason"] += " (this flow searches once)"
    return verdict


async def evaluate(
    state: SearchState,
    runtime: Runtime[Context],
    services: Services,
    actions: frozenset[str] = ACTIONS,
) -> dict[str, Any]:
    """Decide what to do next, and count rounds that brought nothing new."""
    ctx = runtime.context
    judged = await reader_for(services, state, ctx).judge(state)
    verdict, tokens, calls, strategy = judged.verdict, judged.tokens, judged.calls, judged.strategy
    pointers = unread_pointers(state)
    if pointers and verdict["action"] == "answer":  # a search engine's snippet is no evidence
        verdict |= {
            "action": "read",
            "read_doc_ids": pointers[: ctx.search.max_documents_per_read],
            "reason": "reading the pages the web results point to (a snippet is no evidence)",
        }
    named = typed_urls(state)
    if named:  # the question names pages: read them before anything else
        verdict |= {
            "action": "read",
            "read_doc_ids": named[: ctx.search.max_documents_per_read],
            "reason": "reading the page(s) the question names",
        }
    verdict = within(verdict, actions)
    round_ = state["budget"]["rounds"]
    new = [
        ev for ev in state.get("evidence", []) if ev["round"] == round_ and ev["kept_by"] != "none"
    ]
    bad = 1 if not new and verdict["action"] != "answer" and not state.get("documents_read") else 0
    budget = spend(state["budget"], now=now(), tokens=tokens, bad_attempts=bad)
    spent = exhausted(budget) if verdict["action"] != "answer" else None
    summary = f"{verdict['action']}: {verdict['reason']}"
    if spent:
        summary += f" — but {spent}, so answering now"
    runtime.stream_writer(
        node_event(node_name("evaluate"), summary, strategy=strategy, budget_spent=spent, **verdict)
    )
    update: dict[str, Any] = {"verdict": verdict, "budget": budget}
    if calls:
        update["model_calls"] = calls
    return update
