"""The LLM mode on a real model, the extractive mode beside it, question by question.

    SEEKGRAPH_LLM_BASE_URL=http://127.0.0.1:8088/v1 SEEKGRAPH_LLM_MODEL=qwen0.5b \\
    SEEKGRAPH_LLM_JSON_MODE=json_object SEEKGRAPH_LLM_FIRST_TOKEN_TIMEOUT=300 \\
    python -m bench.llm_mode --set paraphrase --half report \\
        --json bench/results/llm_mode_qwen0.5b_paraphrase_report.json

Sets: ``answers_dev`` and ``answers_heldout`` (judged as ``bench.answers`` judges them),
``paraphrase`` (judged as ``bench.paraphrase`` does, demo questions asked as their user) and the
dev sets ``devset_*`` in ``bench/data``, each by name (``devsets``: all of them; indexed and
judged as ``bench.devsets`` does, ``--limit`` questions of each, asked one of each set in turn
so that a run stopped early has about as many of each). Each question runs in LLM mode with
the model of ``SEEKGRAPH_LLM_*`` (start one with ``bench.local_model``), then in extractive
mode on the same services. A record per question is appended to ``--log`` as soon as it is
done, so a run that is stopped keeps what it measured and ``--resume`` goes on from there.

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

The dev sets are reported per corpus, as ``bench.devsets`` reports them (shown, answered
right, found nothing on an answerable question, near miss answered, where a question not shown
lost its passage) and ``answered_or_partial_right``: shown with status ``answered`` or
``partial`` (the guard keeps a model reply to its held sentences as ``partial``).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
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
from bench import devsets as devsets_bench
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

#: ``--set devsets``: every dev set in ``bench/data`` (``devset_*``), each judged and
#: reported on its own
DEVSETS = tuple(sorted(p.name for p in Path("bench/data").glob("devset_*")))
SETS = {
    "answers_dev": "bench/data/answers_dev",
    "answers_heldout": "bench/data/answers_heldout",
    "paraphrase": "bench/data/paraphrase",
    **{name: f"bench/data/{name}" for name in DEVSETS},
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
Rates = Callable[[list[dict[str, Any]]], dict[str, Any]]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[int(q * (len(ordered) - 1))], 2) if ordered else 0.0


def devset_rates(results: list[dict[str, Any]]) -> dict[str, Any]:
    """``bench.devsets``' numbers for one corpus, and the answers right as ``partial`` too."""
    answerable = [r for r in results if r["answerable"]]
    either = sum(r["shown"] and r["status"] in ("answered", "partial") for r in answerable)
    out: dict[str, Any] = {}
    for key, value in devsets_bench.rates(results).items():
        if key != "p50_seconds":  # seconds_p50 beside the LLM's
            out[key] = value
        if key == "answered_right":
            right = round(either / len(answerable), 3) if answerable else None
            out["answered_or_partial_right"] = right
    return out


