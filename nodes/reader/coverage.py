"""The offline reader's verdict, by how much of the question's words the evidence says.

Coverage is the share of the question's terms the kept evidence says; below the threshold the
best documents are read whole, then the words no passage says are searched for. A deprecated
document's newer version is read first; with bridge rounds on, the names the best evidence
mentions are followed before answering (multi-hop questions). The words inside a name
("Bank of England") are a word list of the language tables (``name_particles``).
"""

from __future__ import annotations

import re

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.evidence import hop_queries, kept, relevance
from seekgraph.nodes.reader.answerable import mentions, required_words, subject_part
from seekgraph.providers.language import alternation, words
from seekgraph.providers.terms import STOPWORDS, coverage, display_words, term_set, terms
from seekgraph.state.models import READ_WHOLE_KINDS, Evidence
from seekgraph.state.schemas import SearchState, Verdict


def missing_words(question: str, evidence: list[Evidence]) -> list[str]:
    """Question words (original case) that no kept evidence mentions.

    Words that only frame the question ("difference", "type") are never missing; a word
    sharing its first letters with one the evidence uses ("musicians"/"music") is not.
    """
    seen: set[str] = set()
    for ev in evidence:
        seen |= term_set(f"{ev['title']} {ev['snippet']}")
    return [w for w in required_words(question) if not mentions(w, seen)]


def stale_replacements(state: SearchState, evidence: list[Evidence]) -> list[str]:
    """Doc ids that replace deprecated evidence and have not been found or read yet."""
    have = {ev["doc_id"] for ev in evidence} | set(state.get("documents_read", []))
    wanted = [
        ev["superseded_by"]
        for ev in evidence
        if ev["deprecated"] and ev["superseded_by"] and ev["superseded_by"] not in have
    ]
    return list(dict.fromkeys(wanted))


#: A capitalised word; inner full stops stay ("St.Louis"), a final one ends the sentence.
_WORD = r"[A-Z][\w'’-]*(?:\.[\w'’-]+)*"
#: Initials ("J. K.") belong to the name that follows them.
_INITIALS = r"(?:[A-Z]\.\s*)*"
#: Capitalised words in a row, through "of", "the", "de"…; never across a sentence's end
#: ("…born in Paris. The film…" names Paris, not "Paris. The").
_PARTICLES = alternation(words("name_particles"))
_NAME = re.compile(rf"\b({_INITIALS}{_WORD}(?:\s+(?:(?:{_PARTICLES}|&)\s+)?{_INITIALS}{_WORD})*)")


#: Any run of capitalised words, across sentence ends (what a chat message's bridge follows).
_CAPITALISED = re.compile(rf"\b([A-Z][\w'’.-]+(?:\s+(?:{_PARTICLES}|&)?\s*[A-Z][\w'’.-]+)*)")


def bridge_names(ev: Evidence) -> list[str]:
    """What a bridge search may follow from a piece of evidence, by its source kind.

    A document's passage: its names (:func:`names_in`). A chat message: every capitalised
    run in its title and text — the speaker, the month it was said, a name — each searched
    with the whole question, which works as one more variant of it: following only the
    message's names cost LoCoMo recall@5 0.657 → 0.636.
    """
    if ev["kind"] in READ_WHOLE_KINDS:
        return names_in(ev["title"], ev["snippet"])
    return [n.rstrip(".") for n in _CAPITALISED.findall(f"{ev['title']}. {ev['snippet']}")]


def names_in(title: str, text: str) -> list[str]:
    """The names a passage holds: its title, and capitalised words in its text.

    A lone capitalised word that only ever opens a sentence ("Located", "Born") is left out:
    its capital says nothing; a name shows its capital mid-sentence too, or has several words.
    """
    found: dict[str, bool] = {title: True} if _NAME.fullmatch(title) else {}
    for match in _NAME.finditer(text):
        name = match.group(1)
        before = text[: match.start()].rstrip()
        opens = not before or before[-1] in '.!?:"“'
        found[name] = found.get(name, False) or not opens or " " in name
    return [name for name, named in found.items() if named]


