"""``integrate`` alone on a real model over the extractive run's evidence, the raw reply kept.

    SEEKGRAPH_LLM_BASE_URL=… SEEKGRAPH_LLM_MODEL=qwen1.5b SEEKGRAPH_LLM_JSON_MODE=json_object \\
    python -m bench.integrate_replay bench/data/answers_heldout all after.json
    REPLAY=after.json PYTHONPATH=<a worktree of the earlier code> \\
    python -m bench.integrate_replay bench/data/answers_heldout all before.json

The paraphrase sets work too (``bench/data/paraphrase``, ``paraphrase_chat``; a ``half``
such as ``tune`` in place of ids takes that half): a question over the demo workspace is
searched there as its user, and judged as ``bench.paraphrase`` judges it.

Each question is searched in extractive mode; then ``integrate`` runs once in LLM mode on
that state and the model's raw reply is recorded with the outcome (shown, or why not). With
``REPLAY`` set to an earlier output, the recorded replies are played back instead of asking
the model: the same replies judged by another version of the code, a paired comparison of
the answer guards without the model's run-to-run noise. ``passed`` is meaningful for shown
answers only (a fallback's quotes are judged without their citations).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from bench.answers import SOURCE, build
from bench.answers import judge as judge_answers
from bench.paraphrase import demo_runner
from bench.paraphrase import judge as judge_paraphrase
from bench.runner import index_runner
from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.prompting import cited_ids, repair_citations
from seekgraph.nodes.reader import model as model_reader
from seekgraph.nodes.search import integrate as integrate_module
from seekgraph.server.bootstrap import configured_chat
from seekgraph.server.settings import Settings
from seekgraph.sources.base import User
from seekgraph.sources.indexes.index_source import EmbeddedSource

_RAW: dict[str, str] = {}
_REPLAY: dict[str, str] | None = (
    {r["_id"]: r["raw"] for r in json.loads(Path(os.environ["REPLAY"]).read_text())}
    if os.environ.get("REPLAY")
    else None
)
_stream = model_reader.stream_reply


async def _recorded(*args: Any, **kwargs: Any) -> tuple[str, int, str, str]:
    if _REPLAY is not None:
        body, tokens, served, finish = _REPLAY[_RAW["_id"]], 1, "replayed", "stop"
    else:
        body, tokens, served, finish = await _stream(*args, **kwargs)
    _RAW["body"] = body
    return body, tokens, served, finish


async def main(data: Path, ids: list[str], out_path: Path) -> None:
    model_reader.stream_reply = _recorded  # type: ignore[assignment]
    qs = [json.loads(line) for line in (data / "questions.jsonl").open() if line.strip()]
    qs = [q for q in qs if ids == ["all"] or q["_id"] in ids or q.get("half") in ids]
    if _REPLAY is not None:
        qs = [q for q in qs if q["_id"] in _REPLAY]
    settings = Settings()
    chat, _ = configured_chat(settings)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        index, _ = build(data, "minilm", Path(tmp))
        reader = User("bench", frozenset({"everyone"}))
        docs = index_runner(index, EmbeddedSource(index, SOURCE, "docs"), [reader])
        demo = demo_runner(Path(tmp)) if any(q.get("corpus") == "demo" for q in qs) else None
        for q in qs:
            runner, user = (demo, q["user"]) if q.get("corpus") == "demo" else (docs, reader.name)
            assert runner is not None
            judge = judge_paraphrase if "must" in q else judge_answers
            services = dataclasses.replace(
                runner.services, chat_model=chat, model_name=settings.llm_model
            )
            values, _ = await runner.run_graph(q["question"], user, mode="extractive")
            state = {**values, "mode": "llm", "model": settings.llm_model}
            started = time.perf_counter()
            _RAW.clear()
            _RAW["_id"] = q["_id"]
            runtime = Runtime(context=Context(user=user), stream_writer=lambda _: None)
            update = await integrate_module.integrate(state, runtime, services)  # type: ignore[arg-type]
            calls = [c for c in update.get("model_calls", []) if c["node"] == "integrate"]
            answer = update.get("answer", "")
            body = _RAW.get("body", "")
            known = {e["source_id"] for e in values["evidence"]}
            record = {
                "_id": q["_id"],
                "s": round(time.perf_counter() - started, 1),
                "uncited_reply": not cited_ids(repair_citations(body, known)),
                "outcome": calls[0]["outcome"] if calls else None,
                "detail": calls[0]["detail"][:300] if calls else "",
                "passed": judge(q, {"answer": answer})["passed"],
                "extractive_passed": judge(q, values)["passed"],
                "answerable": q.get("doc", True) is not None,
                "raw": body,
                "answer": answer,
            }
            print(json.dumps(record), flush=True)
            out.append(record)
    out_path.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2].split(","), Path(sys.argv[3])))
