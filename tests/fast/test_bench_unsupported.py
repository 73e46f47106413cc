"""The LLM-mode bench's count of unsupported statements is its own reading, not the guard's."""

from __future__ import annotations

import ast
from pathlib import Path

from bench.llm_mode import unsupported

PASSAGES = {
    "docs/timeouts#1": "Timeouts. The default behavior is to raise a `TimeoutException` after "
    "5 seconds of network inactivity.",
    "docs/http2#0": "HTTP/2. Install `httpx[http2]` and create the client with `http2=True`.",
}


def test_a_number_or_code_the_cited_passage_lacks_is_counted() -> None:
    assert unsupported("It gives up after 30 seconds [src:docs/timeouts#1].", "How long?", PASSAGES)
    assert unsupported("Pass `verify=False` [src:docs/http2#0].", "How?", PASSAGES)
    # held by the passage it cites, in the passage's words or in others
    assert not unsupported(
        "It raises a `TimeoutException` after 5 seconds [src:docs/timeouts#1].", "How?", PASSAGES
    )
    assert not unsupported(
        "After five seconds with nothing back it gives up [src:docs/timeouts#1].", "?", PASSAGES
    )
    # a fact held only by a passage the sentence does not cite is unsupported
    assert unsupported("Create it with `http2=True` [src:docs/timeouts#1].", "How?", PASSAGES)


def test_the_count_does_not_use_the_products_guard() -> None:
    # the issue: a count made by the product's own guard cannot disagree with it
    tree = ast.parse(Path("bench/llm_mode.py").read_text())
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    }
    assert not any(m.startswith("seekgraph.nodes.reader.grounding") for m in imported)
