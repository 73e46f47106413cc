"""The web as a source, offline: a local web built from MuSiQue, searched and read on loopback.

    python -m bench.web --data ../shared/data/musique_dev100 --json bench/results/web.json

Each MuSiQue paragraph becomes a page of a local web (``tests/fakes/web_server.py``: a
SearxNG-compatible engine ranking the pages by BM25, pages served as HTML with navigation and a
footer around the article, links to the pages whose titles a paragraph names). The same
questions run through the search graph (extractive mode) in three settings:

- ``private``: every paragraph in the private index, no web;
- ``web``: every paragraph on the web, no private source;
- ``both``: the corpus split in two by a hash of the paragraph id — one half private, the
  other on the web — so most multi-hop questions need both to find all their paragraphs.

Reported per setting and per half (questions split in order: a tuning half
and a report half, in order): all-supporting@10 and recall@10 of the supporting paragraphs among the
documents the graph kept (no fallback ranking), answer containment (a gold answer string in the
answer), web pages read per question, p50/p95 seconds per question, and the queries sent to the
web with how many of them held a word that was neither the question's nor a web page's (the
firewall's invariant: 0).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench.datasets import Dataset, build_index, load
from bench.metrics import all_supporting_at_k, contains_answer, recall_at_k, strip_citations
from bench.report import command_line, write
from bench.runner import GraphRunner, doc_ranking, index_runner
from seekgraph.graph.context import OfflineReaderKnobs, SearchKnobs
from seekgraph.sources.registry import SourceRegistry
from seekgraph.sources.web import web_source
from seekgraph.sources.web.fetch import FetchPolicy, PageFetcher
from tests.support.processes import Proc, start_fake

SETTINGS = ("private", "web", "both")


def web_half(doc_id: str) -> bool:
    """Whether a paragraph lives on the web in the ``both`` setting (a stable hash split)."""
    return hashlib.sha256(doc_id.encode()).digest()[0] % 2 == 1


def pages_of(corpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One page per paragraph, linking to the pages whose titles its text names."""
    titles = {d["title"]: d["_id"] for d in corpus if d.get("title")}
    pages = []
    for doc in corpus:
        text = doc.get("text", "")
        links = [i for t, i in titles.items() if i != doc["_id"] and len(t) > 3 and t in text]
        pages.append({"slug": doc["_id"], "title": doc.get("title") or doc["_id"], "text": text,
                      "links": links[:10]})  # fmt: skip
    return pages


def paragraph_of(doc_id: str) -> str:
    """A web page's URL back to its paragraph id; a private doc id as it is."""
    return urlsplit(doc_id).path.rsplit("/", 1)[-1] if "://" in doc_id else doc_id


def start_web(tmp: Path, pages: list[dict[str, Any]]) -> Proc:
    path = tmp / "pages.json"
    path.write_text(json.dumps(pages), encoding="utf-8")
    proc = start_fake(tmp, "web_server", "--pages", str(path), ready="/calls")
    proc.url = proc.url.replace("127.0.0.1", "localhost")
    return proc


def runner_for(setting: str, data: Dataset, engine: str, embedding: str) -> GraphRunner:
    """The graph over this setting's sources."""
    user = data.user_for(data.questions[0])
    if setting == "web":
        corpus: list[dict[str, Any]] = []
    elif setting == "both":
        corpus = [d for d in data.corpus if not web_half(d["_id"])]
    else:
        corpus = data.corpus
    sources: list[Any] = []
    index = None
    if corpus:
        part = Dataset(f"{data.name}-{setting}", corpus, data.questions, data.qrels)
        index, private, _ = build_index(part, embedding)
        sources.append(private)
    if setting != "private":
        fetcher = PageFetcher(FetchPolicy(allow_hosts=frozenset({"localhost"})))
        sources.append(
            web_source(engine="searxng", searxng_url=engine, fetcher=fetcher, per_second=None)
        )
    if index is None:  # web only: the reranker still needs an embedder; a tiny index gives it
        part = Dataset(f"{data.name}-none", data.corpus[:1], data.questions, data.qrels)
        index, _, _ = build_index(part, embedding)
    runner = index_runner(index, sources[0], [user])  # type: ignore[arg-type]
    runner.services.registry = SourceRegistry(sources, users=[user])
    from seekgraph.graph.search import build_search_graph

    runner.graph = build_search_graph(runner.services).compile(checkpointer=runner.saver)
    return runner


