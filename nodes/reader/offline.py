"""When the offline reader is sure enough to answer, rather than show passages."""

from __future__ import annotations

from collections.abc import Sequence

from nodes.evidence import relevance
from nodes.extractive import CHAT_KINDS, EXTRACTIVE_HEADER, NOTHING_FOUND, Quote, extractive_body
from nodes.reader.base import Reply
from nodes.reader.passages import MAX_REPLY_CHARS, answer_reply, closest, passages_reply
from state.models import Evidence


def sure(scored: list[Quote], nothing: bool) -> bool:
    """The quotes answer, and the best of a document's is drawn to the question's own words.

    A near miss shares the topic's words but not what was asked: its best quote is not drawn
    toward the words of the question it lacks (``words_pull``). Golden case:
    ``tests/integration/test_reader_golden.py::test_a_near_miss_gets_passages_not_an_answer``.
    A chat message says things in passing and is judged by its conversation (``answerable``).
    """
    best = scored[0] if scored else None
    return not nothing and best is not None and (best.pulled or best.evidence["kind"] in CHAT_KINDS)


def offline_reply(
    lines: list[str],
    quoted: list[tuple[str, Evidence]],
    scored: list[Quote],
    pool: list[Evidence],
    nothing_answers: bool,
    disputed: bool = False,
    relevant: list[tuple[str, Evidence]] | None = None,
) -> Reply:
    """The offline reader's reply: the answering passage when sure, else the closest whole.

    The passages come in the search's order (``ranked_passages``); the first is the answer's
    anchor. Sure means: the quotes answer every need of the question, and the anchor's best
    quote is drawn toward the words of the question it does not share (``words_pull``) — a
    near miss shares the topic's words but not what was asked (golden case
    ``tests/integration/test_reader_golden.py::test_a_near_miss_gets_passages_not_an_answer``).
    A chat message says things in passing and is judged by the conversation (``answerable``).
    Sources that disagree on what was asked (``disputed``) are the answer, quoted line by line.
    "Found nothing" only when nothing was kept: a passage that passed the filters is shown,
    not judged away.
    """
    if not pool:
        return Reply(NOTHING_FOUND, "not_found")
    best = scored[0] if scored else None
    if lines and best is not None and disputed:
        return Reply(extractive_body(fitting(lines), quoted, []), "answered")
    chosen = closest(ranked_passages(scored, pool, relevant or []))
    if best is not None and "\n" in best.sentence.strip():
        # a procedure's steps, quoted as one unit because the question asks how: their
        # passage answers (golden case: ``tests/integration/test_demo_workspace.py::
        # test_a_how_question_gets_the_steps_in_order``)
        chosen = [(best.evidence, best.sentence)] + [
            c for c in chosen if c[0]["source_id"] != best.evidence["source_id"]
        ][: len(chosen) - 1]
    anchor = chosen[0][0]
    # the passage the search ranks first and the sentence the reader ranks first agree: on
    # the dev sets' tuning halves (``bench/devsets.py``) this kept all but 1 of 12 near misses
    # from being answered, against 4 when the anchor's own best quote was enough
    agree = best is not None and best.evidence["source_id"] == anchor["source_id"]
    if lines and agree and sure(scored, nothing_answers):
        return Reply(answer_reply(chosen, EXTRACTIVE_HEADER, fitting(lines)), "answered")
    return Reply(passages_reply(chosen), "passages")


def ranked_passages(
    scored: list[Quote], pool: list[Evidence], relevant: Sequence[tuple[str, Evidence]] = ()
) -> list[tuple[str, Evidence]]:
    """Passages to show in the search's order (``relevance``), each with its likeliest sentence.

    A passage's likeliest sentence is its best quote, else its best-ranked relevant sentence.
    """
    best_of: dict[str, str] = {}
    for q in scored:
        best_of.setdefault(q.evidence["source_id"], q.sentence)
    for sentence, ev in relevant:
        best_of.setdefault(ev["source_id"], sentence)
    rest = sorted(pool, key=relevance, reverse=True)
    return [(best_of.get(ev["source_id"], ""), ev) for ev in rest]


def fitting(lines: list[str], limit: int = MAX_REPLY_CHARS - 300) -> list[str]:
    """The first quote lines that fit in a reply (the best come first; one always does)."""
    out: list[str] = []
    for line in lines:
        if out and sum(len(x) + 1 for x in out) + len(line) > limit:
            break
        out.append(line)
    return out