def summary(
    records: list[dict[str, Any]], rates: Rates = paraphrase_bench.pass_rates
) -> dict[str, Any]:
    """Pass rates per mode, the LLM answers' checks, calls per node, time, who wins where."""
    out: dict[str, Any] = {"questions": len(records)}
    if not records:
        return out
    for mode in ("llm", "extractive"):
        rs = [r[mode] for r in records]
        out[mode] = {
            **rates(rs),
            "citations_valid": round(statistics.fmean(r["citations_valid"] for r in rs), 4),
            "answers_with_bad_citation_round": sum(r["bad_citation_rounds"] > 0 for r in rs),
            "answers_with_unsupported_statement": sum(bool(r["unsupported"]) for r in rs),
            "seconds_p50": _pct([r["seconds"] for r in rs], 0.5),
            "seconds_p95": _pct([r["seconds"] for r in rs], 0.95),
            "tokens_p50": _pct([r["tokens"] for r in rs], 0.5),
            "tokens_p95": _pct([r["tokens"] for r in rs], 0.95),
            "modes": dict(Counter(str(r["mode"]) for r in rs)),
            # what code changed of the model's output: a node fell back to its extractive
            # strategy (integrate: the guard put the quotes in the reply's place) …
            "answers_degraded": sum(bool(r["degraded"]) for r in rs),
            "answers_degraded_by_integrate": sum(
                any(d.startswith("integrate:") for d in r["degraded"]) for r in rs
            ),
            # … or kept the reply, changed
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
        model = {"chat_model": chat, "model_name": settings.llm_model}
        reader = User("bench", frozenset({"everyone"}))
        found: dict[str, GraphRunner] = {}
        if args.set.startswith("devset"):  # each corpus indexed as bench.devsets does
            for name in corpora(args.set):
                found[name], reader = devsets_bench.corpus_runner(
                    Path(SETS[name]), Path(tmp), "minilm"
                )
        else:
            index, _ = build(Path(SETS[args.set]), "minilm", Path(tmp))
            found["docs"] = index_runner(index, EmbeddedSource(index, SOURCE, "docs"), [reader])
        if args.set == "paraphrase":
            found["demo"] = paraphrase_bench.demo_runner(Path(tmp))
        runners = {
            name: GraphRunner(dataclasses.replace(r.services, **model)) for name, r in found.items()
        }
        for q in questions:
            if q["_id"] in done:
                continue
            runner = runners[q.get("devset") or ("demo" if q.get("corpus") == "demo" else "docs")]
            user = q["user"] if q.get("corpus") == "demo" else reader.name
            record: dict[str, Any] = {"_id": q["_id"], "question": q["question"]}
            if q.get("devset"):
                record["devset"] = q["devset"]
            for mode in ("llm", "extractive"):
                started = time.perf_counter()
                values, _ = await runner.run_graph(q["question"], user, mode=mode)
                seconds = time.perf_counter() - started
                judged = judge_of(args.set)(q, values)
                record[mode] = {
                    "passed": judged["passed"],
                    "answerable": judged.get("answerable", q.get("doc") is not None),
                    "refused": str(values.get("answer", "")).startswith(NOTHING_FOUND),
                    **measure(values, q["question"], runner, seconds),
                    "answer": values.get("answer", ""),
                    "status": values.get("status"),
                    # what bench.devsets judges where a question lost its passage by
                    "evidence": [
                        {"doc_id": e["doc_id"], "kept_by": e.get("kept_by")}
                        for e in values.get("evidence", []) or []
                    ],
                    # the hits a filter stage dropped (a passage lost there is ``cut``)
                    "filter_log": [
                        {"cut": [{"id": c["id"]} for c in log.get("cut", [])]}
                        for log in values.get("filter_log", []) or []
                    ],
                }
            done[q["_id"]] = record
            with args.log.open("a") as log:
                log.write(json.dumps(record, ensure_ascii=False) + "\n")
            print(q["_id"], "llm", record["llm"]["passed"], record["llm"]["seconds"], flush=True)


def corpora(name: str) -> tuple[str, ...]:
    """The sets ``--set name`` runs."""
    return DEVSETS if name == "devsets" else (name,)


def chosen(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The first ``--limit`` questions of ``--half`` of each set, one of each set in turn."""
    each = []
    for name in corpora(args.set):
        data = Path(SETS[name])
        lines = (data / "questions.jsonl").read_text().splitlines()
        questions = [json.loads(ln) for ln in lines if ln.strip()]
        if args.half:
            questions = [q for q in questions if q.get("half") == args.half]
        tag = {"devset": name} if name.startswith("devset") else {}
        each.append([{**q, **tag} for q in questions[: args.limit]])
    return [q for turn in itertools.zip_longest(*each) for q in turn if q is not None]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    questions = chosen(args)
    done: dict[str, dict[str, Any]] = {}
    if (args.resume or args.summarize) and args.log.exists():
        records = [json.loads(ln) for ln in args.log.read_text().splitlines() if ln.strip()]
        done = {r["_id"]: r for r in records if r.get("_id")}
    elif args.log.exists():
        args.log.unlink()
    settings = Settings()
    if not args.summarize:
        await ask(args, questions, done)
    records = [done[q["_id"]] for q in questions if q["_id"] in done]
    by_id = {q["_id"]: q for q in questions}
    devsets = args.set.startswith("devset")
    for r in records:  # judged again by today's judge (a record may be from an earlier run)
        for mode in ("llm", "extractive"):
            values = r[mode] if devsets else {"answer": r[mode]["answer"]}
            judged = judge_of(args.set)(by_id[r["_id"]], values)
            r[mode]["passed"] = judged["passed"]
            if devsets:
                r[mode].update({k: judged[k] for k in ("_id", "answerable", "shown", "right")})
                r[mode].update({k: judged[k] for k in ("status", "lost")})
    out = {"set": args.set, "half": args.half, "model": settings.llm_model}
    if not devsets:
        return {**out, "questions_in_set": len(questions), **summary(records)}
    per_corpus = {
        name: {
            "questions_in_set": sum(q["devset"] == name for q in questions),
            **summary([r for r in records if by_id[r["_id"]]["devset"] == name], devset_rates),
        }
        for name in corpora(args.set)
    }
    return {**out, "systems": systems(per_corpus), "per_corpus": per_corpus}


#: The columns of a dev-set run's table: (heading, key of a mode's summary)
COLUMNS = (
    ("questions", "questions"),
    ("shown", "shown"),
    ("answered right", "answered_right"),
    ("answered/partial right", "answered_or_partial_right"),
    ("found nothing", "found_nothing"),
    ("near miss answered", "unanswerable_answered"),
    ("s p50", "seconds_p50"),
    ("s p95", "seconds_p95"),
    ("degraded", "answers_degraded"),
    ("integrate degraded", "answers_degraded_by_integrate"),
    ("citations attached", "answers_with_citations_attached"),
    ("citations moved", "answers_with_citations_moved"),
    ("unwrapped", "answers_unwrapped_from_a_copied_prompt"),
    ("kept to held", "answers_kept_to_their_held_sentences"),
)


def systems(per_corpus: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One row per corpus and mode, for ``bench.report``'s table."""
    return {
        f"{name} {mode}": {heading: s[mode].get(key) for heading, key in COLUMNS}
        for name, s in per_corpus.items()
        for mode in ("llm", "extractive")
        if mode in s
    }


def judge_of(name: str) -> Judge:
    if name.startswith("devset"):
        return devset_judge
    return answers_bench.judge if name.startswith("answers") else paraphrase_bench.judge


def devset_judge(q: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """``bench.devsets``' judgement; an answer passes where it is shown."""
    judged = devsets_bench.judge(q, values)
    return {**judged, "passed": judged["shown"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted([*SETS, "devsets"]), required=True)
    parser.add_argument("--half", choices=["tune", "report"], help="paraphrase, dev sets: a half")
    parser.add_argument("--limit", type=int, help="only the first N questions (of each dev set)")
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
