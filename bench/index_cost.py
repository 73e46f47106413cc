"""What the index costs: indexing throughput, re-indexing, hybrid query latency, memory.

    python -m bench.index_cost --data ../shared/data/scifact --json bench/results/index_cost.json \\
        --redis-url redis://127.0.0.1:6391

The corpus is written out as a folder of Markdown files and indexed by the same path as
``seekgraph index`` (reading, chunking, embedding, full-text), into a fresh SQLite index; then
the unchanged folder is indexed again. Query latency is the index's own hybrid search (BM25 +
vectors, fused, permissions applied) with the query's embedding computed beforehand and timed
separately. With ``--redis-url`` the same folder goes into a Redis index too (vectors reused
from the first index, so that step times Redis ingestion without the model) and is queried the
same way. Peak memory is the process's maximum resident set after each step.
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from bench.datasets import load
from bench.report import command_line, write
from seekgraph.providers.embeddings import EMBEDDING_MODELS, Embedder, Vectors, load_embedder
from seekgraph.sources.base import User
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.ingestion.workspace import sync_source

USER = User("bench", frozenset({"everyone"}))


class Precomputed:
    """An embedder whose query vectors were computed beforehand (so searches time the index)."""

    def __init__(self, inner: Embedder, queries: dict[str, np.ndarray]) -> None:
        self.inner, self.queries = inner, queries
        self.name, self.dim = inner.name, inner.dim
        self.cosine_low, self.cosine_high = inner.cosine_low, inner.cosine_high
        self.paraphrase_cosine = inner.paraphrase_cosine

    def embed_queries(self, texts: list[str]) -> Vectors:
        return np.vstack([self.queries[t] for t in texts])

    def embed_passages(self, texts: list[str]) -> Vectors:
        return self.inner.embed_passages(texts)


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "p50_ms": round(statistics.median(ms), 2),
        "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2),
    }


def write_folder(corpus: list[dict[str, Any]], folder: Path) -> None:
    for doc in corpus:
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", str(doc["_id"]))
        title = (doc.get("title") or str(doc["_id"])).replace("\n", " ")
        (folder / f"{name}.md").write_text(f"# {title}\n\n{doc.get('text', '')}\n")


def time_queries(index: Any, questions: list[str]) -> dict[str, dict[str, float]]:
    out = {}
    for mode in ("hybrid", "bm25"):
        spent = []
        for q in questions:
            started = time.perf_counter()
            index.search("corpus", q, USER, 10, mode)
            spent.append(time.perf_counter() - started)
        out[mode] = percentiles(spent)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    data = load(Path(args.data))
    corpus = data.corpus[: args.limit] if args.limit else data.corpus
    questions = [q["question"] for q in data.questions][: args.queries]
    embedder = load_embedder(args.embedding)
    result: dict[str, Any] = {"documents": len(corpus), "embedding_model": embedder.name}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        write_folder(corpus, folder)
        embedder.embed_passages(["warm up"])
        started = time.perf_counter()
        vectors = embedder.embed_queries(questions)
        query_seconds = (time.perf_counter() - started) / max(1, len(questions))
        pre = Precomputed(embedder, dict(zip(questions, vectors, strict=True)))
        index = EmbeddedIndex(Path(tmp) / "index.sqlite", pre)
        first = sync_source(index, folder, "corpus", "docs", ["group:everyone"])
        again = sync_source(index, folder, "corpus", "docs", ["group:everyone"])
        result["sqlite"] = {
            "indexing_seconds": round(first.seconds, 1),
            "documents_per_second": round(first.indexed / first.seconds, 1),
            "chunks": first.chunks,
            "reindex_unchanged_seconds": round(again.seconds, 2),
            "peak_rss_mb_after_indexing": peak_rss_mb(),
            "query": time_queries(index, questions),
        }
        result["query_embedding_ms_mean"] = round(query_seconds * 1000, 2)
        if args.redis_url:
            from seekgraph.sources.indexes.redis_index import RedisIndex

            redis_index = RedisIndex(args.redis_url, pre, prefix=f"bench:{uuid.uuid4().hex[:8]}:")
            cached = index._conn.execute(
                "SELECT content_hash, vector FROM embedding_cache WHERE model = ?", (pre.name,)
            ).fetchall()
            key = f"{redis_index.prefix}emb:{pre.name}"
            for start in range(0, len(cached), 1000):
                redis_index.r.hset(key, mapping=dict(cached[start : start + 1000]))
            try:
                loaded = sync_source(redis_index, folder, "corpus", "docs", ["group:everyone"])  # type: ignore[arg-type]
                result["redis"] = {
                    "indexing_seconds_vectors_reused": round(loaded.seconds, 1),
                    "query": time_queries(redis_index, questions),
                }
            finally:
                redis_index.r.ft(redis_index.name).dropindex(delete_documents=True)
                redis_index.r.delete(key, f"{redis_index.prefix}meta")
                for k in redis_index.r.scan_iter(f"{redis_index.prefix}*"):
                    redis_index.r.delete(k)
        result["peak_rss_mb"] = peak_rss_mb()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--embedding", choices=EMBEDDING_MODELS, default="minilm")
    parser.add_argument("--redis-url", help="also measure a Redis index (search + JSON modules)")
    parser.add_argument("--limit", type=int, default=0, help="index only the first N documents")
    parser.add_argument("--queries", type=int, default=300, help="questions timed per mode")
    args = parser.parse_args()
    started = time.time()
    result = run(args)
    out = {"command": command_line("bench.index_cost", args), "data": str(args.data), **result}
    write(args.json, out, started)


if __name__ == "__main__":
    main()
