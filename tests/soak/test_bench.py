"""The benchmark commands, run as others script them, on a small slice of each data set.

The evaluation data lives outside the repository (``../shared/data``; never copied in). A
slice keeps the folder layout, so these runs exercise the same code paths as the full ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
CANDIDATES = [
    os.environ.get("SEEKGRAPH_BENCH_DATA", ""),
    str(REPO.parent / "shared" / "data"),
    "/work/shared/data",
]
DATA = next((Path(p) for p in CANDIDATES if p and (Path(p) / "README.md").exists()), None)
pytestmark = pytest.mark.skipif(DATA is None, reason="evaluation data (../shared/data) absent")


def jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def slice_of(name: str, out: Path, questions: int = 4, extra_docs: int = 12) -> Path:
    """The first questions of a data set, their supporting documents and some others.

    What these runs assert is the report's shape and the code paths, not a score: a dozen
    other documents are enough for every system to rank among distractors (with 40, each run
    embedded about three times as many documents; CI is bound by its CPU).
    """
    assert DATA is not None
    src = DATA / name
    out.mkdir()
    qfile = "queries.jsonl" if (src / "queries.jsonl").exists() else "questions.jsonl"
    qrels_file = src / "qrels.tsv" if (src / "qrels.tsv").exists() else src / "qrels" / "train.tsv"
    qrels = [line.split("\t") for line in qrels_file.read_text().splitlines()[1:]]
    judged = list(dict.fromkeys(q for q, _, _ in qrels))[:questions]
    keep = {d for q, d, _ in qrels if q in judged}
    corpus = jsonl(src / "corpus.jsonl")
    docs = [d for d in corpus if d["_id"] in keep] + [
        d for d in corpus[:extra_docs] if d["_id"] not in keep
    ]
    (out / "corpus.jsonl").write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)
    )
    qs = [q for q in jsonl(src / qfile) if q["_id"] in judged]
    (out / qfile).write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in qs))
    (out / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in qrels if q in judged)
    )
    return out


def bench(*args: str, cwd: Path, env: dict[str, str] | None = None) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    json_path = Path(args[args.index("--json") + 1])
    assert json_path.with_suffix(".md").exists()
    result: dict[str, object] = json.loads(json_path.read_text())
    assert result["command"].startswith(f"python -m {args[0]}")  # type: ignore[union-attr]
    assert {"machine", "took_seconds", "date"} <= set(result)
    return result


def test_ranked_retrieval_on_a_scifact_slice(tmp_path: Path) -> None:
    folder = slice_of("scifact", tmp_path / "scifact")
    out = tmp_path / "r.json"
    result = bench("bench.retrieval", "--data", str(folder), "--json", str(out), cwd=REPO)
    systems = result["systems"]
    assert set(systems) == {"bm25", "dense", "hybrid", "graph"}  # type: ignore[arg-type]
    for metrics in systems.values():  # type: ignore[union-attr]
        assert set(metrics) == {"ndcg@10", "recall@100"}
        assert all(0.0 <= v <= 1.0 for v in metrics.values())
    assert result["queries"] == 4
    assert result["reranker"] == "local"
    # defaults are chosen on the first half and reported on the second
    halves = result["by_half"]
    assert set(halves) == {"tuning", "report"}  # type: ignore[arg-type]
    assert set(halves["report"]) == set(systems)  # type: ignore[index, arg-type]
    assert set(result["graph_stage_latency_seconds"]) >= {"search_source", "filter_results"}  # type: ignore[arg-type]


def test_a_configured_cohere_compatible_reranker_is_measured(tmp_path: Path) -> None:
    """A deployment's reranker (here a Cohere-compatible server on loopback) is what runs."""
    from tests.support.processes import start_cohere_server

    folder = slice_of("scifact", tmp_path / "scifact", questions=2)
    server = start_cohere_server(tmp_path)
    try:
        result = bench(
            "bench.retrieval",
            *("--data", str(folder), "--json", str(tmp_path / "r.json")),
            cwd=REPO,
            env={"SEEKGRAPH_COHERE_API_KEY": "k", "SEEKGRAPH_COHERE_BASE_URL": server.url},
        )
        assert result["reranker"] == "cohere"
        assert httpx.get(server.url + "/calls").json()["calls"] >= 2  # a rerank per question
    finally:
        server.stop()


@pytest.mark.parametrize("name", ["musique_dev100", "locomo_chat", "cmrc2018_zh"])
def test_multihop_chat_and_chinese_slices(tmp_path: Path, name: str) -> None:
    # the Chinese contexts are long and e5 is slow on them, the more under the benchmark's
    # heap tracing (tracemalloc): two questions (what is asserted is the report's shape, not a
    # score) and two documents beside their answer's
    chinese = name == "cmrc2018_zh"
    folder = slice_of(
        name, tmp_path / name, questions=2 if chinese else 4, extra_docs=3 if chinese else 12
    )
    extra = ["--embedding", "e5"] if name == "cmrc2018_zh" else []
    out = tmp_path / "m.json"
    result = bench("bench.multihop", "--data", str(folder), "--json", str(out), *extra, cwd=REPO)
    systems = result["systems"]
    assert set(systems) == {"bm25", "graph"}  # type: ignore[arg-type]
    for metrics in systems.values():  # type: ignore[union-attr]
        assert {"recall@5", "recall@10", "all_supporting@5", "all_supporting@10"} <= set(metrics)
    if name == "cmrc2018_zh":
        assert 0.0 <= result["extractive_answer_char_f1"] <= 1.0  # type: ignore[operator]
        assert systems["graph"]["hit@1"] is not None  # type: ignore[index]


def test_index_cost_on_a_slice_with_both_backends(tmp_path: Path, redis_url: str) -> None:
    folder = slice_of("scifact", tmp_path / "scifact")
    out = tmp_path / "cost.json"
    result = bench(
        "bench.index_cost",
        "--data",
        str(folder),
        "--json",
        str(out),
        "--redis-url",
        redis_url,
        "--queries",
        "4",
        cwd=REPO,
    )
    sqlite, redis = result["sqlite"], result["redis"]
    assert sqlite["documents_per_second"] > 0  # type: ignore[index]
    assert sqlite["chunks"] >= result["documents"]  # type: ignore[index]
    for backend in (sqlite, redis):
        assert backend["query"]["hybrid"]["p50_ms"] > 0  # type: ignore[index]


def test_fusion_check_on_a_chinese_slice(tmp_path: Path) -> None:
    folder = slice_of("cmrc2018_zh", tmp_path / "cmrc", extra_docs=10)
    out = tmp_path / "f.json"
    args = ("--data", str(folder), "--json", str(out), "--embedding", "e5", "--limit", "4")
    result = bench("bench.fusion_check", *args, cwd=REPO)
    systems = result["systems"]
    assert {"bm25", "bm25, only English function words left out", "dense"} <= set(systems)  # type: ignore[arg-type]
    fused = [name for name in systems if name.startswith("hybrid")]  # type: ignore[union-attr]
    assert len(fused) == 15  # five weights, three calibrations
    for metrics in systems.values():  # type: ignore[union-attr]
        assert set(metrics) == {"hit@1", "recall@5"}
        assert all(0.0 <= v <= 1.0 for v in metrics.values())
    assert result["questions"] == 4
