"""The LLM mode on a real model, the extractive mode beside it, question by question.

    SEEKGRAPH_LLM_BASE_URL=http://127.0.0.1:8088/v1 SEEKGRAPH_LLM_MODEL=qwen0.5b \\
    SEEKGRAPH_LLM_JSON_MODE=json_object SEEKGRAPH_LLM_FIRST_TOKEN_TIMEOUT=300 \\
    python -m bench.llm_mode --set paraphrase --half report \\
        --json bench/results/llm_mode_qwen0.5b_paraphrase_report.json

Sets: ``answers_dev`` and ``answers_heldout`` (judged as ``bench.answers`` judges them) and
``paraphrase`` (judged as ``bench.paraphrase`` does, demo questions asked as their user). Each
question runs in LLM mode with the model of ``SEEKGRAPH_LLM_*`` (start one with
``bench.local_model``), then in extractive mode on the same services. A record per question
is appended to ``--log`` as soon as it is done, so a run that is stopped keeps what it
measured and ``--resume`` goes on from there.

For the LLM answers:

- **citations valid**: every ``[src:…]`` of the final answer names kept evidence
  (``check_answer``'s rule), and **bad-citation rounds**: answers that needed another round
  because a citation named nothing retrieved;
- **unsupported statements**: a sentence stating a number or a name that none of the passages
  it cites holds (the passages cited in its paragraph; a paragraph citing none is held against
  every passage the answer cites). Numbers are digit runs; names are capitalised words not
  opening a sentence, ``code`` spans and snake_case words; the question's own words are not
  counted. The extractive answers, quotes by construction, are checked the same way. The
  check is written here, apart from the product's guard (``nodes.reader.grounding``), so that
  the two can disagree: what it counts is what slips past the guard, or what the guard and
  this reading of the sentence judge differently; integrate's ``degraded`` calls
  count how often the guard fired, ``answers_with_citations_attached`` how often a reply
  that cited nothing was shown citing the passages that hold it, and
  ``answers_with_citations_moved`` how often a line's citation was moved to the passage
  holding it, ``answers_unwrapped_from_a_copied_prompt`` how often a reply that copied its
  prompt's layout was judged on its own words;
- **structured calls** per node: first try valid (``ok``), ``repaired``, ``degraded``
  (the node fell back to its extractive strategy), ``failed``;
- **time**: seconds per question (p50/p95) and per node, tokens per question.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import answers as answers_bench
from bench import paraphrase as paraphrase_bench
from bench.answers import CITATION, SOURCE, build
from bench.report import command_line, write
from bench.runner import GraphRunner, index_runner
from seekgraph.nodes.reader.extractive import NOTHING_FOUND
from seekgraph.nodes.reader.guard import ATTACHED, KEPT_HELD, RECITED
from seekgraph.nodes.reader.model import UNWRAPPED
from seekgraph.providers import pace
from seekgraph.server.bootstrap import configured_chat
from seekgraph.server.settings import Settings
from seekgraph.sources.base import User
from seekgraph.sources.indexes.index_source import EmbeddedSource

SETS = {
    "answers_dev": "bench/data/answers_dev",
    "answers_heldout": "bench/data/answers_heldout",
    "paraphrase": "bench/data/paraphrase",
}


#: What an answer sentence claims that a program can check: a number, a `code span`, a
#: snake_case or dotted identifier, a capitalised word not opening the sentence. Written here
#: apart from the product's guard (``nodes.reader.grounding``) so that the two can disagree.
_CLAIM = re.compile(
    r"`[^`\n]+`|\b\d[\d,]*(?:\.\d+)?\b|\b[A-Za-z]\w*(?:[._]\w+)+\b|(?<=\s)[A-Z][\w-]*[A-Za-z]\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\[(])|\n+")


def _squeezed(text: str) -> str:
    return " ".join(text.lower().replace("`", "").split())


def unsupported(answer: str, question: str, passages: dict[str, str]) -> list[str]:
    """Sentences of ``answer`` stating a number or name that their cited passages lack.

    The passages a sentence is held against are those cited in its paragraph (a paragraph
    citing none: every passage the answer cites). The question's own words are not claims.
    """
    if answer.startswith(NOTHING_FOUND):
        return []  # a refusal states nothing of the sources
    body = answer.split("\n\nMissing:")[0]
    everywhere = [c for c in CITATION.findall(body)]
    asked = _squeezed(question)
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", body):
        if paragraph.lstrip().startswith(("```", "~~~")):
            continue  # a code block is a quote, judged by the guard's exact rule
        cited = CITATION.findall(paragraph) or everywhere
        held = _squeezed(" ".join(passages.get(c, "") for c in cited))
        for sentence in _SENTENCE_END.split(CITATION.sub("", paragraph)):
            claims = {_squeezed(c).strip(".,") for c in _CLAIM.findall(sentence)}
            claims = {c for c in claims if c and c not in asked}
            if any(c not in held and c.replace(",", "") not in held for c in claims):
                out.append(sentence.strip())
    return out


def _passages(values: dict[str, Any]) -> dict[str, str]:
    return {
        ev["source_id"]: f"{ev.get('title', '')} {ev['snippet']} {ev.get('context', '')}"
        for ev in values.get("evidence", []) or []
        if ev.get("kept_by") != "none"
    }


def measure(
    values: dict[str, Any], question: str, runner: GraphRunner, seconds: float
) -> dict[str, Any]:
    """What one LLM-mode (or extractive) run shows beside its pass or fail."""
    answer = str(values.get("answer", ""))
    passages = _passages(values)
    cited = CITATION.findall(answer.split("\n\nMissing:")[0])
    calls = values.get("model_calls", []) or []
    return {
        "mode": values.get("mode"),
        "seconds": round(seconds, 1),
        "stages": {k: round(v, 2) for k, v in runner.last_stages.items()},
        "citations_valid": all(c in passages for c in cited),
        "bad_citation_rounds": sum(bool(c.get("unknown_citations")) for c in runner.last_checks),
        "unsupported": unsupported(answer, question, passages),
        "calls": [f"{c['node']}:{c['outcome']}" for c in calls],
        # why a node fell back ("the reply stated 14, 2031, which the passages it cites…")
        "degraded": [f"{c['node']}: {c['detail']}" for c in calls if c["outcome"] == "degraded"],
        # what a node did beside its plain work ("the reply cited none of its sources; the
        # passages holding its lines were cited")
        "noted": [
            f"{c['node']}: {c['detail']}" for c in calls if c["outcome"] == "ok" and c.get("detail")
        ],
        "tokens": sum(int(c.get("tokens") or 0) for c in calls),
    }


Judge = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[int(q * (len(ordered) - 1))], 2) if ordered else 0.0


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Pass rates per mode, the LLM answers' checks, calls per node, time, who wins where."""
    out: dict[str, Any] = {"questions": len(records)}
    if not records:
        return out
    for mode in ("llm", "extractive"):
        rs = [r[mode] for r in records]
        out[mode] = {
            **paraphrase_bench.pass_rates(rs),
            "citations_valid": round(statistics.fmean(r["citations_valid"] for r in rs), 4),
            "answers_with_bad_citation_round": sum(r["bad_citation_rounds"] > 0 for r in rs),
            "answers_with_unsupported_statement": sum(bool(r["unsupported"]) for r in rs),
            "seconds_p50": _pct([r["seconds"] for r in rs], 0.5),
            "seconds_p95": _pct([r["seconds"] for r in rs], 0.95),
            "tokens_p50": _pct([r["tokens"] for r in rs], 0.5),
            "tokens_p95": _pct([r["tokens"] for r in rs], 0.95),
            "modes": dict(Counter(str(r["mode"]) for r in rs)),
            "answers_with_citations_attached": sum(
                any(ATTACHED in n for n in r.get("noted", [])) for r in rs
            ),
            "answers_with_citations_moved": sum(
                any(RECITED in n for n in r.get("noted", [])) for r in rs
            ),
            "answers_unwrapped_from_a_copied_prompt": sum(
                any(UNWRAPPED in n for n in r.get("noted", [])) for r in rs
            ),
            "answers_kept_to_their_held_sentences": sum(
                any(KEPT_HELD in n for n in r.get("noted", [])) for r in rs
            ),
        }
    llm = [r["llm"] for r in records]
    by_node: dict[str, Counter[str]] = {}
    for r in llm:
        for call in r["calls"]:
            node, outcome = call.rsplit(":", 1)
            by_node.setdefault(node, Counter())[outcome] += 1
    out["calls_by_node"] = {
        node: {**counts, "first_try_valid": round(counts["ok"] / sum(counts.values()), 4)}
        for node, counts in sorted(by_node.items())
    }
    stages = sorted({s for r in llm for s in r["stages"]})
    out["llm_seconds_by_node"] = {
        s: {
            "p50": _pct([r["stages"][s] for r in llm if s in r["stages"]], 0.5),
            "p95": _pct([r["stages"][s] for r in llm if s in r["stages"]], 0.95),
            "runs": sum(s in r["stages"] for r in llm),
        }
        for s in stages
    }
    wins: dict[str, list[str]] = {"both": [], "llm_only": [], "extractive_only": [], "neither": []}
    for r in records:
        a, b = r["llm"]["passed"], r["extractive"]["passed"]
        key = "both" if a and b else "llm_only" if a else "extractive_only" if b else "neither"
        wins[key].append(r["_id"])
    out["head_to_head"] = {k: {"count": len(v), "which": v} for k, v in wins.items()}
    return out


