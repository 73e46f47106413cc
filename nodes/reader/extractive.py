"""Extractive answers: whole sentences quoted from the evidence, each with its citation.

Sentences are scored against the question with their document's title and section; the
kind of question picks what comes first (steps, a value, a definition); a chat sentence
keeps its author and an API section's sentence its name. When the quotes do not answer
(``nodes.reader.answerable``), the answer says what was not found and quotes nothing. What
makes a question ask for code (``code_question``) is the language tables' wording.
"""

from __future__ import annotations

import re
from collections.abc import Set
from typing import NamedTuple

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import lifted
from seekgraph.nodes.plumbing.services import Services
from seekgraph.nodes.reader.attribution import author_of
from seekgraph.nodes.reader.needs import Need, needs_of
from seekgraph.nodes.reader.question_kind import extra_units, kind_bonus
from seekgraph.providers.language import compiled
from seekgraph.providers.rerank import meaning_beyond_subject, words_pull
from seekgraph.providers.sentences import said_of, sentences
from seekgraph.providers.terms import coverage, term_set, terms
from seekgraph.state.models import Evidence, heading_of
from seekgraph.state.schemas import SearchState

EXTRACTIVE_HEADER = (
    "Extractive answer (no language model was used; each line is quoted from a source):"
)
NOTHING_FOUND = "I found nothing in the sources you can access that answers this question."
MIN_SENTENCE_SCORE = 0.3
#: A question that asks for code gets code blocks quoted; others never do.
_ASKS_FOR_CODE = compiled("code_question", flags=re.I)
#: Sentences scoring at least this are quoted even when they add no new question term.
STRONG_SENTENCE_SCORE = 0.35


