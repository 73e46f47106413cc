"""Pure routers and ``Send`` fan-outs of the search graph.

No I/O, no clock: they read the state and the run's ``Context`` only.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Send

from seekgraph.nodes.plumbing.context import Context
from seekgraph.state.budget import exhausted
from seekgraph.state.schemas import SearchBranch, SearchState


def fan_out_expand_query(state: SearchState) -> list[Send] | Literal["filter_results"]:
    """One ``search_source`` branch per (query variant, source); none left → filter directly.

    Sources whose queries leave the deployment (the web) get this round's ``web_queries``
    instead, each with the public text it was built from, which the source checks again.
    """
    round_ = state["budget"]["rounds"]
    outbound = set(state.get("outbound", []))
    sends = []
    for query in state.get("variants", []):
        for source in state["sources"]:
            if source not in outbound:
                branch: SearchBranch = {"query": query, "source": source, "round": round_}
                sends.append(Send("search_source", branch))
    if outbound:
        public = public_text(state)
        for query in state.get("web_queries", []):
            for source in state["sources"]:
                if source in outbound:
                    out: SearchBranch = {
                        "query": query,
                        "source": source,
                        "round": round_,
                        "public": public,
                    }
                    sends.append(Send("search_source", out))
    return sends or "filter_results"


def public_text(state: SearchState) -> str:
    """What a web query may be made of: the person's words, and text that came from the web."""
    web = [
        f"{ev['title']} {ev['snippet']}"
        for ev in state.get("evidence", [])
        if ev["source"] in set(state.get("outbound", []))
    ]
    asked = state.get("asked")
    return "\n".join([state["question"] if asked is None else asked, *web])


def route_after_evaluate(
    state: SearchState, runtime: Runtime[Context], always_review: bool = False
) -> Literal["integrate", "review_evidence", "read_documents", "expand_query"]:
    """Answer when the verdict says so or the budget is spent; otherwise read or search.

    A run that asks for a review (``review_before_answer``), or a flow that always has one,
    passes by ``review_evidence``.
    """
    verdict = state["verdict"]
    if verdict["action"] == "answer" or exhausted(state["budget"]):
        review = always_review or runtime.context.review_before_answer
        return "review_evidence" if review else "integrate"
    if verdict["action"] == "read" and verdict["read_doc_ids"]:
        return "read_documents"
    return "expand_query"


def route_after_check_answer(state: SearchState) -> Literal["expand_query", "__end__"]:
    """Finish when the answer stands or the budget is spent; otherwise one more round."""
    if state["answer_check"]["ok"] or exhausted(state["budget"]):
        return "__end__"
    return "expand_query"


def lead_of(result: dict[str, Any], ledger: dict[str, Any]) -> str:
    """The title and first sentence of a sub-question's most relevant passage.

    A dependent reads it when the answer quoted nothing.
    """
    for source_id in result.get("evidence", [])[:1]:
        ev = ledger.get(source_id)
        if ev:
            return f"{ev['title']}. {ev['snippet'].split('. ')[0]}"
    return ""


def next_batch(state: Any) -> list[Send] | Literal["write_report"]:
    """One ``Send`` per sub-question whose dependencies are answered; none left → report.

    Each carries only its dependencies' answers (the context slice).
    Siblings finishing in the same batch cannot see each other: a dependent waits for the
    next batch, after ``schedule`` has looked at the results.
    """
    results = state.get("results", {})
    done = {i for i, r in results.items() if r["status"] == "done"}
    sends = []
    for sub in state["plan"]:
        if sub["id"] in results or not set(sub["depends_on"]) <= done:
            continue
        depends = [
            {
                "id": d,
                "question": results[d]["question"],
                "answer": results[d]["answer"],
                "lead": lead_of(results[d], state.get("ledger", {})),
            }
            for d in sub["depends_on"]
        ]
        # the person's own words: the request, and the sub-question when they wrote the plan
        asked = state["question"]
        if state.get("plan_status") == "written":
            asked = f"{asked}\n{sub['question']}"
        payload = {
            "sub": sub,
            "depends": depends,
            "trace_id": state.get("trace_id", ""),
            "asked": asked,
            "model": state.get("model"),
        }
        sends.append(Send("research_one", payload))
    return sends or "write_report"


def after_review(state: Any) -> Literal["plan_research", "schedule"]:
    """A replan goes back to planning; otherwise the plan runs."""
    return "plan_research" if state.get("plan_status") == "replan" else "schedule"


def after_check(state: Any) -> Literal["plan_gaps", "__end__"]:
    """One more round for what the report lacks (``check_report`` says whether it is due)."""
    return "plan_gaps" if state.get("gaps_pending") else "__end__"
