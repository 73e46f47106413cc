"""Whether any signal the offline reader can compute tells a near miss from an answerable question.

    python -m bench.sure_signals --half tune --json bench/results/sure_signals.json

The offline reader answers (``status: answered``) only when it is sure; otherwise it shows the
closest passages. This runs every question of the dev sets (``bench/devsets.py``) through the
search graph, drafts the offline reply from the final evidence as ``integrate`` does, and
records, per question:

- its class: ``right`` (answerable, and the reader's quotes, were they given as the answer,
  would state the fact citing its document), ``wrong`` (answerable, they would not), ``near``
  (a near miss: the corpus does not answer it);
- the signals: the three the "sure" rule combines (``pulled``: the best quote is drawn toward
  the question's words; ``nothing``: a need of the question no quote carries; ``agree``: the
  search's first passage holds the best quote), the best quote's ``meaning`` and ``score``,
  the closeness of the closest line (``close1``) and its lead over the next passage
  (``close_gap``), and the share of the question's terms, weighted by their rarity in the
  corpus, found in the best quote (``sentence_cover``), its passage (``passage_cover``) and
  the first passage shown (``anchor_cover``).

For each signal: the rank AUC of ``right`` against ``near`` and against ``wrong`` and ``near``
together (0.5: no better than chance), and the medians per class; and the sure rule's table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.devsets import corpus_runner, judge
from bench.report import command_line, write
from seekgraph.graph.context import Context
from seekgraph.nodes.plumbing.evidence import by_authority, kept
from seekgraph.nodes.plumbing.writing import resolve_versions
from seekgraph.nodes.reader.extractive import EXTRACTIVE_HEADER
from seekgraph.nodes.reader.offline import OfflineReader, fitting, shown_passages
from seekgraph.nodes.reader.passages import answer_reply
from seekgraph.providers.terms import term_set
from seekgraph.state.models import is_pointer

SIGNALS = (
    "pulled",
    "nothing",
    "agree",
    "meaning",
    "score",
    "close1",
    "close_gap",
    "sentence_cover",
    "passage_cover",
    "anchor_cover",
)


def rarity(folder: Path) -> tuple[Counter[str], int]:
    """Each term's paragraph count in the corpus, and the number of paragraphs."""
    counts: Counter[str] = Counter()
    paragraphs = 0
    for path in sorted((folder / "corpus").rglob("*")):
        if path.is_file():
            for paragraph in path.read_text(encoding="utf-8", errors="ignore").split("\n\n"):
                counts.update(term_set(paragraph))
                paragraphs += 1
    return counts, paragraphs


def auc(positive: list[float], negative: list[float]) -> float | None:
    """The chance that a positive scores above a negative (ties count half)."""
    if not positive or not negative:
        return None
    above = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return round(above / (len(positive) * len(negative)), 3)


async def signals_of(
    reader: OfflineReader, q: dict[str, Any], values: dict[str, Any], idf: Any
) -> dict[str, Any]:
    """One question's class and signals, from the graph's final state."""
    evidence = kept(values.get("evidence", []))
    pool, _ = resolve_versions(by_authority([ev for ev in evidence if not is_pointer(ev)]))
    draft = await reader.draft(values, pool)  # type: ignore[arg-type]
    scored, close = draft.scored, draft.close
    best = scored[0] if scored else None
    quoted: str | None = None
    anchor = None
    if best is not None and pool:  # the reply ``offline_reply`` gives when it is sure
        chosen = shown_passages(scored, pool, draft.relevant, q["question"], close)
        anchor = chosen[0][0]
        quoted = answer_reply(chosen, EXTRACTIVE_HEADER, fitting(draft.lines))
    answered_right = bool(
        quoted and judge(q, {"answer": quoted, "status": "answered", "evidence": pool})["right"]
    )
    asked = term_set(q["question"])
    weight = sum(idf(t) for t in asked) or 1.0

    def cover(text: str) -> float:
        found = term_set(text)
        return round(sum(idf(t) for t in asked if t in found) / weight, 3)

    cosines = sorted(close.values(), reverse=True)
    title = best.evidence["title"] if best else ""
    return {
        "_id": q["_id"],
        "class": ("right" if answered_right else "wrong") if q["doc"] else "near",
        "status": draft.reply.status,
        "pulled": float(bool(best and best.pulled)),
        "nothing": float(draft.nothing_answers),
        "agree": float(bool(best and anchor and best.evidence["source_id"] == anchor["source_id"])),
        "meaning": round(best.meaning, 3) if best else 0.0,
        "score": round(best.score, 3) if best else 0.0,
        "close1": round(cosines[0], 3) if cosines else 0.0,
        "close_gap": round(cosines[0] - cosines[1], 3) if len(cosines) > 1 else 0.0,
        "sentence_cover": cover(f"{title} {best.sentence}") if best else 0.0,
        "passage_cover": cover(f"{title} {best.evidence['snippet']}") if best else 0.0,
        "anchor_cover": cover(f"{anchor['title']} {anchor['snippet']}") if anchor else 0.0,
    }


async def run_set(folder: Path, args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    """Every chosen question of one dev set, with its signals."""
    lines = (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(x) for x in lines if x.strip()]
    questions = [q for q in questions if args.half in (None, q["half"])]
    counts, paragraphs = rarity(folder)

    def idf(term: str) -> float:
        return float(math.log((1 + paragraphs) / (1 + counts.get(term, 0))) + 1.0)

    runner, user = corpus_runner(folder, work, args.embedding)
    reader = OfflineReader(runner.services, Context(user=user.name, mode="extractive"))
    rows = []
    for q in questions:
        values, _ = await runner.run_graph(q["question"], user.name)
        rows.append({"set": folder.name, **await signals_of(reader, q, values, idf)})
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per signal: AUCs and medians by class; the sure rule's table."""
    by = {c: [r for r in rows if r["class"] == c] for c in ("right", "wrong", "near")}
    signals = {}
    for name in SIGNALS:
        values = {c: [r[name] for r in group] for c, group in by.items()}
        signals[name] = {
            "auc_right_vs_near": auc(values["right"], values["near"]),
            "auc_right_vs_rest": auc(values["right"], values["wrong"] + values["near"]),
            "median": {c: round(statistics.median(v), 3) if v else None for c, v in values.items()},
        }
    table = Counter(
        (
            "answered" if r["status"] == "answered" else "passages",
            int(r["pulled"]),
            int(r["nothing"]),
            int(r["agree"]),
            r["class"],
        )
        for r in rows
    )
    return {
        "questions": {c: len(group) for c, group in by.items()},
        "signals": signals,
        "sure_rule": [
            {"status": k[0], "pulled": k[1], "nothing": k[2], "agree": k[3], "class": k[4], "n": n}
            for k, n in sorted(table.items())
        ],
    }


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    folders = [Path(d) for d in args.data] or sorted(Path("bench/data").glob("devset_*"))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.cache) if args.cache else Path(tmp)
        for folder in folders:
            rows += await run_set(folder, args, work)
    return {"all": summary(rows), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="*", default=[], help="dev set folders (default: all)")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--half", choices=["tune", "report"], help="only this half")
    parser.add_argument("--embedding", default="minilm")
    parser.add_argument("--cache", help="keep the indexes in this folder between runs")
    args = parser.parse_args()
    started = time.time()
    out = asyncio.run(evaluate(args))
    write(args.json, {"command": command_line("bench.sure_signals", args), **out}, started)


if __name__ == "__main__":
    main()
