"""How the quotes an answer would give correct ``evaluate``'s verdict (extractive mode).

Word coverage decides whether the evidence *says* the question's words; these decide on what
the quotes the answer would give actually answer (``nodes.reader.answerable``): answer now when they
answer every need in other words, search for a typed need none of them gives, and check once
that no newer source changes a quoted amount or date.
"""

from __future__ import annotations

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import by_authority, kept, relevance
from seekgraph.nodes.plumbing.services import Services
from seekgraph.nodes.plumbing.writing import resolve_versions
from seekgraph.nodes.reader.answerable import (
    WORD_KINDS,
    Judgement,
    is_overview,
    judge_quotes,
    need_query,
)
from seekgraph.nodes.reader.extractive import Quote, extractive_answer
from seekgraph.nodes.reader.needs import NEED_NAMES, Need, needs_of
from seekgraph.providers.sentences import sentences
from seekgraph.providers.terms import STOPWORDS, display_words
from seekgraph.state.models import READ_WHOLE_KINDS
from seekgraph.state.schemas import SearchState, Verdict


async def quotes_judged(
    state: SearchState, ctx: Context, services: Services
) -> tuple[list[Quote], Judgement] | None:
    """The quotes the answer would give, and how they answer (None: nothing kept)."""
    pool, _ = resolve_versions(by_authority(kept(state.get("evidence", []))))
    if not pool:
        return None
    _, _, scored = await extractive_answer(state, ctx, pool, services)
    return scored, judge_quotes(state["question"], scored, ctx.filtering.meaning_min_score)


async def judged_quotes(state: SearchState, ctx: Context, services: Services) -> Judgement | None:
    """How the quotes the answer would give answer the question (None: nothing kept)."""
    found = await quotes_judged(state, ctx, services)
    return found[1] if found else None


async def judged_verdict(
    state: SearchState, ctx: Context, services: Services, verdict: Verdict
) -> Verdict:
    """The coverage verdict, corrected by how the quotes the answer would give answer.

    Word coverage says what the evidence does not *say*; a person's own words are rarely
    the documents'. When the quotes answer every need in other words, answer now: searching
    again for the leftover words ("reach", "home") finds nothing new. When a need is left
    unanswered — even with every word covered ("By when…" quoted without a date) — search
    for that need (``search_for_needs``).
    """
    found = await quotes_judged(state, ctx, services)
    if found is None:
        return verdict
    scored, judged = found
    if verdict["action"] == "search" and not judged.gaps and judged.by_meaning:
        verdict = {
            **verdict,
            "action": "answer",
            "gap_questions": [],
            "reason": f"the passages hold {verdict['coverage']:.0%} of the question's words "
            "and answer what it asks in other words",
        }
    verdict = search_for_needs(state, verdict, judged)
    if verdict["action"] == "answer" and ctx.offline.freshness_probe and not judged.gaps:
        verdict = probe_freshness(state, verdict, scored)
    return verdict


#: Most words of a quoted fact a freshness probe searches with.
PROBE_WORDS = 10


def probe_freshness(state: SearchState, verdict: Verdict, scored: list[Quote]) -> Verdict:
    """Before answering an amount or a date from a document, search once for a newer word on it.

    A policy's "$50 a day" may have been changed by a later announcement that shares few
    words with the question ("How much can I spend on food on a work trip?") and so was not
    found; searched with the quoted fact's own words, it is, and the conflict is then told
    (newest first). Once per question, in its first round, for the best quote that carries
    the amount or date the question asks for (any amount or date, for an overview: "What does
    a new employee need to know about expenses?").
    """
    question = state["question"]
    asked = [n for n in needs_of(question) if n.kind in ("amount", "time")]
    if is_overview(question):  # an overview quotes its topic's amounts and dates too
        asked = [Need(question, "amount"), Need(question, "time")]
    if state["budget"]["rounds"] != 1 or not asked:
        return verdict
    candidates = [(q.sentence, q.evidence) for q in scored[:3]]
    if is_overview(question):  # what a report on the topic quotes: its passages' facts
        best = sorted(kept(state.get("evidence", [])), key=relevance, reverse=True)[:3]
        candidates += [(s, ev) for ev in best for s in sentences(ev["snippet"])]
    fact = next(
        (
            sentence
            for sentence, ev in candidates
            if ev["kind"] in READ_WHOLE_KINDS and any(n.carried_by(sentence) for n in asked)
        ),
        None,
    )
    if fact is None:
        return verdict
    words = [w for w in display_words(fact) if w.lower() not in STOPWORDS]
    probe = " ".join(dict.fromkeys(words[:PROBE_WORDS]))
    tried = {q.lower() for q in state.get("tried_queries", [])}
    if not probe or probe.lower() in tried:
        return verdict
    return {
        **verdict,
        "action": "search",
        "gap_questions": [probe],
        "reason": f"{verdict['reason']}; checking that no newer source changes “{fact[:80]}”",
    }


def search_for_needs(state: SearchState, verdict: Verdict, judged: Judgement) -> Verdict:
    """Search for each typed need no quote answers: its subject's words and its type's cues.

    A need named by its words ("Zanzibar parking rules") is searched by the words the
    evidence lacks, as before; a typed one not by a bag of the question's leftover words:
    "By when must I have requested my VPN profile?" covered word for word by an undated
    sentence is searched as "requested VPN profile date deadline until". A need searched for
    before is not searched again, so a round that cannot add evidence for it is the last.
    """
    typed = [n for n in judged.unanswered if n.kind not in WORD_KINDS]
    if not typed or verdict["action"] == "read":
        return verdict
    tried = {q.lower() for q in state.get("tried_queries", [])}
    wanted = dict.fromkeys(need_query(n) for n in typed)
    queries = [q for q in wanted if q and q.lower() not in tried]
    if not queries:
        return verdict
    names = ", ".join(dict.fromkeys(NEED_NAMES[n.kind] for n in typed))
    if verdict["action"] == "answer":
        return {
            **verdict,
            "action": "search",
            "gap_questions": queries,
            "reason": f"{verdict['reason']}, but no quote gives {names}; searching for it",
        }
    rest = [q for q in verdict["gap_questions"] if q not in queries]
    return {
        **verdict,
        "gap_questions": [*queries, *rest],
        "reason": f"{verdict['reason']}; no quote gives {names}",
    }
