"""How the index's own ranking depends on its settings: stopwords, fusion weight, calibration.

    python -m bench.fusion_check --data ../shared/data/cmrc2018_zh --embedding e5 \\
        --skip 250 --limit 400 --json bench/results/fusion_check_cmrc.json

On questions the other benchmarks do not report (``--skip`` the ones they use), the index's
BM25 is measured with the function words of every language left out of the query (the
default) and with only English ones left out; then its dense ranking; then the fusion of the
two for several dense weights and cosine calibrations (e5 squeezes cosines into 0.70–0.90,
so its calibration and weight are the ones to check). hit@1 and recall@5 of the supporting
documents, on the dataset's cached index (``bench.datasets.build_index``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.datasets import build_index, load
from bench.metrics import recall_at_k
from bench.report import command_line, write
from seekgraph.providers.embeddings import EMBEDDING_MODELS, calibrate_cosine
from seekgraph.providers.terms import ENGLISH_STOPWORDS, words
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.scoring import fuse

WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)


def scores(ranked: list[list[str]], gold: list[set[str]]) -> dict[str, float]:
    """hit@1 and recall@5 over the questions."""
    return {
        "hit@1": round(
            statistics.fmean(
                float(r[:1] != [] and r[0] in g) for r, g in zip(ranked, gold, strict=True)
            ),
            4,
        ),
        "recall@5": round(
            statistics.fmean(recall_at_k(r, g, 5) for r, g in zip(ranked, gold, strict=True)), 4
        ),
    }


def english_only_bm25(index: EmbeddedIndex, question: str) -> list[tuple[int, float]]:
    """The index's BM25 query (same SQL, same column weights) with only English function
    words left out: what the full-text search did before Chinese ones were stopwords (the
    benchmark sets hold one source that everyone reads)."""
    tokens = dict.fromkeys(
        w.replace('"', "") for w in words(question) if w not in ENGLISH_STOPWORDS
    )
    query = " OR ".join(f'"{t}"' for t in tokens if t)
    if not query:
        return []
    rows = index._conn.execute(
        "SELECT rowid, -bm25(chunks_fts, 3.0, 2.0, 1.0) AS s FROM chunks_fts"
        " WHERE chunks_fts MATCH ? ORDER BY s DESC LIMIT 100",
        (query,),
    ).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    data = load(Path(args.data))
    questions = [q for q in data.questions if data.qrels.get(q["_id"])]
    questions = questions[args.skip : args.skip + args.limit]
    index, source, _ = build_index(data, args.embedding)
    embedder = index.embedder
    gold = [set(data.qrels[q["_id"]]) for q in questions]
    matrix, ids, doc_ids = index._matrix(source.name)
    doc_of = dict(zip(ids, doc_ids, strict=True))
    result: dict[str, Any] = {"questions": len(questions), "systems": {}}

    def docs(rows: list[tuple[int, float]]) -> list[str]:
        return list(dict.fromkeys(doc_of[r] for r, _ in rows))

    bm25 = [
        index.search(source.name, q["question"], data.user_for(q), 100, "bm25") for q in questions
    ]
    result["systems"]["bm25"] = scores([docs(rows) for rows in bm25], gold)
    lexical = [dict(rows) for rows in bm25]
    result["systems"]["bm25, only English function words left out"] = scores(
        [docs(english_only_bm25(index, q["question"])) for q in questions], gold
    )
    vectors = embedder.embed_queries([q["question"] for q in questions])
    cosines = [matrix @ v for v in vectors]
    result["systems"]["dense"] = scores(
        [docs([(ids[i], 0.0) for i in np.argsort(-c)[:100]]) for c in cosines], gold
    )
    low, high = embedder.cosine_low, embedder.cosine_high
    spread = round((high - low) / 4, 2)
    for cal_low, cal_high in ((low, high), (low - spread, high), (low + spread, high)):
        for weight in WEIGHTS:
            ranked = []
            for lex, cos in zip(lexical, cosines, strict=True):
                cal = calibrate_cosine(cos, cal_low, cal_high)
                dense = {ids[i]: float(cal[i]) for i in np.argsort(-cos)[:100]}
                ranked.append(docs(fuse(lex, dense, 100, weight)))
            name = f"hybrid, dense weight {weight}, cosine {cal_low:.2f}->{cal_high:.2f}"
            result["systems"][name] = scores(ranked, gold)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--embedding", choices=EMBEDDING_MODELS, default="minilm")
    parser.add_argument("--skip", type=int, default=0, help="leave out the first N questions")
    parser.add_argument("--limit", type=int, default=400)
    args = parser.parse_args()
    started = time.time()
    out = {"command": command_line("bench.fusion_check", args), "data": args.data}
    write(args.json, {**out, **evaluate(args)}, started)


if __name__ == "__main__":
    main()