async def ask(
    args: argparse.Namespace, questions: list[dict[str, Any]], done: dict[str, dict[str, Any]]
) -> None:
    """Run the questions not yet in ``done`` in both modes, appending each record to the log."""
    data = Path(SETS[args.set])
    settings = Settings()
    chat, _ = configured_chat(settings)
    if chat is None:
        raise SystemExit(
            "set SEEKGRAPH_LLM_MODEL (and SEEKGRAPH_LLM_BASE_URL) to the model to test"
        )
    # as `seekgraph` does: the model's pace measured by earlier processes fits the first
    # question's budget too (else it has max_seconds and stops after a round)
    pace.keep_in(settings.data_dir / "model_pace.json")
    with tempfile.TemporaryDirectory() as tmp:
        index, _ = build(data, "minilm", Path(tmp))
        reader = User("bench", frozenset({"everyone"}))
        docs = index_runner(index, EmbeddedSource(index, SOURCE, "docs"), [reader])
        model = {"chat_model": chat, "model_name": settings.llm_model}
        runners = {"docs": GraphRunner(dataclasses.replace(docs.services, **model))}
        if args.set == "paraphrase":
            demo = paraphrase_bench.demo_runner(Path(tmp))
            runners["demo"] = GraphRunner(dataclasses.replace(demo.services, **model))
        for q in questions:
            if q["_id"] in done:
                continue
            runner = runners["demo" if q.get("corpus") == "demo" else "docs"]
            user = q["user"] if q.get("corpus") == "demo" else reader.name
            record: dict[str, Any] = {"_id": q["_id"], "question": q["question"]}
            for mode in ("llm", "extractive"):
                started = time.perf_counter()
                values, _ = await runner.run_graph(q["question"], user, mode=mode)
                seconds = time.perf_counter() - started
                judged = judge_of(args.set)(q, values)
                record[mode] = {
                    "passed": judged["passed"],
                    "answerable": q.get("doc") is not None,
                    "refused": str(values.get("answer", "")).startswith(NOTHING_FOUND),
                    **measure(values, q["question"], runner, seconds),
                    "answer": values.get("answer", ""),
                }
            done[q["_id"]] = record
            with args.log.open("a") as log:
                log.write(json.dumps(record, ensure_ascii=False) + "\n")
            print(q["_id"], "llm", record["llm"]["passed"], record["llm"]["seconds"], flush=True)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    data = Path(SETS[args.set])
    questions = [json.loads(ln) for ln in (data / "questions.jsonl").open() if ln.strip()]
    if args.half:
        questions = [q for q in questions if q.get("half") == args.half]
    questions = questions[: args.limit]
    done: dict[str, dict[str, Any]] = {}
    if (args.resume or args.summarize) and args.log.exists():
        done = {r["_id"]: r for r in map(json.loads, args.log.open()) if r.get("_id")}
    elif args.log.exists():
        args.log.unlink()
    settings = Settings()
    if not args.summarize:
        await ask(args, questions, done)
    records = [done[q["_id"]] for q in questions if q["_id"] in done]
    by_id = {q["_id"]: q for q in questions}
    for r in records:  # judged again by today's judge (a record may be from an earlier run)
        for mode in ("llm", "extractive"):
            answer = {"answer": r[mode]["answer"]}
            r[mode]["passed"] = judge_of(args.set)(by_id[r["_id"]], answer)["passed"]
    out = {"set": args.set, "half": args.half, "model": settings.llm_model}
    return {**out, "questions_in_set": len(questions), **summary(records)}


def judge_of(name: str) -> Judge:
    return answers_bench.judge if name.startswith("answers") else paraphrase_bench.judge


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(SETS), required=True)
    parser.add_argument("--half", choices=["tune", "report"], help="paraphrase: one half")
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--log", type=Path, help="per-question records (default: beside --json)")
    parser.add_argument("--resume", action="store_true", help="go on from --log")
    parser.add_argument(
        "--summarize", action="store_true", help="only summarize --log (no model needed)"
    )
    args = parser.parse_args()
    args.log = args.log or args.json.with_name(args.json.stem + "_questions.jsonl")
    started = time.time()
    out = asyncio.run(run(args))
    write(args.json, {"command": command_line("bench.llm_mode", args), **out}, started)


if __name__ == "__main__":
    main()
