"""Research reports over a chat history: evidence and answer recall within ``max_words``.

    python -m bench.research --data ../shared/data/locomo_reports --json bench/results/research.json

One report per task, written by the research flow (extractive) as a user who sees only the
task's conversation. Beside it, in the same run: the index's hybrid ranking of the request
(passages concatenated up to ``max_words``) and the search flow's own answer to the request.
A nugget counts for evidence recall when one of its supporting messages is cited within the
first ``max_words`` words; for answer recall when one of its answers appears there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from bench.datasets import Dataset, build_index, load
from bench.metrics import all_supporting_at_k, contains_answer
from bench.report import command_line, write
from bench.runner import doc_ranking, install
from seekgraph.graph.context import Context, OfflineReaderKnobs, SearchKnobs
from seekgraph.graph.flows import FLOWS
from seekgraph.graph.run import run, run_config
from seekgraph.nodes.plumbing.evidence import relevance
from seekgraph.nodes.plumbing.services import Services
from seekgraph.providers.rerank import LocalReranker
from seekgraph.sources.indexes.index_vectors import reranker_embedder
from seekgraph.sources.registry import SourceRegistry

_REF = re.compile(r"\[(\d+)\]")
_SRC = re.compile(r"\[src:([^\]\s]+)\]")


def first_words(text: str, limit: int) -> str:
    """The first ``limit`` words of ``text`` (citation markers kept with their word)."""
    return " ".join(text.split()[:limit])


def score(
    text: str, cited_docs: set[str], task: dict[str, Any], all_cited: set[str]
) -> dict[str, Any]:
    """Evidence and answer recall of one report's first ``max_words`` words."""
    nuggets = task["nuggets"]
    evidence = [any(s in cited_docs for s in n["supporting_ids"]) for n in nuggets]
    answers = [contains_answer(text, n["answers"]) for n in nuggets]
    return {
        "evidence_recall": round(statistics.fmean(evidence), 4),
        "answer_recall": round(statistics.fmean(answers), 4),
        "cited": len(cited_docs),
        "foreign_citations": sorted(
            d for d in all_cited if not d.startswith(f"c{task['conversation']}:")
        ),
        "words": len(text.split()),
    }


def doc_of(source_id: str) -> str:
    return source_id.split("#")[0]


def report_tasks(folder: Path) -> list[dict[str, Any]]:
    """The report tasks of a ``locomo_reports``-style folder."""
    return [json.loads(x) for x in (folder / "tasks.jsonl").read_text().splitlines() if x]