def bridge_questions(state: SearchState, evidence: list[Evidence], limit: int = 2) -> list[str]:
    """Multi-hop bridges: names in the best evidence the question does not mention.

    A document's passage states facts about what it names, so a name from one is joined to
    the rest of the question: the question's words the passage does not hold (``Theresa
    Connelly born`` for "Where was the director of Polish Wedding born?" once a passage says
    Polish Wedding's director is Theresa Connelly), or all of them when it holds them all.
    A chat message is one remark, not a statement of what the question asks: a name from one
    is joined to all the question's words (the rest alone lost LoCoMo recall@5 0.657 → 0.641
    while it raised MuSiQue all-supporting@5 0.21 → 0.28).
    """
    asked = term_set(state["question"])
    shown = display_words(state["question"])
    # After a bridge round the chain goes on from what its hops found (the third hop's name
    # is in the second hop's passage, which the question's own wording ranks low); the names
    # they followed are known by now.
    hops = hop_queries(state)
    followed = [ev for ev in evidence if set(ev["queries"]) & hops]
    for hop in hops:
        asked = asked | term_set(hop)
    counts: dict[str, float] = {}
    rest: dict[str, list[str]] = {}
    for ev in sorted(followed or evidence, key=relevance, reverse=True)[:3]:
        text = f"{ev['title']}. {ev['snippet']}"
        said = term_set(text)
        for name in bridge_names(ev):
            if term_set(name) & asked or name.lower() in STOPWORDS or len(name) < 3:
                continue
            counts[name] = counts.get(name, 0.0) + relevance(ev)
            unsaid = [w for w in shown if not term_set(w) <= said]
            rest.setdefault(name, unsaid if ev["kind"] in READ_WHOLE_KINDS and unsaid else shown)
    names = sorted(counts, key=lambda n: -counts[n])[:limit]
    tried = {q.lower() for q in state.get("tried_queries", [])}
    wanted = (f"{name} {' '.join(rest[name])}" for name in names)
    return [q for q in wanted if q.lower() not in tried]


def coverage_verdict(state: SearchState, ctx: Context) -> Verdict:
    """The extractive decision: coverage of question terms, freshness, unread documents."""
    evidence = kept(state.get("evidence", []))
    qterms = terms(subject_part(state["question"]))  # who asks for an overview is no term
    text_terms: set[str] = set()
    for ev in evidence:
        text_terms |= term_set(f"{ev['title']} {ev['snippet']}")
    cov = round(coverage(qterms, text_terms), 3)
    missing = missing_words(state["question"], evidence)
    verdict: Verdict = {
        "action": "answer",
        "reason": "",
        "coverage": cov,
        "missing": missing,
        "read_doc_ids": [],
        "gap_questions": [],
    }
    replacements = stale_replacements(state, evidence)
    if replacements:
        verdict |= {
            "action": "read",
            "read_doc_ids": replacements[: ctx.search.max_documents_per_read],
            "reason": "a deprecated document was found; reading its newer version",
        }
        return verdict
    if evidence and cov >= ctx.offline.coverage_threshold:
        bridges = (
            bridge_questions(state, evidence)
            if state["budget"]["rounds"] <= ctx.offline.bridge_rounds
            else []
        )
        if bridges:
            verdict |= {
                "action": "search",
                "gap_questions": bridges,
                "reason": f"the passages hold {cov:.0%} of the question's words; following "
                "the names they mention (bridge round) before answering",
            }
            return verdict
        verdict["reason"] = f"the passages hold {cov:.0%} of the question's words"
        return verdict
    read = set(state.get("documents_read", []))
    unread = [
        ev["doc_id"]
        for ev in sorted(evidence, key=relevance, reverse=True)
        if ev["doc_id"] not in read and ev["kind"] in READ_WHOLE_KINDS
    ]
    unread = list(dict.fromkeys(unread))[: ctx.search.max_documents_per_read]
    if unread:
        verdict |= {
            "action": "read",
            "read_doc_ids": unread,
            "reason": f"the passages hold {cov:.0%} of the question's words; reading the best "
            "documents in full",
        }
        return verdict
    gaps = (
        [" ".join(missing)]
        if missing and len(missing) < len(display_words(state["question"]))
        else []
    )
    verdict |= {
        "action": "search",
        "gap_questions": gaps,
        "reason": f"the passages hold {cov:.0%} of the question's words; searching again"
        + (f" for: {', '.join(missing)}" if missing else ""),
    }
    return verdict
