"""``seekgraph research``: a cited report, planned as sub-questions, progress as it goes."""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path
from typing import Any

from seekgraph.server.cli.common import CliError, knobs_of, services_and_user, settings_of


async def research_command(args: argparse.Namespace) -> int:
    """Plan (or take ``--plan``), optionally review, research, write the report."""
    from seekgraph.graph.api import AdmissionError, check_question

    settings = settings_of(args)
    try:
        request = check_question(args.question, settings.max_question_chars)
    except AdmissionError as exc:
        raise CliError(f'{exc}, e.g. seekgraph research "Everything about the VPN"') from None
    graph_input: dict[str, Any] = {"question": request}
    if args.plan:
        from seekgraph.graph.api import PlanError, checked_plan

        try:
            graph_input["plan"] = checked_plan(json.loads(Path(args.plan).read_text()))
        except (OSError, json.JSONDecodeError, PlanError) as exc:
            raise CliError(f"--plan {args.plan}: {exc}") from None
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.types import Command

    from seekgraph.graph.context import Context
    from seekgraph.graph.flows import FLOWS
    from seekgraph.graph.run import RUN_ERRORS, RunResult, run_config, stream_run

    services, _, user = services_and_user(args, settings)
    context = Context(user=user, review_before_answer=args.review, **knobs_of(args))
    if args.detach:
        if args.review:
            raise CliError("--review waits for you at the terminal; it cannot be --detach'ed")
        from seekgraph.server.cli.jobs import detach

        return await detach(settings, user, graph_input, context, args.json)
    thread = str(uuid.uuid4())
    config = run_config(thread, owner=user, flow="research")
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(settings.checkpoint_path)) as saver:
        graph = FLOWS["research"].compile(services, saver)
        step: Any = graph_input
        while True:
            result = RunResult()
            try:
                async for event in stream_run(graph, step, config, context, result, starts=False):
                    if event["event"] == "node" and not args.json:
                        print(f"[{event['node']}] {event['summary']}", file=sys.stderr)
            except RUN_ERRORS as exc:
                raise CliError(str(exc)) from None
            if not result.waiting:
                break
            asked = result.interrupts[0]["value"]
            for sub in asked["plan"]:
                after = f" (after {', '.join(sub['depends_on'])})" if sub["depends_on"] else ""
                print(f"  {sub['id']}: {sub['question']}{after}", file=sys.stderr)
            print(f"  estimate: {asked['estimate']}", file=sys.stderr)
            if asked.get("error"):
                print(f"  refused: {asked['error']}", file=sys.stderr)
            answer = input("approve this plan? [y/N] ").strip().lower()
            if answer not in ("y", "yes"):
                print("stopped before researching; nothing was run", file=sys.stderr)
                return 1
            step = Command(resume={"approve": True})
    values = result.values
    if not values.get("answer"):
        # a run stopped before its report (its wall-clock budget spent by a slow model):
        # say so, and where to look, instead of failing on the missing report
        raise CliError(
            f"the research ended without a report (thread {thread}); see where it stopped "
            f"with `seekgraph history --thread {thread} --user {user}`"
        )
    if args.out:
        Path(args.out).write_text(values["answer"])
        print(f"report written to {args.out}", file=sys.stderr)
    if args.json:
        keys = ("answer", "references", "unanswered", "mode")
        print(json.dumps({**{k: values.get(k) for k in keys}, "thread_id": thread}, indent=2))
    elif not args.out:
        print(values["answer"])
    return 0
