"""The LLM mode against replies known to be right: how often does the pipeline alter them?

    python -m bench.right_replies --json bench/results/right_replies.json

A scripted stand-in for a perfect model runs every answerable question of the dev sets
(``bench/data/devset_*``) through the search graph in LLM mode. It writes search queries of
none (the question itself is searched), grades every passage relevant, decides to answer, and
— when the gold passage (a passage of a ``doc`` holding every ``must`` string) is among the
sources it is shown — answers from it, citing it, in one of several styles (short, restating
the question, a list, a code block, other words than the passage); when it is not shown,
it says the sources do not say. Reported, per style and in all:

- **reached**: questions whose gold passage was shown to the model;
- **altered**: of those, replies the pipeline did not show exactly as written (goal ≤ 2 %),
  each with what code changed (the run's ``model_calls`` record);
- **ceiling**: of those, answers that state the fact and cite the gold document (goal ≥ 95 %).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from bench.answers import normal
from bench.devsets import SOURCE, build_index, doc_ids
from bench.report import command_line, write
from bench.runner import GraphRunner
from seekgraph.nodes.plumbing.services import Services
from seekgraph.providers.rerank import LocalReranker
from seekgraph.providers.sentences import blocks, sentences
from seekgraph.sources.base import User
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.indexes.index_vectors import reranker_embedder
from seekgraph.sources.registry import SourceRegistry
from tests.fakes.model_server import reply_for

#: Prompts a perfect model answers as the well-behaved test model does.
DECISIONS = (
    "<role>You write search queries",
    "<role>You judge whether passages",
    "<role>You decide whether the evidence",
    "<role>You check an answer",
)
STYLES = ("short", "restating", "list", "code", "own words")
_SOURCE = re.compile(r'<source id="([^"]+)" doc_id="([^"]+)"[^>]*>\n(.*?)\n</source>', re.S)


def gold_passage(prompt: str, q: dict[str, Any]) -> tuple[str, str] | None:
    """(source id, text) of the first shown passage of a gold document holding every fact."""
    gold = doc_ids(q)
    for sid, doc, text in _SOURCE.findall(prompt):
        if doc in gold and all(normal(m) in normal(text) for m in q["must"]):
            return sid, text
    return None


def right_reply(q: dict[str, Any], sid: str, text: str, style: str) -> str:
    """A right answer from the gold passage, citing it, in ``style``."""
    must = q["must"][0]
    body = text.split("\n", 1)[1] if "\n" in text else text  # (its first line is the title)
    code = next((b for b in blocks(body) if b.startswith("```") and must in b), None)
    sentence = next(
        (s for s in sentences(body) if not s.startswith("```") and normal(must) in normal(s)),
        None,
    )
    cite = f"[src:{sid}]"
    if style == "code" and code:
        return f"Like this:\n\n{code}\n\n{cite}"
    if style == "short" or sentence is None:
        return f"{' '.join(q['must'])} {cite}."
    if style == "restating":
        return f"{sentence} {cite}"
    if style == "list":
        return f"- {sentence} {cite}"
    # other words: the fact, said around it
    return f"From what the documentation says, the answer is {' and '.join(q['must'])} {cite}."


class PerfectModel(GenericFakeChatModel):
    """A scripted stand-in for a model that is always right; keeps what it answered."""

    question: dict[str, Any] = {}
    style: str = "short"
    replied: list[str] = []
    reached: bool = False

    def _reply(self, prompt: str) -> str:
        if any(role in prompt for role in DECISIONS):  # decisions as a right model makes them
            return reply_for(prompt, 0)
        found = gold_passage(prompt, self.question)
        reply = (
            right_reply(self.question, *found, self.style)
            if found
            else "The sources do not say this."
        )
        self.reached = self.reached or found is not None
        self.replied.append(reply)
        return reply

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self.messages = iter([AIMessage(content=self._reply(str(messages[-1].content)))])
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self.messages = iter([AIMessage(content=self._reply(str(messages[-1].content)))])
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


async def run_set(folder: Path, args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    questions = [json.loads(x) for x in (folder / "questions.jsonl").open() if x.strip()]
    questions = [q for q in questions if q["doc"] and args.half in (None, q["half"])]
    index = build_index(folder, work / folder.name, args.embedding)
    reader = User("bench", frozenset({"everyone"}))
    model = PerfectModel(messages=iter([]))
    services = Services(
        registry=SourceRegistry([EmbeddedSource(index, SOURCE, "docs")], users=[reader]),
        embedder=index.embedder,
        reranker=LocalReranker(reranker_embedder(index.embedder, index)),
        chat_model=model,
        model_name="perfect",
    )
    runner = GraphRunner(services)
    out = []
    for n, q in enumerate(questions[: args.limit]):
        style = STYLES[n % len(STYLES)]
        model.question, model.style, model.replied, model.reached = q, style, [], False
        values, seconds = await runner.run_graph(q["question"], reader.name, mode="llm")
        answer = str(values.get("answer", ""))
        cited = {c.split("#")[0] for c in re.findall(r"\[src:([^\]]+)\]", answer)}
        written = model.replied[-1] if model.replied else ""
        integrate = [c for c in values.get("model_calls") or [] if c["node"] == "integrate"]
        out.append(
            {
                "_id": q["_id"],
                "set": folder.name,
                "style": style,
                "reached": model.reached,
                "unaltered": answer == written,
                "right": all(normal(m) in normal(answer) for m in q["must"])
                and bool(cited & doc_ids(q)),
                "status": values.get("status"),
                "mode": values.get("mode"),
                "changes": [c["detail"] for c in integrate if c["detail"]],
                "written": written,
                "answer": answer,
                "seconds": round(seconds, 2),
            }
        )
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    reached = [r for r in rows if r["reached"]]
    altered = [r for r in reached if not r["unaltered"]]
    return {
        "questions": len(rows),
        "reached": len(reached),
        "altered": len(altered),
        "altered_share": round(len(altered) / len(reached), 3) if reached else None,
        "ceiling": round(sum(r["right"] for r in reached) / len(reached), 3) if reached else None,
        "altered_ids": [(r["_id"], r["changes"][:1]) for r in altered],
    }


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    folders = [Path(d) for d in args.data] or sorted(Path("bench/data").glob("devset_*"))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.cache) if args.cache else Path(tmp)
        for folder in folders:
            rows += await run_set(folder, args, work)
    if args.answers:
        args.answers.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    return {
        "all": summary(rows),
        "by_style": {s: summary([r for r in rows if r["style"] == s]) for s in STYLES},
        "by_set": {f.name: summary([r for r in rows if r["set"] == f.name]) for f in folders},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="*", default=[], help="dev set folders (default: all)")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--answers", type=Path, help="also write every reply and answer here")
    parser.add_argument("--half", choices=["tune", "report"], help="only this half")
    parser.add_argument("--limit", type=int, help="only the first N questions of each set")
    parser.add_argument("--embedding", default="minilm")
    parser.add_argument("--cache", help="keep the indexes in this folder between runs")
    args = parser.parse_args()
    started = time.time()
    out = asyncio.run(evaluate(args))
    write(args.json, {"command": command_line("bench.right_replies", args), **out}, started)


if __name__ == "__main__":
    main()
