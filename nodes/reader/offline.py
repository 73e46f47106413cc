"""When the offline reader is sure enough to answer, rather than show passages."""

from __future__ import annotations

from nodes.extractive import CHAT_KINDS, Quote


def sure(scored: list[Quote], nothing: bool) -> bool:
    """The quotes answer, and the best of a document's is drawn to the question's own words.

    A near miss shares the topic's words but not what was asked: its best quote is not drawn
    toward the words of the question it lacks (``words_pull``). Golden case:
    ``tests/integration/test_reader_golden.py::test_a_near_miss_gets_passages_not_an_answer``.
    A chat message says things in passing and is judged by its conversation (``answerable``).
    """
    best = scored[0] if scored else None
    return not nothing and best is not None and (best.pulled or best.evidence["kind"] in CHAT_KINDS)
