"""Are the extractive answers usable? Questions over real, third-party Markdown documentation.

    python -m bench.answers --data bench/data/answers_dev --json bench/results/answers_dev.json

``--data DIR`` holds ``packages.txt`` (distributions whose README forms the corpus: documents
no one here wrote, pinned as files in ``bench/data/readmes/``, ``bench.readme_corpus``) and
``questions.jsonl``: ``{"_id", "question", "kind", "doc", "must"}`` where ``doc`` is the
distribution whose README answers it (``null`` for an unanswerable question) and ``must`` one
to three short strings a correct answer quotes. The READMEs are written to a folder and read
by the same ingestion as ``seekgraph index``; each question runs through the search graph in
extractive mode, as the CLI runs it.

- **pass**: the answer contains every ``must`` string (case, Markdown emphasis and spacing
  ignored) and cites the right document; for an unanswerable question, it says nothing was
  found and cites nothing.
- **junk**: an answer with Markdown markup (links, images, HTML, headings, tables, emphasis)
  or a half sentence (a quote starting with "and", "which"… or ending on a word that needs more).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.readme_corpus import readme
from bench.report import command_line, write
from bench.runner import index_runner
from seekgraph.nodes.reader.extractive import NOTHING_FOUND
from seekgraph.providers.embeddings import EMBEDDING_MODELS, load_embedder
from seekgraph.sources.base import User
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.ingestion.workspace import sync_source

SOURCE = "docs"
CITATION = re.compile(r"\[src:([^\]]+)\]")
_MARKUP = re.compile(
    r"\]\(|!\[|<!--|</?[a-z][^>]*>|^\s*#{1,6}\s|\*\*|__\w|^\s*\|.*\|\s*$|^\s*\[[^\]]+\]:\s"
    r"|.```|^>>>",
    re.M,
)
#: A quote that ends on one of these words was cut off before its end.
_DANGLING = frozenset(
    "a an the and or of to in on for with by from as at using that which is are be can "
    "will your its their this".split()
)
#: A quote that starts with one of these (in lower case) is the tail of a sentence.
_CONTINUING = frozenset("and or but which that to of with by from in for as than".split())


def build(data: Path, embedding: str, workdir: Path) -> tuple[EmbeddedIndex, list[str]]:
    """The corpus folder (one README per distribution) indexed as ``seekgraph index`` does."""
    names = [
        line.strip()
        for line in (data / "packages.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    folder = workdir / "readmes"
    folder.mkdir()
    for name in names:
        (folder / f"{name}.md").write_text(readme(name), encoding="utf-8")
    index = EmbeddedIndex(workdir / "index.sqlite", load_embedder(embedding))
    sync_source(index, folder, SOURCE, "docs", ["group:everyone"])
    return index, names


_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_MONTH_DAY = re.compile(rf"\b({_MONTHS})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b")
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)\s+(?:of\s+)?({_MONTHS})\b")


def normal(text: str) -> str:
    """Lower case, Markdown emphasis and code marks removed, spacing collapsed.

    A date written "December 1st" or "1st of December" reads as "1 december" (the form the
    sets' ``must`` strings use): a model that states the date its own way states it.
    """
    text = " ".join(re.sub(r"[`*]", "", text).lower().split())
    text = _MONTH_DAY.sub(lambda m: f"{m.group(2)} {m.group(1)}", text)
    return _DAY_MONTH.sub(lambda m: f"{m.group(1)} {m.group(2)}", text)


def quoted_lines(answer: str) -> list[str]:
    """The answer's quoted units (the lines that carry a citation), without the citation."""
    out = []
    for line in answer.split("\n\n")[0].splitlines():
        if "[src:" in line:
            out.append(CITATION.sub("", line).strip().removeprefix("- ").strip())
    return out


def half_sentence(quote: str) -> bool:
    """A quote cut short: it starts mid-sentence ("and …") or ends on a word that needs more."""
    text = quote.strip().rstrip(")").strip()
    if not text:
        return False
    last = re.findall(r"[A-Za-z]+", text.split()[-1])
    return text.split()[0] in _CONTINUING or (bool(last) and last[-1].lower() in _DANGLING)


def judge(q: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """Pass, junk and length of one answer."""
    answer = values.get("answer", "")
    body = answer.split("\n\nMissing:")[0]
    cited = {c.split("#")[0] for c in CITATION.findall(body)}
    quotes = quoted_lines(answer)
    markup = [ln for ln in quotes if _MARKUP.search(ln)]
    halves = [ln for ln in quotes if "\n" not in ln and half_sentence(ln)]
    if q["doc"] is None:  # not presented as an answer: passages shown, or nothing found
        passed = values.get("status", "not_found" if answer.startswith(NOTHING_FOUND) else "")
        passed = passed in ("passages", "not_found")
    else:
        text = normal(body)
        passed = all(normal(m) in text for m in q["must"]) and f"{SOURCE}/{q['doc']}" in cited
    return {
        "_id": q["_id"],
        "kind": q["kind"],
        "status": values.get("status"),
        "passed": passed,
        "junk": bool(markup or halves),
        "markup": markup,
        "half_sentences": halves,
        "words": len(body.split()),
        "answer": answer,
    }


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    data = Path(args.data)
    questions = [
        json.loads(line) for line in (data / "questions.jsonl").read_text().splitlines() if line
    ]
    with tempfile.TemporaryDirectory() as tmp:
        index, names = build(data, args.embedding, Path(tmp))
        user = User("bench", frozenset({"everyone"}))
        runner = index_runner(index, EmbeddedSource(index, SOURCE, "docs"), [user])
        results = []
        for q in questions:
            values, _ = await runner.run_graph(q["question"], user.name)
            results.append(judge(q, values))
    answerable = [r for r in results if r["kind"] != "unanswerable"]
    unanswerable = [r for r in results if r["kind"] == "unanswerable"]
    kinds = sorted({r["kind"] for r in results})
    out: dict[str, Any] = {
        "data": str(data),
        "documents": names,
        "questions": len(results),
        "pass_rate": round(statistics.fmean(r["passed"] for r in results), 4),
        "junk_rate": round(statistics.fmean(r["junk"] for r in results), 4),
        "unanswerable_honesty": round(statistics.fmean(r["passed"] for r in unanswerable), 4)
        if unanswerable
        else None,
        "answerable_pass_rate": round(statistics.fmean(r["passed"] for r in answerable), 4)
        if answerable
        else None,
        "median_answer_words": statistics.median(r["words"] for r in results),
        "pass_rate_by_kind": {
            k: round(statistics.fmean(r["passed"] for r in results if r["kind"] == k), 4)
            for k in kinds
        },
        "failed": [r["_id"] for r in results if not r["passed"]],
        "junk": [r["_id"] for r in results if r["junk"]],
    }
    if args.answers:
        args.answers.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with packages.txt, questions.jsonl")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--embedding", choices=EMBEDDING_MODELS, default="minilm")
    parser.add_argument("--answers", type=Path, help="also write every answer here (JSON)")
    args = parser.parse_args()
    started = time.time()
    out = asyncio.run(evaluate(args))
    write(args.json, {"command": command_line("bench.answers", args), **out}, started)


if __name__ == "__main__":
    main()
