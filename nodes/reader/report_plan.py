"""The offline reader's research plan: the parts a request names, then the corpus's topics.

Extractive mode takes the parts a request names ("…: VPN, SSO, and expenses") as one
sub-question each, titled as the request names them, then derives the rest of the plan from
the corpus itself: the request is searched broadly in every source the user may see, the
passages' vectors are grouped into topics (k-means, deterministic farthest-point start), and
each topic becomes one sub-question: its search uses the words that set it apart from the
others, its heading the phrase its passages share for them ("Pottery class"). Topics too
close to one another (embedding cosine of their questions) are merged. No question lists, no
templates.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services, user_of
from seekgraph.nodes.reader.request_parts import REQUEST_FRAME, part_questions, subject_of
from seekgraph.nodes.reader.tables import boilerplate
from seekgraph.providers.embeddings import aembed_passages, aembed_queries
from seekgraph.providers.terms import STOPWORDS, display_words
from seekgraph.sources.base import Source, User
from seekgraph.sources.web import outgoing_from, outside_words
from seekgraph.state.models import Hit, heading_of
from seekgraph.state.research import SubQuestion

#: Passages the broad search gathers per source to find the topics.
PLAN_POOL = 200
#: Most topics (sub-questions) a generated plan has.
MAX_TOPICS = 16
#: Two sub-questions whose embeddings are this close are one. Measured on the LoCoMo report
#: plans (bench/results/plan_duplicates.json, 944 pairs, median 0.44, p95 0.65): at 0.9 only
#: the same words reordered merge; at 0.8 distinct aspects ("dance studio" / "love dancing")
#: would.
DUPLICATE_COSINE = 0.9


def kmeans(vectors: np.ndarray, k: int, rounds: int = 20) -> list[int]:
    """Cluster labels of unit vectors (cosine k-means, farthest-point start: no randomness)."""
    centers = [0]
    for _ in range(1, k):
        sims = np.max(vectors @ vectors[centers].T, axis=1)
        centers.append(int(np.argmin(sims)))
    c = vectors[centers].copy()
    labels = np.zeros(len(vectors), dtype=int)
    for _ in range(rounds):
        new = np.argmax(vectors @ c.T, axis=1)
        if np.array_equal(new, labels) and _:
            break
        labels = new
        for j in range(k):
            members = vectors[labels == j]
            if len(members):
                mean = members.mean(axis=0)
                c[j] = mean / (np.linalg.norm(mean) or 1.0)
    return [int(x) for x in labels]


def telling(units: list[set[str]], labels: list[int], k: int) -> list[dict[str, float]]:
    """Per topic, how much each unit (a word, a phrase) sets it apart from the others.

    ``units`` holds each passage's units. A unit counts when at least two of the topic's
    passages hold it, weighed by the share of them that do and how rare it is overall.
    """
    per: list[Counter[str]] = [Counter() for _ in range(k)]
    overall: Counter[str] = Counter()
    for held, label in zip(units, labels, strict=True):
        per[label].update(held)
        overall.update(held)
    out = []
    for j in range(k):
        size = max(1, sum(1 for x in labels if x == j))
        out.append(
            {
                u: c / size * np.log((1 + len(units)) / (1 + overall[u]))
                for u, c in per[j].items()
                if c >= 2
            }
        )
    return out


def topic_words(texts: list[str], labels: list[int], k: int, skip: set[str]) -> list[list[str]]:
    """Per topic, the words its passages use more than the others do (most telling first)."""
    shown: dict[str, str] = {}
    units: list[set[str]] = []
    for text in texts:
        held: set[str] = set()
        for word in display_words(text):
            low = word.lower()
            if low in skip or len(low) < 3 or not low.isalpha():
                continue
            shown.setdefault(low, word)
            held.add(low)
        units.append(held)
    out = []
    for scores in telling(units, labels, k):
        scored = sorted((score, w) for w, score in scores.items())
        out.append([shown[w] for _, w in reversed(scored[-4:])])
    return out


#: A word as the passages write it (letters, inner hyphens or apostrophes).
_PHRASE_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
#: Longest phrase a heading is made of.
MAX_PHRASE_WORDS = 3


def phrases_in(text: str, skip: set[str]) -> set[str]:
    """The phrases of ``text`` (lower case): runs of one to three words with no stopword.

    "She signed up for a pottery class in July" holds "pottery class", "pottery", "class",
    "signed", "july"… A run stops at a stopword, at punctuation and at a word the heading
    must not repeat (``skip``: the request's own words, who the passages are about).
    """
    found: set[str] = set()
    for clause in re.split(r"[^\w\s'’-]+", text):
        run: list[str] = []
        for match in _PHRASE_WORD.finditer(clause):
            low = match.group(0).lower()
            if low in STOPWORDS or low in skip or len(low) < 3:
                run = []
                continue
            run.append(low)
            for n in range(1, min(MAX_PHRASE_WORDS, len(run)) + 1):
                found.add(" ".join(run[-n:]))
    return found


def topic_headings(
    texts: list[str], labels: list[int], k: int, skip: set[str], words: list[list[str]]
) -> list[str]:
    """Per topic, a heading a person would write: the phrases its passages share.

    The topic's telling words (``topic_words``) say what sets it apart; its heading is the
    phrase its passages use for the most telling one — the most telling phrase holding it (in
    more of its passages than of the others', weighed by ``telling`` as words are; a longer
    phrase counts for more when it says as much): "Pottery class", not
    "Pottery, class, July". Only when no phrase is shared are the words listed.
    """
    out = []
    for j, scores in enumerate(telling([phrases_in(t, skip) for t in texts], labels, k)):
        # a longer phrase counts for more when it says as much
        scored = {p: score * (1 + 0.5 * p.count(" ")) for p, score in scores.items()}
        top = words[j][0].lower() if words[j] else ""
        holding = [p for p in scored if top in p.split()]
        best = max(holding, key=lambda p: (scored[p], p)) if holding else ""
        out.append(best[:1].upper() + best[1:] if best else heading(words[j]))
    return out


def own_heading(hits: list[Hit], labels: list[int], topic: int) -> str | None:
    """The section heading most of a topic's passages sit under, if they share one."""
    counts = Counter(
        heading_of(h).split(" › ")[-1]
        for h, label in zip(hits, labels, strict=True)
        if label == topic and heading_of(h)
    )
    if not counts:
        return None
    best, n = counts.most_common(1)[0]
    return best if n >= 2 else None


def heading(words: list[str]) -> str:
    """A section heading from a topic's words, when no phrase is shared: ``Pottery, August``."""
    text = ", ".join(words)
    return text[:1].upper() + text[1:]


async def plan_search(source: Source, query: str, request: str, user: User) -> list[Hit]:
    """The broad search of one source; the web's is made of the person's words only.

    A source whose queries leave the deployment (the web) checks each query against the
    public text it is given (``outgoing_from``): here the request, the person's own words. A
    query holding any other word is not sent there (the firewall would refuse it).
    """
    if not getattr(source, "outbound", False):
        return await source.search(query, user, PLAN_POOL)
    if outside_words(query, request):
        return []
    with outgoing_from(request):
        return await source.search(query, user, PLAN_POOL)


async def extractive_plan(
    request: str, ctx: Context, services: Services
) -> tuple[list[SubQuestion], dict[str, Any], list[Hit], dict[str, dict[str, Any]]]:
    """Sub-questions: one per part the request names, then the topics of its evidence.

    Also how they were found, the passages searched, and each sub-question's topic passages.
    A topic as close to a named part as two duplicates are is that part's (its passages too).
    """
    user = await user_of(services, ctx)
    subject = subject_of(request)
    named = part_questions(request)
    hits: list[Hit] = []
    seen: set[str] = set()
    # the request, and what it is about alone (a person's name, a project): its topics
    for query in dict.fromkeys(q for q in (request, subject) if q):
        for source in services.registry.select(ctx.sources):
            for hit in await plan_search(source, query, request, user):
                if hit["source_id"] not in seen:
                    seen.add(hit["source_id"])
                    hits.append(hit)
    alone: list[SubQuestion] = named or [
        {"id": "q1", "question": request, "depends_on": [], "intent": request}
    ]
    hits = [h for h in hits if not boilerplate(h, request)]
    sectioned = sum(bool(heading_of(h)) for h in hits) * 2 > len(hits)
    if len(hits) < 4 or (named and sectioned):
        # documents with sections of their own: the parts the request names are the report
        return alone, {"passages": len(hits), "topics": 1, "named_parts": len(named)}, [], {}
    texts = [f"{h['title']}. {h['snippet']}" for h in hits]
    vectors = np.asarray(await aembed_passages(services.embedder, texts))
    k = min(MAX_TOPICS, max(2, len(hits) // 6))
    labels = kmeans(vectors, k)
    skip = {w.lower() for w in display_words(request)} | REQUEST_FRAME
    skip |= {w.lower() for w in display_words(subject)}
    skip |= {w.lower() for h in hits for w in display_words(h["title"])}  # who, where, when
    words = topic_words(texts, labels, k, skip)
    headings = topic_headings(texts, labels, k, skip, words)
    if sectioned:  # documents: a topic is headed as its passages' own section is
        headings = [own_heading(hits, labels, j) or h for j, h in enumerate(headings)]
    clusters = [j for j in range(k) if words[j]]
    candidates = [" ".join(words[j]) for j in clusters]
    questions = [f"{subject} {c}".strip() for c in candidates]
    if not questions:
        return alone, {"passages": len(hits), "topics": 1, "named_parts": len(named)}, [], {}
    qv = np.asarray(await aembed_queries(services.embedder, questions))
    pv = (
        np.asarray(await aembed_queries(services.embedder, [n["question"] for n in named]))
        if named
        else np.zeros((0, qv.shape[1]), dtype=qv.dtype)
    )
    kept: list[int] = []
    for i in range(len(questions)):
        near_part = bool(named) and float(np.max(pv @ qv[i])) >= DUPLICATE_COSINE
        if not near_part and all(float(qv[i] @ qv[j]) < DUPLICATE_COSINE for j in kept):
            kept.append(i)
    kept = kept[: max(0, MAX_TOPICS - len(named))]
    plan: list[SubQuestion] = [*named] + [
        {
            "id": f"q{n}",
            "question": questions[i],
            "depends_on": [],
            "title": headings[clusters[i]],
            "intent": f"What the sources say of {subject or 'the request'} about "
            f"{candidates[i]}; not the other topics.",
        }
        for n, i in enumerate(kept, start=len(named) + 1)
    ]
    for sub in plan[len(named) :] if named else []:
        sub["topic"] = True  # beside the named parts: not asked for by the request
    # each topic's passages are its sub-question's evidence too (a merged topic's go to the
    # sub-question, named part or topic, it is closest to)
    homes = np.vstack([pv, qv[kept]]) if named else qv[kept]
    sub_of = {clusters[i]: plan[int(np.argmax(homes @ qv[i]))] for i in range(len(questions))}
    topics: dict[str, dict[str, Any]] = {
        sub["id"]: {"question": sub["question"], "ids": []} for sub in plan
    }
    for hit, label in zip(hits, labels, strict=True):
        if label in sub_of:
            topics[sub_of[label]["id"]]["ids"].append(hit["source_id"])
    how = {
        "passages": len(hits),
        "topics": k,
        "merged": len(questions) - len(kept),
        "named_parts": len(named),
    }
    return plan, how, hits, topics
