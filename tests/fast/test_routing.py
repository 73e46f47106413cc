from typing import Any

from langgraph.graph import END
from langgraph.runtime import Runtime

from seekgraph.graph.context import Context
from seekgraph.graph.routing import (
    fan_out_expand_query,
    route_after_check_answer,
    route_after_evaluate,
)
from seekgraph.state.budget import exhausted, new_budget, spend
from tests.factories import make_state

RUNTIME = Runtime(context=Context())


def state(**over: Any) -> Any:
    budget = new_budget(
        now=100.0, max_rounds=3, max_tokens=1000, max_seconds=60, max_bad_attempts=2
    )
    return make_state(**({"variants": ["gap question", "original"], "budget": budget} | over))


def test_fan_out_sends_one_branch_per_variant_and_source() -> None:
    sends = fan_out_expand_query(state())
    assert isinstance(sends, list)
    assert [(s.node, s.arg["query"], s.arg["source"]) for s in sends] == [
        ("search_source", "gap question", "kb"),
        ("search_source", "gap question", "chat"),
        ("search_source", "original", "kb"),
        ("search_source", "original", "chat"),
    ]


def test_fan_out_without_variants_goes_straight_to_the_filter() -> None:
    assert fan_out_expand_query(state(variants=[])) == "filter_results"


def test_route_after_evaluate_follows_the_verdict() -> None:
    v = state()["verdict"]
    assert route_after_evaluate(state(verdict={**v, "action": "answer"}), RUNTIME) == "integrate"
    assert (
        route_after_evaluate(
            state(verdict={**v, "action": "read", "read_doc_ids": ["kb/a"]}), RUNTIME
        )
        == "read_documents"
    )
    assert (
        route_after_evaluate(state(verdict={**v, "action": "read", "read_doc_ids": []}), RUNTIME)
        == "expand_query"
    )
    assert route_after_evaluate(state(), RUNTIME) == "expand_query"


def test_a_run_that_asks_for_review_passes_by_it_before_the_answer() -> None:
    v = state()["verdict"]
    reviewed = Runtime(context=Context(review_before_answer=True))
    assert route_after_evaluate(state(verdict={**v, "action": "answer"}), reviewed) == (
        "review_evidence"
    )
    assert route_after_evaluate(state(), reviewed) == "expand_query"


def test_route_after_evaluate_answers_when_any_budget_is_spent() -> None:
    b = state()["budget"]
    for spent in (
        spend(b, now=100, rounds=3),
        spend(b, now=100, tokens=1000),
        spend(b, now=161),
        spend(b, now=100, bad_attempts=2),
    ):
        assert exhausted(spent)
        assert route_after_evaluate(state(budget=spent), RUNTIME) == "integrate"


def test_route_after_check_answer() -> None:
    bad = {"ok": False, "unknown_citations": ["x"], "reason": ""}
    assert route_after_check_answer(state()) == END
    assert route_after_check_answer(state(answer_check=bad)) == "expand_query"
    spent = spend(state()["budget"], now=100, rounds=3)
    assert route_after_check_answer(state(answer_check=bad, budget=spent)) == END


def test_exhausted_says_which_budget() -> None:
    b = new_budget(now=0, max_rounds=2, max_tokens=10, max_seconds=5, max_bad_attempts=1)
    assert exhausted(b) is None
    assert "rounds" in (exhausted(spend(b, now=0, rounds=2)) or "")
    assert "token" in (exhausted(spend(b, now=0, tokens=11)) or "")
    assert "time" in (exhausted(spend(b, now=6)) or "")
    assert "without progress" in (exhausted(spend(b, now=0, bad_attempts=1)) or "")