def report_services(
    folder: Path, tasks: list[dict[str, Any]], embedding: str
) -> tuple[Dataset, Any, Any, Services]:
    """The tasks' corpus indexed, and services over it for the tasks' users."""
    corpus = [json.loads(x) for x in (folder / "corpus.jsonl").read_text().splitlines() if x]
    data = Dataset(folder.name, corpus, tasks)
    index, source, _ = build_index(data, embedding)
    users = {data.user_for(t).name: data.user_for(t) for t in tasks}
    services = Services(
        registry=SourceRegistry([source], users=list(users.values())),
        embedder=index.embedder,
        reranker=LocalReranker(reranker_embedder(index.embedder, index)),
    )
    return data, index, source, services


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    folder = Path(args.data)
    tasks = report_tasks(folder)
    if args.conversations:
        tasks = [t for t in tasks if t["conversation"] in args.conversations.split(",")]
    tasks = tasks[: args.limit] if args.limit else tasks
    data, index, source, services = report_services(folder, tasks, args.embedding)
    research = FLOWS["research"].compile(services, InMemorySaver())
    search = FLOWS["search"].compile(services, InMemorySaver())
    per_task = []
    for task in tasks:
        user = data.user_for(task)
        limit = task["max_words"]
        ctx = Context(user=user.name, mode="extractive", search=SearchKnobs(search_k=args.search_k))
        started = time.perf_counter()
        done = await run(research, {"question": task["request"]}, run_config(uuid.uuid4().hex), ctx)
        seconds = time.perf_counter() - started
        report = done.values["answer"]
        if args.reports:
            args.reports.mkdir(parents=True, exist_ok=True)
            (args.reports / f"{task['_id']}.md").write_text(report)
        refs = {str(r["n"]): doc_of(r["id"]) for r in done.values["references"]}
        head = first_words(report, limit)
        cited_head = {refs[n] for n in _REF.findall(head) if n in refs}
        ledger_ok = all(r["id"] for r in done.values["references"])
        graph_score = score(head, cited_head, task, set(refs.values()))
        # baseline 1: the index's hybrid ranking of the request, concatenated
        rows = index.search(source.name, task["request"], user, 200)
        hits = index.chunk_hits(rows, task["request"], source.authority)
        words: list[str] = []
        hybrid_docs: set[str] = set()
        for hit in hits:
            if len(words) >= limit:
                break
            words += f"{hit['snippet']} [src:{hit['source_id']}]".split()
            hybrid_docs.add(doc_of(hit["source_id"]))
        hybrid_text = " ".join(words[:limit])
        hybrid_cited = {doc_of(s) for s in _SRC.findall(hybrid_text)}
        hybrid = score(hybrid_text, hybrid_cited, task, hybrid_docs)
        # baseline 2: the search flow's own answer to the request
        answered = await run(
            search, {"question": task["request"]}, run_config(uuid.uuid4().hex), ctx
        )
        answer = first_words(answered.values["answer"], limit)
        answer_cited = {doc_of(s) for s in _SRC.findall(answer)}
        graph_answer = score(answer, answer_cited, task, answer_cited)
        sections = (
            report.count("\n## ")
            - ("## Contents" in report)
            - ("## What could not be found" in report)
        )
        per_task.append(
            {
                "task": task["_id"],
                "conversation": task["conversation"],
                "nuggets": len(task["nuggets"]),
                "research": {**graph_score, "sections": sections, "seconds": round(seconds, 1)},
                "hybrid_concatenated": hybrid,
                "search_answer": graph_answer,
                "citations_valid": ledger_ok,
            }
        )
        print(
            task["_id"],
            graph_score["evidence_recall"],
            hybrid["evidence_recall"],
            graph_answer["evidence_recall"],
            flush=True,
        )

    def mean(system: str, key: str) -> float:
        return round(statistics.fmean(t[system][key] for t in per_task), 4)

    systems = ("research", "hybrid_concatenated", "search_answer")
    summary = {
        s: {k: mean(s, k) for k in ("evidence_recall", "answer_recall", "words")} for s in systems
    }
    summary["research"]["sections"] = mean("research", "sections")
    summary["research"]["seconds_per_report"] = mean("research", "seconds")
    best = max(summary[s]["evidence_recall"] for s in systems[1:])
    tuning = set(args.tuning.split(","))
    halves = {
        name: {
            s: round(statistics.fmean(t[s]["evidence_recall"] for t in part), 4) for s in systems
        }
        for name, part in (
            ("tuning", [t for t in per_task if t["conversation"] in tuning]),
            ("report", [t for t in per_task if t["conversation"] not in tuning]),
        )
        if part
    }
    return {
        "evidence_recall_by_half": halves,
        "tasks": len(per_task),
        "systems": summary,
        "evidence_recall_ratio_to_best_baseline": round(
            summary["research"]["evidence_recall"] / best, 2
        )
        if best
        else None,
        "citation_validity": all(t["citations_valid"] for t in per_task),
        "foreign_citations": sum(len(t["research"]["foreign_citations"]) for t in per_task),
        "per_task": per_task,
    }


def gold_plan(question: dict[str, Any]) -> list[dict[str, Any]]:
    """MuSiQue's decomposition as a plan: its questions and ``#1`` references, no answers."""
    plan = []
    for i, step in enumerate(question["decomposition"], start=1):
        refs = sorted(set(re.findall(r"#(\d+)", step["question"])))
        text = re.sub(r"#(\d+)", lambda m: "{q" + m.group(1) + "}", step["question"])
        plan.append({"id": f"q{i}", "question": text, "depends_on": [f"q{r}" for r in refs]})
    return plan


