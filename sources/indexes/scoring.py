"""What both index backends share in scoring.

BM25 and vectors fused into one score, the text a chunk is embedded as, and the query words
sent to a full-text engine.
"""

from __future__ import annotations

from typing import TypeVar

from seekgraph.providers.terms import STOPWORDS, words
from seekgraph.state.models import Chunk

#: Weight of the dense score in the fused score; 0.5 was best on SciFact (see MEASURED.md).
DENSE_WEIGHT = 0.5


#: BM25 weights of a chunk's fields (title, heading, text, preceding): a chat message's
#: previous message counts at 0.4 of its own words (LoCoMo; the README's "why these defaults").
FIELD_WEIGHTS = {"title": 3.0, "heading": 2.0, "text": 1.0, "preceding": 0.4}

K = TypeVar("K")


def fuse(
    lexical: dict[K, float], dense: dict[K, float], k: int, dense_weight: float = DENSE_WEIGHT
) -> list[tuple[K, float]]:
    """Linear fusion: BM25 (relative to the best lexical hit) and calibrated cosine, equally.

    ``DENSE_WEIGHT`` 0.5 was best on SciFact (``../shared/MEASURED.md``). Both indexes use it;
    ``bench.fusion_check`` measures other weights.
    """
    top_lex = max(lexical.values(), default=0.0)
    fused: dict[K, float] = {}
    for key in set(lexical) | set(dense):
        lex = lexical.get(key, 0.0) / top_lex if top_lex > 0 else 0.0
        score = dense_weight * dense.get(key, 0.0) + (1 - dense_weight) * lex
        if score > 0.05:
            fused[key] = score
    best = sorted(fused.items(), key=lambda kv: -kv[1])[:k]
    return [(key, round(score, 4)) for key, score in best]


def embed_text(title: str, heading: str, text: str) -> str:
    """The text embedded for a chunk: "title. heading: text" (what a reranker sees too)."""
    return f"{title}. {heading}: {text}" if heading else f"{title}. {text}"


def chunk_embed_text(title: str, chunk: Chunk) -> str:
    """The text a chunk is indexed as: ``embed_text`` with what precedes it, if anything.

    A chat message is embedded after the message it follows, on the line before it
    ("Melanie: Have you been to one?" then "Caroline: Yes, twice!"), so a question about
    what was answered finds the answer.
    Its own vector (``embed_text`` without it) is what a reranker compares.
    """
    text, before = chunk["text"], chunk.get("preceding", "")
    return embed_text(title, chunk.get("heading", ""), f"{before}\n{text}" if before else text)


def plain_embed_texts(title: str, chunk: Chunk) -> list[str]:
    """The reranker's text of a chunk indexed with what precedes it ([] for other chunks)."""
    return (
        [embed_text(title, chunk.get("heading", ""), chunk["text"])]
        if chunk.get("preceding")
        else []
    )


def lexical_terms(query: str) -> list[str]:
    """The distinct content words of a query, for full-text engines."""
    return list(dict.fromkeys(w for w in words(query) if w not in STOPWORDS and w))
