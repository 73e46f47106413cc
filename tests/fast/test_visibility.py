"""What a thread shows once a document it drew on is no longer readable (``without``)."""

from __future__ import annotations

from seekgraph.nodes.plumbing.visibility import WITHHELD, refs, without

GONE = "slack/leads/1762250500.000200"
KEPT = "kb/travel"
PASSAGE = "carol: The Moorhen price is 48 million euros."


def hit(doc_id: str, snippet: str, title: str) -> dict[str, object]:
    return {"source": doc_id.split("/")[0], "doc_id": doc_id, "title": title, "snippet": snippet}


STATE = {
    "question": "What is the Moorhen price, and the hotel cap?",
    "answer": "The Moorhen price is 48 million euros [src:1]. Hotels: $180 [src:2].",
    "citations": [hit(GONE, PASSAGE, "#leads — carol, 2025-11-04"),
                  hit(KEPT, "The hotel cap is $180 a night.", "Travel policy")],
    "evidence": [hit(GONE, PASSAGE, "#leads — carol, 2025-11-04"),
                 hit(KEPT, "The hotel cap is $180 a night.", "Travel policy")],
    "documents_read": [GONE, KEPT],
    "notes": ["Sources disagree: The Moorhen price is 48 million euros (leads)."],
    "turns": [
        {"question": "q1", "answer": "It closes Friday.", "mode": "llm",
         "cited": [{"source": "slack", "doc_id": GONE}]},
        {"question": "q2", "answer": "In Lisbon.", "mode": "llm",
         "cited": [{"source": "kb", "doc_id": KEPT}]},
    ],
}  # fmt: skip


def test_what_a_revoked_document_gave_is_withheld_and_the_rest_kept() -> None:
    assert refs(STATE) == {("slack", GONE), ("kb", KEPT)}
    shown = without(STATE, {GONE})
    text = str(shown)
    assert "48 million" not in text and GONE not in text and "#leads" not in text
    assert shown["answer"] == WITHHELD  # it cited the revoked message
    assert [c["doc_id"] for c in shown["citations"]] == [KEPT]
    assert [e["doc_id"] for e in shown["evidence"]] == [KEPT]
    assert shown["documents_read"] == [KEPT]
    assert shown["notes"] == [WITHHELD]  # it quotes the revoked passage
    assert shown["turns"][0]["answer"] == WITHHELD  # an earlier answer that cited it
    assert shown["turns"][1]["answer"] == "In Lisbon."
    assert shown["question"] == STATE["question"]  # the person's own words stay


def test_nothing_revoked_changes_nothing() -> None:
    assert without(STATE, set()) is STATE
    assert without(STATE, {"kb/other"}) == STATE