def research_ranking(values: dict[str, Any], state: dict[str, Any]) -> list[str]:
    """Documents the run found, each sub-question's citations in turn (round-robin), then the
    rest of its ledger by relevance."""
    lists = [
        [doc_of(c["id"]) for c in r["citations"]]
        for r in (state["results"][s["id"]] for s in state["plan"] if s["id"] in state["results"])
    ]
    ranked: list[str] = []
    for depth in range(max((len(x) for x in lists), default=0)):
        for docs in lists:
            if depth < len(docs) and docs[depth] not in ranked:
                ranked.append(docs[depth])
    rest = sorted(state["ledger"].values(), key=relevance, reverse=True)
    return ranked + [
        d for d in dict.fromkeys(doc_of(e["source_id"]) for e in rest) if d not in ranked
    ]


async def evaluate_gold(args: argparse.Namespace) -> dict[str, Any]:
    """MuSiQue with ``--plan gold``: the decomposition run by the scheduler, beside the
    search graph alone (one bridge round, as when the research flow's target was set, and
    three that follow the chain, as ``bench.multihop`` runs it), all-supporting@10."""
    data = load(Path(args.data))
    questions = [q for q in data.questions if q.get("decomposition")]
    questions = questions[: args.limit] if args.limit else questions
    index, source, _ = build_index(data, args.embedding)
    runner = install(index, source, data)
    research = FLOWS["research"].compile(runner.services, InMemorySaver())
    scores: dict[str, list[float]] = {
        "research_gold_plan": [],
        "search_graph": [],
        "search_graph_3_bridges": [],
    }
    for q in questions:
        user = data.user_for(q)
        ctx = Context(user=user.name, mode="extractive", search=SearchKnobs(search_k=args.search_k))
        thread = uuid.uuid4().hex
        done = await run(
            research, {"question": q["question"], "plan": gold_plan(q)}, run_config(thread), ctx
        )
        state = (await research.aget_state({"configurable": {"thread_id": thread}})).values
        ranked = research_ranking(done.values, state)
        scores["research_gold_plan"].append(all_supporting_at_k(ranked, q["supporting_ids"], 10))
        for name, rounds, bridges in (("search_graph", 3, 1), ("search_graph_3_bridges", 5, 3)):
            values, _ = await runner.run_graph(
                q["question"],
                user.name,
                search=SearchKnobs(search_k=args.search_k),
                max_rounds=rounds,
                offline=OfflineReaderKnobs(bridge_rounds=bridges),
            )
            alone = doc_ranking(values.get("evidence", []), [])
            scores[name].append(all_supporting_at_k(alone, q["supporting_ids"], 10))
    out = {k: round(statistics.fmean(v), 4) for k, v in scores.items()}
    return {
        "questions": len(questions),
        "all_supporting@10": out,
        "difference": round(out["research_gold_plan"] - out["search_graph"], 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--embedding", default="minilm")
    parser.add_argument("--limit", type=int, default=0, help="only the first N tasks")
    parser.add_argument("--search-k", type=int, default=20)
    parser.add_argument(
        "--conversations", help="only these conversations' tasks (e.g. 26,30: the tuning half)"
    )
    parser.add_argument(
        "--tuning",
        default="26,30",
        help="conversations whose tasks chose the defaults; the others are reported apart",
    )
    parser.add_argument("--reports", type=Path, help="write each report here as TASK.md")
    parser.add_argument(
        "--plan",
        choices=["generated", "gold"],
        default="generated",
        help="gold: MuSiQue's decomposition as the plan (questions only)",
    )
    args = parser.parse_args()
    started = time.time()
    result = asyncio.run(evaluate_gold(args) if args.plan == "gold" else evaluate(args))
    write(args.json, {"command": command_line("bench.research", args), **result}, started)


if __name__ == "__main__":
    main()
