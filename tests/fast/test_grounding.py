"""What a model's answer states, held against the passages it was shown (``reader.grounding``).

The replies are Qwen2.5-Coder 1.5B's, from the benchmark's runs on the READMEs.
"""

from __future__ import annotations

from seekgraph.nodes.plumbing.prompting import strip_echo
from seekgraph.nodes.plumbing.prompts import INTEGRATE_PROMPT
from seekgraph.nodes.reader.grounding import (
    attach_citations,
    keep_held,
    recite,
)
from seekgraph.nodes.reader.model import echoes_instructions

SHOWN = {
    "docs/orjson#2": "orjson contains source code licensed under the Mozilla Public License "
    "2.0, Apache 2.0, and MIT licenses.",
    "docs/orjson#3": "orjson does not support PyPy, embedded Python builds for Android/iOS, "
    "or PEP 554 subinterpreters.",
    "docs/orjson#5": "To migrate from the standard library, the largest difference is that "
    "`orjson.dumps` returns `bytes` and `json.dumps` returns a `str`.",
}


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


def test_what_a_small_model_copies_of_its_prompt_is_left_out_and_its_own_words_kept() -> None:
    # the replies are Qwen2.5 0.5B's on the held-out READMEs, the prompt the answer prompt
    question = "Which Python does truststore need?"
    said = "Requires Python 3.10 or later."
    source = f'<source id="docs/truststore#2">\ntruststore\n{said}\n</source>'
    prompt = INTEGRATE_PROMPT.format(
        today="2026-12-04", question=question, needs=f"- an amount: {question}",
        conversation="none", sources=source, notes="none", forced="",
    )  # fmt: skip
    wrapped = "<needs> - an amount: Python 3.10 or later [src:docs/truststore#2] </needs>"
    assert strip_echo(wrapped, prompt) == "Python 3.10 or later [src:docs/truststore#2]"
    echoed = (
        f"<question>{question}</question> <needs> - an amount: {question} </needs> "
        f"<conversation>none</conversation> <sources> {source} </sources>\n- Use only the "
        "sources. After every claim write its citation as [src:ID] with the source id.\n"
        "It needs Python 3.10 [src:docs/truststore#2]."
    )
    assert strip_echo(echoed, prompt) == "It needs Python 3.10 [src:docs/truststore#2]."
    # a source copied in part, its block left open, is a copy all the same
    assert (
        strip_echo('<sources>\n<source id="docs/truststore#2">\ntruststore\nRequires', prompt) == ""
    )
    # a copy and nothing else leaves nothing; a source's sentence repeated is the reply's claim
    assert strip_echo(f"<needs>\n- an amount: {question}\n</needs>", prompt) == ""
    assert strip_echo(said, prompt) == said
    assert strip_echo(f"<answer>{said}</answer>", prompt) == said
    # a line of the thread's earlier answer, repeated in a follow-up's, stays
    earlier = "truststore needs Python 3.10 or later [src:docs/truststore#2]."
    follow_up = INTEGRATE_PROMPT.format(
        today="2026-12-04", question="And on Windows?", needs="- a yes or no: And on Windows?",
        conversation=f"Q: {question}\nA: {earlier}", sources=source, notes="none", forced="",
    )  # fmt: skip
    assert strip_echo(earlier, follow_up) == earlier
    assert strip_echo("Use x < y and a <b> tag.", prompt) == "Use x < y and a <b> tag."
    # a placeholder the document writes as a tag is the document's, kept in a right answer
    pinned = (
        '<source id="docs/install#3">\nPin it: `curl -sSL x | bash -s -- -v <version>`\n</source>'
    )
    prompt = INTEGRATE_PROMPT.format(
        today="2026-12-04", question="How do I install one version?", needs="- a how: pin",
        conversation="none", sources=pinned, notes="none", forced="",
    )  # fmt: skip
    right = "Run `curl -sSL x | bash -s -- -v <version>` [src:docs/install#3]."
    assert strip_echo(right, prompt) == right
    assert echoes_instructions(right, prompt) is None


def test_a_reply_that_cannot_be_held_whole_keeps_only_what_passages_hold() -> None:
    # Qwen 1.5B's reply (its code example shortened), the paraphrase set's question
    asked = "How do I get orjson output with keys in alphabetical order?"
    reply = (
        "To get orjson output with keys in alphabetical order, you can use the "
        "`option=orjson.OPT_SORT_KEYS` parameter.\n\n```python\nimport orjson\n"
        'data = {"b": 1, "c": 2, "a": 3}\nsorted_data = orjson.dumps(data, '
        "option=orjson.OPT_SORT_KEYS)\n```\n\nThe `option=orjson.OPT_SORT_KEYS` parameter "
        "is a powerful feature that can be very useful in various scenarios."
    )
    shown = {
        **SHOWN,
        "docs/orjson#4": "`sort_keys` is replaced by `option=orjson.OPT_SORT_KEYS`.",
    }
    assert attach_citations(reply, asked, shown) is None  # its own code is held by nothing
    assert keep_held(reply, asked, shown) == (
        "To get orjson output with keys in alphabetical order, you can use the "
        "`option=orjson.OPT_SORT_KEYS` parameter. [src:docs/orjson#4]"
    )
    # what the model knows, that no passage says, keeps nothing
    assert keep_held("`orjson.dumps` returns a memoryview in Rust.", asked, SHOWN) is None
    # a restatement of the question alone is held by no passage
    assert keep_held("You can get orjson keys in alphabetical order.", asked, shown) is None