_WORD = re.compile(r"\w+")


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    data = load(Path(args.data))
    if args.limit:
        data.questions = data.questions[: args.limit]
    tmp = Path(tempfile.mkdtemp(prefix="seekgraph-web-"))
    web = start_web(tmp, pages_of(data.corpus))
    public = set().union(*(words(f"{d.get('title', '')} {d.get('text', '')}") for d in data.corpus))
    ids = [q["_id"] for q in data.questions]
    tune, report = set(ids[: len(ids) // 2]), set(ids[len(ids) // 2 :])
    out: dict[str, Any] = {"questions": len(data.questions), "settings": {}}
    try:
        for setting in args.settings:
            runner = runner_for(setting, data, web.url, args.embedding)
            httpx.post(f"{web.url}/script", json={"reset": True}).raise_for_status()
            rows = []
            for q in data.questions:
                user = data.user_for(q)
                values, seconds = await runner.run_graph(
                    q["question"],
                    user.name,
                    max_rounds=args.rounds,
                    search=SearchKnobs(search_k=args.search_k),
                    offline=OfflineReaderKnobs(bridge_rounds=args.bridge_rounds),
                )
                ranked = [paragraph_of(d) for d in doc_ranking(values.get("evidence", []), [])]
                ranked = list(dict.fromkeys(ranked))
                supporting = list(data.qrels.get(q["_id"], {})) or q["supporting_ids"]
                body = strip_citations(values.get("answer", "").split("\n\nMissing:")[0])
                rows.append(
                    {
                        "id": q["_id"],
                        "all_supporting@10": all_supporting_at_k(ranked, supporting, 10),
                        "recall@10": recall_at_k(ranked, supporting, 10),
                        "containment": float(contains_answer(body, q.get("answers", []))),
                        "pages_read": (values.get("web_spent") or {}).get("pages", 0),
                        "seconds": seconds,
                    }
                )
            sent = httpx.get(f"{web.url}/queries").json()
            question_words = set().union(*(words(q["question"]) for q in data.questions))
            outside = [s for s in sent if words(s) - question_words - public]
            out["settings"][setting] = {
                "all": summary(rows),
                "tune": summary([r for r in rows if r["id"] in tune]),
                "report": summary([r for r in rows if r["id"] in report]),
                "queries_sent": len(sent),
                "queries_with_words_from_neither_question_nor_web": len(outside),
            }
            print(setting, json.dumps(out["settings"][setting]["all"]), flush=True)
            if setting != "private":
                await runner.services.registry.get("web").aclose()  # type: ignore[attr-defined]
    finally:
        web.stop()
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {}
    seconds = sorted(r["seconds"] for r in rows)
    return {
        "questions": len(rows),
        **{
            m: round(statistics.fmean(r[m] for r in rows), 4)
            for m in ("all_supporting@10", "recall@10", "containment", "pages_read")
        },
        "p50_seconds": round(seconds[len(seconds) // 2], 3),
        "p95_seconds": round(seconds[int(0.95 * (len(seconds) - 1))], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/musique_dev100")
    parser.add_argument("--json", type=Path, default=Path("bench/results/web.json"))
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--embedding", default="minilm")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--search-k", type=int, default=10)
    parser.add_argument("--bridge-rounds", type=int, default=3)
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=SETTINGS)
    args = parser.parse_args()
    started = time.time()
    result = asyncio.run(evaluate(args))
    write(args.json, {"command": command_line("bench.web", args), **result}, started)


if __name__ == "__main__":
    main()