async def extractive_answer(
    state: SearchState, ctx: Context, pool: list[Evidence], services: Services
) -> tuple[list[str], list[tuple[str, Evidence]], list[Quote]]:
    """Answer lines quoted from the evidence, the relevant sentences, the quoted ones.

    The quoted ones come best first, each with its scores (``Quote``).
    """
    wants_code = bool(_ASKS_FOR_CODE.search(state["question"]))
    candidates = [
        (s, ev)
        for ev in pool[:8]
        for s in sentences(ev["snippet"])
        if wants_code or not s.startswith("```")  # code is quoted only when asked for
    ]
    procedures = extra_units(state["question"], pool)
    candidates += procedures
    if not candidates:
        return [], [], []
    # A sentence is judged with its document's title and section: "it found X" needs the
    # topic beside it.
    scores = await services.reranker.rerank(
        state["question"], [f"{ev['title']}. {section_of(ev)}{s}" for s, ev in candidates]
    )
    # Meaning is read for documents' sentences: a chat message is one remark in a
    # conversation, judged by the conversation found and by who said it (``answerable``).
    judged = [i for i, (_, ev) in enumerate(candidates) if ev["kind"] not in CHAT_KINDS]
    meaning = [0.0] * len(candidates)
    for i, near in zip(
        judged,
        await meaning_beyond_subject(
            services.embedder,
            state["question"],
            [(candidates[i][0], candidates[i][1]["title"]) for i in judged],
        ),
        strict=True,
    ):
        meaning[i] = near
    # A chat message's sentence is judged with the messages around it, as its passage was.
    scores = [
        lifted(score, ev["scores"].get("context", 0.0), ctx.offline.quote_context_weight)
        for (_, ev), score in zip(candidates, scores, strict=True)
    ]
    # What the kind of question asks for (steps, a value, a definition) ranks first; the
    # score kept is the sentence's own.
    steps = frozenset(unit for unit, _ in procedures)
    needs = needs_of(state["question"])
    bonus = [
        kind_bonus(state["question"], unit, steps) + need_bonus(needs, unit)
        for unit, _ in candidates
    ]
    # A sentence close in meaning to what is asked ranks higher, by how far it clears the
    # floor: in a person's own words the blend's shared-word half says little.
    bonus = [
        b + MEANING_WEIGHT * max(0.0, m - ctx.filtering.meaning_min_score)
        for b, m in zip(bonus, meaning, strict=True)
    ]
    order = sorted(range(len(candidates)), key=lambda i: -(scores[i] + bonus[i]))
    ranked = [(candidates[i], scores[i]) for i in order]
    qterms = terms(state["question"])
    covered: set[str] = set()
    chosen: list[tuple[str, Evidence, float]] = []
    close: dict[tuple[int, str], float] = {}
    per_doc: dict[str, int] = {}
    for i in order:
        (sentence, ev), score = candidates[i], scores[i]
        if len(chosen) >= ctx.offline.max_answer_sentences:
            break
        # a sentence that means what is asked in other words is quoted though it shares
        # few of the question's words (its blend is low only for that)
        means = meaning[i] >= ctx.filtering.meaning_min_score
        if score + bonus[i] < MIN_SENTENCE_SCORE and not means:
            continue
        sterms = term_set(sentence)
        adds = coverage(qterms, sterms | covered) > coverage(qterms, covered)
        if per_doc.get(ev["doc_id"], 0) >= 3 or (
            not adds and score < STRONG_SENTENCE_SCORE and not means
        ):
            continue
        if sentence.rstrip().endswith(("?", "？")):  # a question asks; it answers nothing
            continue
        if any(sentence in unit or unit in sentence for unit, _, _ in chosen):
            continue  # already quoted as part of steps (or holds a quoted sentence)
        chosen.append((sentence, ev, score))
        close[id(ev), sentence] = meaning[i]
        covered |= sterms
        per_doc[ev["doc_id"]] = per_doc.get(ev["doc_id"], 0) + 1
    if not chosen:
        # The evidence passed the filter, so quote its best sentence rather than nothing.
        chosen = [(s, ev, score) for (s, ev), score in ranked[:1]]
        close[id(chosen[0][1]), chosen[0][0]] = meaning[order[0]]
    # whether a quote is drawn to the question is read in its words, not in the code a lead-in
    # carries (that code still ranks it): an example's `window: 30m` is no stated default
    asked = [(said_of(s), ev["title"]) for s, ev, _ in chosen if ev["kind"] not in CHAT_KINDS]
    pulled = iter(await words_pull(services.embedder, state["question"], asked))
    pulls = [ev["kind"] not in CHAT_KINDS and next(pulled) for _, ev, _ in chosen]
    quoted = [  # best first
        Quote(s, ev, score, close[id(ev), s], pull)
        for (s, ev, score), pull in zip(chosen, pulls, strict=True)
    ]
    chosen.sort(key=lambda c: -c[1]["authority"])  # stable: best first within an authority
    quoted_units = {s for s, _, _ in chosen}
    lines = [
        quote_line(named(with_antecedent(s, ev, quoted_units), ev), ev["source_id"])
        for s, ev, _ in chosen
    ]
    # Conflicts are looked for among the relevant sentences and any kept sentence on a quoted
    # fact's topic: a newer message that restates the quoted allowance in other words than
    # the question's ("food each day" → "daily meal allowance … $75") makes the quote stale.
    topics = [term_set(s) for s, _, _ in chosen]
    relevant = [
        (s, ev)
        for (s, ev), score in ranked
        if score >= MIN_SENTENCE_SCORE or any(len(term_set(s) & t) >= 3 for t in topics)
    ][:16]
    return lines, relevant, quoted


class Quote(NamedTuple):
    """A quoted sentence and what judges whether it answers (``nodes.reader.answerable``)."""

    sentence: str
    evidence: Evidence
    #: relevance (the reranker's blend of meaning and shared words)
    score: float
    #: closeness in meaning to what the question asks, its subject set aside
    meaning: float
    #: whether the question's words the sentence lacks pull toward it (``words_pull``)
    pulled: bool


#: Source kinds whose sentences are remarks in a conversation, not statements of a document.
CHAT_KINDS = frozenset({"messages"})
#: How much a sentence's meaning above ``Context.meaning_min_score`` adds to its rank.
MEANING_WEIGHT = 0.5
#: Added to a sentence's score when it carries what a typed need asks (an amount, a date…).
NEED_BONUS = 0.1
_TYPED = frozenset({"amount", "time", "person", "place"})


