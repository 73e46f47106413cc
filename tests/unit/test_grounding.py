"""What a model's answer states, held against the passages it was shown (``nodes.grounding``).

The replies are Qwen2.5-Coder 1.5B's, from the benchmark's runs on the READMEs.
"""

from __future__ import annotations

from nodes.grounding import attach_citations, ignores_names, recite, restates_question

SHOWN = {
    "docs/orjson#2": "orjson contains source code licensed under the Mozilla Public License "
    "2.0, Apache 2.0, and MIT licenses.",
    "docs/orjson#3": "orjson does not support PyPy, embedded Python builds for Android/iOS, "
    "or PEP 554 subinterpreters.",
    "docs/orjson#5": "To migrate from the standard library, the largest difference is that "
    "`orjson.dumps` returns `bytes` and `json.dumps` returns a `str`.",
}


def test_an_answer_about_something_else_than_the_name_asked_is_caught() -> None:
    asked = "Does orjson support PyPy?"
    licences = "[src:docs/orjson#2] orjson contains source code licensed under MIT."
    assert ignores_names(licences, asked, SHOWN) == "says nothing of PyPy, which was asked"
    # a terse answer citing the passage that names it answers
    assert ignores_names("No, it does not. [src:docs/orjson#3]", asked, SHOWN) is None
    # a name no passage holds is not answered by an answer that never says it
    android = "Does truststore support Zephyr?"
    assert "Zephyr" in (ignores_names(licences, android, SHOWN) or "")


def test_a_line_citing_the_wrong_passage_cites_the_one_holding_it() -> None:
    answer = "The type that `orjson.dumps` returns is a `bytes` object. [src:docs/orjson#2]"
    asked = "What type does orjson.dumps return?"
    assert recite(answer, asked, SHOWN).endswith("object. [src:docs/orjson#5]")
    # a number no shown passage holds stays unheld, for the guard to reject
    made_up = "The maximum number of form fields is 1024. [src:docs/orjson#2]"
    assert recite(made_up, asked, SHOWN) == made_up


def test_an_uncited_answer_is_cited_only_when_passages_hold_it() -> None:
    asked = "What type does orjson.dumps return?"
    held = "`orjson.dumps` returns `bytes`, unlike `json.dumps`.\n[docs:7] It is fast."
    assert attach_citations(held, asked, SHOWN) == (
        "`orjson.dumps` returns `bytes`, unlike `json.dumps`. [src:docs/orjson#5]\nIt is fast."
    )
    # from what the model knows: a name no passage holds
    assert attach_citations("`orjson.dumps` returns a memoryview in Rust.", asked, SHOWN) is None


def test_an_answer_that_only_restates_the_question_says_nothing() -> None:
    asked = "Can cloudpickle send objects between different Python versions?"
    verdict = "Yes, cloudpickle can send objects between different Python versions."
    assert restates_question(verdict, asked) == "only restated the question"
    assert restates_question("No: only between the same Python version.", asked) is None
    assert restates_question("Since 2013.", "Since when has structlog been in production?") is None
