"""Where the chunk stating a dev-set question's fact ranks in one search, per retriever.

    python -m bench.devset_ranks --half tune --json bench/results/devset_ranks_tune.json

For each answerable question of the dev sets (``bench/data/devset_*``) whose fact (every
``must`` string) sits in one chunk of a ``doc`` it names, the rank of the best such chunk
among all the corpus's chunks when the question alone is searched by:

- ``bm25``: the index's full-text engine (SQLite FTS5, the index's field weights);
- ``dense_minilm``, ``dense_e5``: cosine of one embedding model;
- ``dense_mean``: the mean of both models' calibrated cosines (two models err apart);
- ``hybrid_<model>_<w>``: the index's fusion (``sources.indexes.scoring.fuse``) of BM25 and
  that dense score, ``w`` the dense weight (0.5 is the product's);
Reported per corpus: hit@6, hit@10, hit@20, hit@50 and MRR; and ``unions_hit``: the share
found by the product's hybrid top ``search_k`` (6) or among the ``n`` closest chunks by MiniLM
alone (a dense leg beside the fusion). This is the first search only:
the graph also searches its query variants and reads documents, so the end-to-end numbers
(``bench.devsets``) differ. The embeddings of each corpus are computed once per model.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.answers import normal
from bench.devsets import build_index, doc_ids
from bench.report import command_line, write
from seekgraph.providers.embeddings import calibrate_cosine, load_embedder
from seekgraph.sources.indexes.embedded import fts_query
from seekgraph.sources.indexes.scoring import FIELD_WEIGHTS, chunk_embed_text, fuse

SEARCH_K = 6
CUTS = (6, 10, 20, 50)


def rank_of(scores: dict[int, float], gold: set[int]) -> int:
    """0-based rank of the best gold chunk (past every cut when none is scored)."""
    ordered = sorted(scores.items(), key=lambda kv: -kv[1])
    return next((i for i, (key, _) in enumerate(ordered) if key in gold), len(ordered) + 1000)


def summary(ranks: list[int]) -> dict[str, float]:
    """hit@k and MRR of 0-based ranks."""
    arr = np.array(ranks)
    out = {f"hit@{k}": round(float(np.mean(arr < k)), 3) for k in CUTS}
    out["mrr"] = round(float(np.mean(1.0 / (arr + 1))), 3)
    return out


def corpus_ranks(folder: Path, work: Path, half: str | None) -> dict[str, Any]:
    """Ranks of every usable question of one dev set, per retriever."""
    index = build_index(folder, work / folder.name, "minilm")
    models = {"minilm": index.embedder, "e5": load_embedder("e5")}
    conn = index._conn
    rows = conn.execute(
        "SELECT c.id, d.title, c.heading, c.text, c.preceding, c.doc_id FROM chunks c"
        " JOIN documents d ON d.doc_id = c.doc_id ORDER BY c.id"
    ).fetchall()
    ids = [r[0] for r in rows]
    texts = [
        chunk_embed_text(r[1], {"chunk_id": "", "heading": r[2], "text": r[3], "preceding": r[4]})
        for r in rows
    ]
    matrices = {name: np.asarray(m.embed_passages(texts)) for name, m in models.items()}
    weights = ", ".join(str(w) for w in FIELD_WEIGHTS.values())
    lines = (folder / "questions.jsonl").read_text().splitlines()
    questions = [json.loads(x) for x in lines if x.strip()]
    ranks: dict[str, list[int]] = {}
    unions: dict[str, list[bool]] = {}
    skipped = []
    for q in questions:
        if not q.get("doc") or not q["must"] or half not in (None, q["half"]):
            continue
        docs, must = doc_ids(q), [normal(m) for m in q["must"]]
        gold = {r[0] for r in rows if r[5] in docs and all(m in normal(r[3]) for m in must)}
        if not gold:  # the fact spans chunks: no single chunk can be found
            skipped.append(q["_id"])
            continue
        fts = fts_query(q["question"])
        lexical: dict[int, float] = {}
        if fts:
            lexical = {
                r[0]: float(r[1])
                for r in conn.execute(
                    f"SELECT rowid, -bm25(chunks_fts, {weights}) FROM chunks_fts"
                    " WHERE chunks_fts MATCH ?",
                    (fts,),
                )
            }
        raw: dict[str, dict[int, float]] = {}
        cal: dict[str, dict[int, float]] = {}
        for name, model in models.items():
            cos = matrices[name] @ np.asarray(model.embed_queries([q["question"]])[0])
            raw[name] = dict(zip(ids, cos.tolist(), strict=True))
            scaled = calibrate_cosine(cos, model.cosine_low, model.cosine_high)
            cal[name] = dict(zip(ids, scaled.tolist(), strict=True))
        mean = {i: (cal["minilm"][i] + cal["e5"][i]) / 2 for i in ids}
        found = {
            "bm25": rank_of(lexical, gold),
            "dense_minilm": rank_of(raw["minilm"], gold),
            "dense_e5": rank_of(raw["e5"], gold),
            "dense_mean": rank_of(mean, gold),
        }
        for w in (0.5, 0.8):
            for name, dense in (("minilm", cal["minilm"]), ("mean", mean)):
                fused = dict(fuse(lexical, dense, len(ids), dense_weight=w))
                found[f"hybrid_{name}_{w}"] = rank_of(fused, gold)
        for name, r in found.items():
            ranks.setdefault(name, []).append(r)
        for n in (3, 6):
            hit = found["hybrid_minilm_0.5"] < SEARCH_K or found["dense_minilm"] < n
            unions.setdefault(f"hybrid@{SEARCH_K}+dense_minilm@{n}", []).append(hit)
    index.close()
    return {
        "questions": len(next(iter(ranks.values()), [])),
        "fact_split_over_chunks": skipped,
        "retrievers": {name: summary(r) for name, r in ranks.items()},
        "unions_hit": {name: round(sum(h) / len(h), 3) for name, h in unions.items() if h},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="*", default=[], help="dev set folders (default: all)")
    parser.add_argument("--half", choices=["tune", "report"], help="only this half")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--cache", help="keep the MiniLM indexes in this folder between runs")
    args = parser.parse_args()
    started = time.time()
    folders = [Path(d) for d in args.data] or sorted(Path("bench/data").glob("devset_*"))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.cache) if args.cache else Path(tmp)
        out = {f.name: corpus_ranks(f, work, args.half) for f in folders}
    write(args.json, {"command": command_line("bench.devset_ranks", args), **out}, started)


if __name__ == "__main__":
    main()
