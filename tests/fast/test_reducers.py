from seekgraph.state.models import Evidence
from seekgraph.state.reducers import add_failures, add_hits, merge_evidence, replace, union_strings
from tests.factories import make_evidence


def ev(
    source_id: str,
    score: float = 0.5,
    query: str = "q",
    round_: int = 1,
    kept_by: str = "rerank",
    **scores: float,
) -> Evidence:
    return make_evidence(
        source_id, score=score, query=query, round_=round_, kept_by=kept_by, scores=scores
    )


def test_merge_evidence_deduplicates_by_source_id_across_rounds() -> None:
    first = merge_evidence([], [ev("kb/a#0", query="vpn"), ev("kb/b#0")])
    merged = merge_evidence(
        first, [ev("kb/a#0", score=0.9, query="wireguard", round_=2, rerank=0.8)]
    )
    assert [e["source_id"] for e in merged] == ["kb/a#0", "kb/b#0"]
    a = merged[0]
    assert a["queries"] == ["vpn", "wireguard"]
    assert a["scores"] == {"retrieval": 0.9, "rerank": 0.8}
    assert a["round"] == 1


def test_merge_evidence_found_again_does_not_unkeep() -> None:
    merged = merge_evidence([ev("kb/a#0", kept_by="rerank")], [ev("kb/a#0", kept_by="none")])
    assert merged[0]["kept_by"] == "rerank"


def test_merge_evidence_replace_starts_over() -> None:
    assert merge_evidence([ev("kb/a#0")], replace()) == []
    assert [e["source_id"] for e in merge_evidence([ev("kb/a#0")], replace([ev("kb/c#0")]))] == [
        "kb/c#0"
    ]


def test_add_hits_appends_parallel_branches_and_resets() -> None:
    hits = add_hits(add_hits([], [ev("kb/a#0")]), [ev("chat/b#0")])
    assert len(hits) == 2
    assert add_hits(hits, replace()) == []


def test_add_failures_appends_and_resets() -> None:
    f = {"source": "chat", "query": "q", "error": "TimeoutError", "message": "", "round": 1}
    assert add_failures(add_failures([], [f]), [f]) == [f, f]
    assert add_failures([f], replace()) == []


def test_union_strings_keeps_order_without_duplicates() -> None:
    assert union_strings(["a", "b"], ["b", "c"]) == ["a", "b", "c"]
    assert union_strings(["a"], replace(["z"])) == ["z"]
