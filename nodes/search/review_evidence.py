"""``review_evidence``: a person sees the kept evidence before the answer is written.

Runs only when the run asks for it (``Context.review_before_answer``). The node calls
``interrupt()`` with the evidence and returns the decision; it has no side effects, because
it runs again from the start when the run is resumed with ``Command(resume=...)``. The
decision ``{"drop": [source ids]}`` removes those passages; anything else keeps them all.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import kept
from seekgraph.nodes.plumbing.services import node_name
from seekgraph.state.events import node_event
from seekgraph.state.models import Evidence
from seekgraph.state.reducers import replace
from seekgraph.state.schemas import SearchState


async def review_evidence(state: SearchState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Pause for a person's review of the evidence; drop what they reject."""
    evidence = state.get("evidence", [])
    shown = [
        {
            "id": ev["source_id"],
            "title": ev["title"],
            "source": ev["source"],
            "doc_id": ev["doc_id"],
            "text": ev["snippet"],
        }  # fmt: skip
        for ev in kept(evidence)
    ]
    decision = interrupt({"question": state["question"], "evidence": shown})
    drop = set(decision.get("drop") or []) if isinstance(decision, dict) else set()
    unknown = drop - {ev["source_id"] for ev in evidence}
    reviewed: list[Evidence] = [
        {**ev, "kept_by": "none", "scores": {**ev["scores"], "review": 0.0}}
        if ev["source_id"] in drop
        else ev
        for ev in evidence
    ]
    runtime.stream_writer(
        node_event(
            node_name("review_evidence"),
            f"reviewed {len(shown)} passages; dropped {len(drop - unknown)}",
            dropped=sorted(drop - unknown),
            unknown=sorted(unknown),
        )
    )
    return {"evidence": replace(reviewed)} if drop - unknown else {}
