"""``check_answer``: prove every citation, separately from writing the answer.

A citation that names no retrieved evidence is removed from the answer and the run gets one
more round while budget lasts; the reader then reviews the answer's support
(``Reader.check``: the model in LLM mode; the offline reader quotes, so it has nothing to add).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import kept
from seekgraph.nodes.plumbing.prompting import CITATION, cited_ids
from seekgraph.nodes.plumbing.services import Services, node_name, now
from seekgraph.nodes.reader import reader_for
from seekgraph.state.budget import exhausted, spend
from seekgraph.state.events import node_event
from seekgraph.state.models import Citation, Evidence, ModelCall
from seekgraph.state.schemas import AnswerCheck, SearchState


def citation_of(ev: Evidence) -> Citation:
    """How a piece of evidence is shown as a citation."""
    citation: Citation = {
        "id": ev["source_id"],
        "title": ev["title"],
        "source": ev["source"],
        "kind": ev["kind"],
        "doc_id": ev["doc_id"],
        "authority": ev["authority"],
        "url": ev["url"],
        "updated_at": ev["updated_at"],
        "snippet": ev["snippet"],
        "deprecated": ev["deprecated"],
        "superseded_by": ev["superseded_by"],
    }
    if ev.get("fetched_at"):
        citation["fetched_at"] = ev["fetched_at"]
    if ev["kind"] == "web" and ev["url"] and "#" not in ev["url"]:
        citation["url"] = ev["url"] + text_fragment(ev["snippet"])
    return citation


def text_fragment(passage: str, words: int = 8) -> str:
    """A URL text fragment (``#:~:text=…``) that scrolls a browser to the passage's start."""
    lines = [ln for ln in passage.splitlines() if ln.strip() and not ln.startswith("#")]
    start = " ".join(" ".join(lines).split()[:words]).rstrip(" …")
    return f"#:~:text={quote(start, safe='')}" if start else ""


def strip_unknown(answer: str, known: set[str]) -> str:
    """The answer without citations to unknown ids."""
    return CITATION.sub(lambda m: m.group(0) if m.group(1) in known else "", answer)


async def check_answer(
    state: SearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Verify citations (and, with a model, support); decide whether the answer stands."""
    ctx = runtime.context
    evidence = {ev["source_id"]: ev for ev in kept(state.get("evidence", []))}
    answer = state["answer"]
    cited = cited_ids(answer)
    unknown = [c for c in cited if c not in evidence]
    answer = strip_unknown(answer, set(evidence))
    ok = not unknown
    reason = (
        "every citation names retrieved evidence"
        if ok
        else (f"{len(unknown)} citation(s) name no retrieved evidence: {', '.join(unknown)}")
    )
    nothing = not evidence
    if ok and not nothing and not cited_ids(answer):
        ok, reason = False, "the answer cites no source"
    tokens = 0
    calls: list[ModelCall] = []
    if ok and not nothing:
        reader = reader_for(services, state, ctx)
        sources = [evidence[c] for c in cited_ids(answer)]
        review = await reader.check(state["question"], answer, sources)
        tokens, calls = review.tokens, review.calls
        if review.problem is not None:
            ok, reason = False, review.problem
        reason += review.note
    budget = spend(state["budget"], now=now(), tokens=tokens, bad_attempts=0 if ok else 1)
    final = ok or exhausted(budget) is not None
    check: AnswerCheck = {"ok": ok, "unknown_citations": unknown, "reason": reason}
    # Conflicts and version notes cite sources too: the person must be able to open them.
    shown = (
        cited_ids(answer)
        + [claim["id"] for conflict in state.get("conflicts", []) for claim in conflict["claims"]]
        + [i for note in state.get("notes", []) for i in cited_ids(note)]
    )
    citations = [citation_of(evidence[c]) for c in dict.fromkeys(shown) if c in evidence]
    verdict = (
        "accepted" if ok else ("kept (budget spent)" if final else "rejected; searching again")
    )
    runtime.stream_writer(
        node_event(node_name("check_answer"), f"answer {verdict}: {reason}", **check)
    )
    update: dict[str, Any] = {
        "answer": answer,
        "citations": citations,
        "answer_check": check,
        "budget": budget,
    }
    if calls:
        update["model_calls"] = calls
    return update
