"""The offline reader's query variants: gap questions, feedback and bridging words, the question.

Pseudo-relevance feedback: words frequent in the best evidence kept so far and absent from
the question; bridge terms from documents read; a follow-up's topic from the thread's
earlier questions. The model reader asks its model instead (``ModelReader.rephrase``).
"""

from __future__ import annotations

from seekgraph.nodes.plumbing.evidence import kept, relevance
from seekgraph.nodes.reader.question_kind import default_asked
from seekgraph.providers.terms import STOPWORDS, display_words, stem, term_set
from seekgraph.state.schemas import SearchState


def feedback_terms(state: SearchState, limit: int = 3) -> list[str]:
    """Words frequent in the best evidence and absent from the question (RM-style feedback)."""
    question_terms = term_set(state["question"])
    weights: dict[str, float] = {}
    shown: dict[str, str] = {}
    for ev in sorted(kept(state.get("evidence", [])), key=relevance, reverse=True)[:5]:
        for word in display_words(f"{ev['title']} {ev['snippet']}"):
            key = stem(word.lower())
            if key in question_terms or word.lower() in STOPWORDS or word.isdigit():
                continue
            weights[key] = weights.get(key, 0.0) + relevance(ev)
            shown.setdefault(key, word)
    return [shown[k] for k in sorted(weights, key=lambda k: -weights[k])[:limit]]


def thread_terms(state: SearchState, limit: int = 4) -> list[str]:
    """Words of the thread's earlier questions that this one does not repeat, newest first.

    A follow-up often names its topic only by reference ("When is the retest?" after a
    question about Project Nightjar's penetration test).
    """
    asked = term_set(state["question"])
    out: dict[str, str] = {}
    for turn in reversed(state.get("turns", [])):
        for word in display_words(turn["question"]):
            key = stem(word.lower())
            if key not in asked and not word.isdigit():
                out.setdefault(key, word)
    return list(out.values())[:limit]


def extractive_variants(state: SearchState) -> list[str]:
    """Gap questions, then feedback and bridging variants, then the original question."""
    question = state["question"]
    core = " ".join(display_words(question))
    candidates = list(state["verdict"].get("gap_questions", []))
    if state["budget"]["rounds"] == 0:
        # "if I don't set it" is what a page calls the default: its words searched with it
        default = default_asked(question)
        candidates.append(f"{core} {default}" if default else core)
        earlier = thread_terms(state)
        if earlier:  # a follow-up ("the retest", "it") searched with the thread's topic
            candidates.append(f"{core} {' '.join(earlier)}")
    else:
        bridge = state.get("bridge_terms", [])[:3]
        if bridge:
            candidates.append(f"{core} {' '.join(bridge)}")
        feedback = feedback_terms(state)
        if feedback:
            candidates.append(f"{question} {' '.join(feedback)}")
    candidates.append(question)
    return candidates