def need_bonus(needs: list[Need], unit: str) -> float:
    """A bonus for carrying what one of the question's typed needs asks for."""
    return NEED_BONUS if any(n.kind in _TYPED and n.carried_by(unit) for n in needs) else 0.0


def extractive_body(lines: list[str], quoted: list[tuple[str, Evidence]], gaps: list[str]) -> str:
    """The quotes under their header; or, when they do not answer, what was not found."""
    if gaps:
        return not_found(quoted, gaps)
    return "\n".join([EXTRACTIVE_HEADER, *lines]) if lines else NOTHING_FOUND


def not_found(quoted: list[tuple[str, Evidence]], gaps: list[str]) -> str:
    """The honest answer when the closest passages do not answer.

    It says what is missing and where we looked (titles only: nothing is quoted or cited).
    """
    titles = list(dict.fromkeys(f"“{ev['title']}”" for _, ev in quoted))[:3]
    return (
        f"{NOTHING_FOUND} The closest passages ({', '.join(titles)}) do not mention "
        f"{' or '.join(gaps)}."
    )


def section_of(ev: Evidence) -> str:
    """The heading a passage sits under, as "heading. " (empty when it has none)."""
    heading = heading_of(ev)
    return f"{heading}. " if heading else ""


#: A section heading that names an API (``OPT_SORT_KEYS``, ``load_dotenv()``, ``ServerSentEvent``).
_API_NAME = re.compile(r"^`?(?=[\w.()\[\]-]*(?:[_.(]|[a-z][A-Z]|^[A-Z0-9_]+$))[\w.()\[\]-]+`?$")


def named(unit: str, ev: Evidence) -> str:
    """A quote says whose or what it is.

    A chat message's sentence keeps its author ("sam: …"); a sentence from a section headed
    by an API name says which ("OPT_SORT_KEYS: …").
    """
    author = author_of(ev)
    if author:
        return unit if unit.startswith(f"{author}:") else f"{author}: {unit}"
    section = heading_of(ev).split(" › ")[-1]
    if section and _API_NAME.match(section) and section.strip("`") not in unit:
        return f"{section}: {unit}"
    return unit


#: A sentence that opens by pointing back at the one before it ("In such cases, …")
_BACK_REFERENCE = compiled("back_reference", "en", "zh", flags=re.I)
#: The sentence taken along is at most this long (a longer one is a paragraph of its own).
MAX_ANTECEDENT_CHARS = 300


def with_antecedent(unit: str, ev: Evidence, quoted: Set[str] = frozenset()) -> str:
    """``unit`` quoted with the sentence before it when it opens by pointing back at that one.

    "In such cases, wrapping the arguments to new lines doesn't help much." names nothing
    alone; the sentence before says which cases. Taken along only from the same passage,
    when it is prose (no code, no list), not already quoted, and short. Golden case:
    ``test_reader.py::test_a_quote_that_points_back_keeps_the_sentence_it_points_to``.
    """
    if "\n" in unit or _BACK_REFERENCE.search(unit) is None:
        return unit
    units = sentences(str(ev["snippet"]))
    at = units.index(unit) if unit in units else 0
    before = units[at - 1] if at > 0 else ""
    if (
        not before
        or "\n" in before
        or before in quoted
        or len(before) > MAX_ANTECEDENT_CHARS
        or before.rstrip().endswith((":", "?", "？"))
    ):
        return unit
    gap = "" if before.rstrip().endswith(("。", "！", "；")) else " "  # (Chinese: no space)
    return f"{before.rstrip()}{gap}{unit}"


def quote_line(unit: str, source_id: str) -> str:
    """One quoted unit with its citation: a bullet, or a block for steps and code."""
    if "\n" in unit:  # numbered steps or a code block stay whole, as a block of their own
        return f"\n{unit}\n[src:{source_id}]\n"
    return f"- {unit} [src:{source_id}]"
