"""The ``seekgraph`` command line: ask a question, show a thread's history, draw the graph."""

from __future__ import annotations

import argparse
import asyncio
import difflib
import functools
import json
import sys
from collections.abc import Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, NoReturn

from seekgraph.server.cli.common import (
    CliError,
    add_knobs,
    knobs_of,
    services_and_user,
    settings_of,
)
from seekgraph.server.settings import Settings
from seekgraph.server.thread_ids import BadThreadIdError, canonical_thread_id, new_thread_id

if TYPE_CHECKING:  # the heavy imports happen where they are used: --help answers at once
    from langgraph.graph.state import CompiledStateGraph

    from seekgraph.nodes.plumbing.services import Services


def thread_arg(value: str) -> str:
    """``--thread``: a thread id in its canonical form (argparse says what is wrong)."""
    try:
        return canonical_thread_id(value)
    except BadThreadIdError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _Parser(argparse.ArgumentParser):
    """argparse's parser; a mistake in a command run with ``--json`` is a JSON error too."""

    def __init__(self, *args: Any, argv: Sequence[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.argv = argv

    def add_subparsers(self, **kwargs: Any) -> Any:
        kwargs.setdefault("parser_class", functools.partial(_Parser, argv=self.argv))
        return super().add_subparsers(**kwargs)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: None = None
    ) -> argparse.Namespace:
        """Parse; an option the command does not have is refused by the command's parser.

        So its usage is the command's, not the top level's, and the error names the command's
        closest option: ``ask … --workspce DIR`` → "did you mean --workspace for --workspce?".
        """
        parsed: argparse.Namespace
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self._command_parser(parsed)
            command.error(_unrecognized(extras, command))
        return parsed

    def _command_parser(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
                if isinstance(chosen, _Parser):
                    return chosen._command_parser(parsed)
        return self

    def error(self, message: str) -> NoReturn:
        argv = sys.argv[1:] if self.argv is None else self.argv
        if "--json" in argv:  # a script reading stdout gets one JSON object, as for any error
            error = f"{self.prog}: {message} (see {self.prog} --help)"
            print(json.dumps({"status": "error", "error": error}, ensure_ascii=False))
        super().error(message)


def _unrecognized(extras: list[str], parser: argparse.ArgumentParser) -> str:
    """The "unrecognized arguments" error, with the option of ``parser`` closest to each."""
    options = {name.lstrip("-"): name for a in parser._actions for name in a.option_strings}
    hints, misplaced = [], []
    for extra in extras:
        if extra.startswith("--"):
            typed = extra.split("=", 1)[0]
            if typed in options.values():  # the command's own option, typed before its name
                misplaced.append(typed)
                continue
            close = difflib.get_close_matches(typed.lstrip("-"), options, n=1, cutoff=0.75)
            hints += [f"{options[close[0]]} for {typed}" for _ in close]
    said = "unrecognized arguments: " + " ".join(extras)
    if misplaced:
        names = " ".join(misplaced)
        return f"{said} ({names} goes after the command: {parser.prog} {names} …)"
    return f"{said} (did you mean {', '.join(hints)}?)" if hints else said


def _parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="seekgraph", description="Ask questions over every source you may see.", argv=argv
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask", help="answer a question with citations")
    ask.add_argument("question")
    ask.add_argument("--user", help="who is asking (permissions follow this user)")
    ask.add_argument(
        "--thread",
        type=thread_arg,
        help="continue this thread (a new one is created otherwise)",
    )
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    add_knobs(ask, skip=("review_before_answer",))  # --mode, --source, --model, --max-rounds
    ask.add_argument("--workspace", help="workspace folder (default: the bundled demo)")
    history = sub.add_parser("history", help="print the state after every node of a thread")
    history.add_argument("--thread", required=True, type=thread_arg)
    history.add_argument("--user")
    history.add_argument("--json", action="store_true")
    history.add_argument("--workspace")
    research = sub.add_parser("research", help="write a cited report, planned as sub-questions")
    research.add_argument("question", help="what the report is about")
    research.add_argument("--user", help="who is asking (permissions follow this user)")
    research.add_argument("--plan", help="your own plan: a JSON list of sub-questions")
    research.add_argument("--review", action="store_true", help="approve the plan first")
    research.add_argument("--out", help="write the report (Markdown) to this file")
    research.add_argument("--json", action="store_true", help="print one JSON object")
    research.add_argument(
        "--detach",
        action="store_true",
        help="queue it for the server's workers and return (needs SEEKGRAPH_REDIS_URL)",
    )
    research.add_argument("--workspace", help="workspace folder (default: the bundled demo)")
    add_knobs(research, skip=("review_before_answer",))
    sub.add_parser("diagram", help="print the search graph as a Mermaid diagram")
    index = sub.add_parser("index", help="index a folder as a source (only what changed)")
    index.add_argument(
        "path",
        help="a folder (Markdown, MDX, reStructuredText, HTML, text, PDF, Word, PowerPoint, "
        "Excel, CSV, e-mail, chat exports, transcripts) or a Slack export (folder or .zip)",
    )
    index.add_argument("--source", required=True, help="name of the source")
    index.add_argument("--kind", required=True, choices=["kb", "docs", "messages", "notes"])
    index.add_argument(
        "--acl",
        action="append",
        default=[],
        help="who may read it: user:NAME or group:NAME (repeatable)",
    )
    index.add_argument("--workspace", help="workspace folder (default: the bundled demo)")
    index.add_argument(
        "--detach",
        action="store_true",
        help="read here, queue the embedding for `seekgraph worker` processes and return "
        "(needs SEEKGRAPH_REDIS_URL and SEEKGRAPH_INDEX_BACKEND=redis)",
    )
    ingest = sub.add_parser("ingest", help="ingest jobs queued by index --detach: list, show")
    ingest_sub = ingest.add_subparsers(dest="ingest_command", required=True)
    ingest_list = ingest_sub.add_parser("list", help="the newest jobs and their progress")
    ingest_list.add_argument("--limit", type=int, default=20)
    ingest_show = ingest_sub.add_parser("show", help="one job: status, batches, workers, counts")
    ingest_show.add_argument("job_id")
    sources = sub.add_parser("sources", help="list the sources, or remove one added by index")
    sources.add_argument("action", nargs="?", default="list", choices=["list", "remove"])
    sources.add_argument("name", nargs="?", help="the source to remove")
    sources.add_argument("--workspace", help="workspace folder (default: the bundled demo)")
    serve = sub.add_parser("serve", help="run the HTTP server (SSE streaming, resumable runs)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    serve.add_argument(
        "--no-worker",
        action="store_true",
        help="serve the doors only: runs go to `seekgraph worker` processes (needs Redis)",
    )
    worker = sub.add_parser("worker", help="execute queued runs (needs SEEKGRAPH_REDIS_URL)")
    worker.add_argument(
        "--concurrency", type=int, help="runs at once (SEEKGRAPH_WORKER_CONCURRENCY)"
    )
    worker.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    mcp = sub.add_parser("mcp", help="serve seekgraph's tools over MCP on stdio")
    who = mcp.add_mutually_exclusive_group()
    who.add_argument("--user", help="act as this user (default: SEEKGRAPH_USER)")
    who.add_argument("--key", help="act as the user of this API key (SEEKGRAPH_API_KEYS_FILE)")
    mcp.add_argument("--workspace", help="workspace folder (default: the bundled demo)")
    audit = sub.add_parser("audit", help="who was shown which documents (the audit trail)")
    audit.add_argument("--user", help="only this user's entries")
    audit.add_argument("--doc", help="only entries that showed this document id")
    audit.add_argument("--since", help="24h, 7d, an ISO date or time (UTC), or epoch seconds")
    audit.add_argument("--limit", type=int, default=1000, help="the newest N (default 1000)")
    audit.add_argument("--usage", action="store_true", help="runs, tokens, cost per user a day")
    audit.add_argument("--json", action="store_true")
    sync = sub.add_parser("sync", help="sync the live connectors now (documents, permissions)")
    sync.add_argument("--workspace", help="workspace folder (default: the bundled demo)")
    connect = sub.add_parser(
        "connect", help="check the live connectors: what each sees and whom it knows (no index)"
    )
    connect.add_argument("name", nargs="?", help="one connector (default: every configured one)")
    connect.add_argument("--workspace", help="workspace folder (default: the bundled demo)")
    runs = sub.add_parser("runs", help="server runs: list, cancel, show (the audit trail)")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True)
    listing = runs_sub.add_parser("list", help="a thread's runs and how they stand (Redis)")
    listing.add_argument("thread_id")
    listing.add_argument("--json", action="store_true")
    stop = runs_sub.add_parser("cancel", help="stop a run at its next step, wherever it runs")
    stop.add_argument("thread_id")
    stop.add_argument("run_id")
    stop.add_argument("--rollback", action="store_true", help="also undo what it saved")
    show = runs_sub.add_parser("show", help="a run's user, door, status, documents and cost")
    show.add_argument("run_id")
    show.add_argument("--json", action="store_true")
    from seekgraph.server.cli.storage import add_admin_parser

    add_admin_parser(sub)
    keys = sub.add_parser("keys", help="manage API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    add = keys_sub.add_parser("add", help="create an API key for a user (printed once)")
    add.add_argument("--user", required=True)
    add.add_argument("--file", help="keys file (default: SEEKGRAPH_API_KEYS_FILE)")
    add.add_argument("--redis", action="store_true", help="store in Redis (SEEKGRAPH_REDIS_URL)")
    add.add_argument("--workspace", help="workspace whose users may get keys (default: the demo)")
    return parser


@asynccontextmanager
async def _compiled(settings: Settings, services: Services) -> Any:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from seekgraph.graph.search import search_flow

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(settings.checkpoint_path)) as saver:
        yield search_flow(services, saver)


async def _owner(graph: CompiledStateGraph[Any, Any, Any, Any], thread: str) -> str | None:  # noqa: F821
    snapshot = await graph.aget_state({"configurable": {"thread_id": thread}})
    if not snapshot.values:
        return None
    return str(snapshot.metadata.get("owner")) if snapshot.metadata else None


def _print_event(event: Mapping[str, Any]) -> None:
    if event.get("event") == "node":
        print(f"[{event['node']}] {event['summary']}", file=sys.stderr, flush=True)
    elif event.get("event") == "error":
        print(f"[{event['node']}] error: {event['message']}", file=sys.stderr, flush=True)
    elif event.get("event") == "sources" and event.get("outbound"):  # what left for the web
        found = len(event["titles"])
        print(
            f"→ {event['source']}: {event['query']} ({found} results)", file=sys.stderr, flush=True
        )


async def ask(args: argparse.Namespace) -> int:
    """Run the search graph for one question and print the answer."""
    from seekgraph.graph.api import AdmissionError, admit, check_question

    settings = settings_of(args)
    try:
        check_question(args.question, settings.max_question_chars)
    except AdmissionError as exc:
        raise CliError(f'{exc}, e.g. seekgraph ask "How do I…?"') from None
    services, report, user = services_and_user(args, settings)  # (before the graph loads)
    from seekgraph.graph.context import Context
    from seekgraph.graph.run import RUN_ERRORS, RunResult, run_config, stream_run

    context = Context(user=user, **knobs_of(args))
    try:
        question = admit(services, context, args.question, has_images=False).question
    except AdmissionError as exc:
        raise CliError(str(exc)) from None
    if report and report.indexed and not args.json:
        print(
            f"[index] {report.indexed} documents, {report.chunks} chunks indexed in "
            f"{report.seconds:.1f} s",
            file=sys.stderr,
        )
    thread = args.thread or new_thread_id()
    config = run_config(thread, owner=user)
    async with _compiled(settings, services) as graph:
        if args.thread:
            owner = await _owner(graph, thread)
            if owner is not None and owner != user:
                raise CliError(f"no thread {thread!r} for user {user!r}")
        result = RunResult()
        try:
            async for event in stream_run(
                graph, {"question": question}, config, context, result, starts=False
            ):
                if not args.json:
                    _print_event(event)
        except RUN_ERRORS as exc:
            raise CliError(str(exc)) from None
    _print_answer(result.values, thread, args.json)
    return 0


def _print_answer(values: dict[str, Any], thread: str, as_json: bool) -> None:
    from seekgraph.graph.api import ANSWER_KEYS, KIND_LABELS, conflict_lines

    citations = values.get("citations", [])
    if as_json:  # the answer event's keys (state/events.py), citations without their snippets
        out = {k: values.get(k) for k in ANSWER_KEYS} | {
            "citations": [
                {k: c[k] for k in ("id", "title", "source", "kind", "doc_id", "url", "updated_at")}
                for c in citations
            ],
            "thread_id": thread,
        }
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return
    print(f"\nAnswer ({values.get('mode')} mode):\n")
    print(values.get("answer", ""))
    for line in conflict_lines(values.get("conflicts", [])):
        print(f"\n{line}")
    if citations:
        print("\nCitations:")
        for c in citations:
            tier = KIND_LABELS.get(c["kind"], c["kind"])
            when = (c.get("updated_at") or "")[:10]
            url = f" <{c['url']}>" if c.get("url") else ""
            print(
                f"  [src:{c['id']}] {c['title']} — {c['source']} "
                f"({tier}{', ' + when if when else ''}){url}"
            )
        print("\nSources: " + ", ".join(dict.fromkeys(c["source"] for c in citations)))
    print(f"\nThread: {thread} (continue with --thread {thread})")


async def history(args: argparse.Namespace) -> int:
    """Print the checkpointed state after every node of a thread, oldest first."""
    from seekgraph.graph.inspect import steps_of
    from seekgraph.graph.visibility import visible_graph

    settings = settings_of(args)
    services, _, user = services_and_user(args, settings)
    async with _compiled(settings, services) as graph:
        owner = await _owner(graph, args.thread)
        if owner != user:
            raise CliError(f"no thread {args.thread!r} for user {user!r}")
        steps = await steps_of(visible_graph(graph, services.registry, user), args.thread)
    records: list[dict[str, Any]] = []
    for snap, wrote in steps:
        record = {
            "step": (snap.metadata or {}).get("step"),
            "node": ", ".join(wrote),
            "next": list(snap.next),
            "created_at": snap.created_at,
            "values": _summarise(snap.values, passages=args.json),
        }
        records.append(record)
    if args.json:
        print(json.dumps(records, ensure_ascii=False, indent=2, default=str))
        return 0
    for r in records:
        print(
            f"step {r['step']} after {r['node'] or 'input'}: next {', '.join(r['next']) or 'END'}"
        )
        for key, value in r["values"].items():
            print(f"    {key}: {value}")
    return 0


def _summarise(values: dict[str, Any], passages: bool = False) -> dict[str, Any]:
    """A step's state as ``history`` shows it; with ``passages``, each passage's text too."""
    out: dict[str, Any] = {}
    for key in ("question", "mode", "variants", "verdict", "documents_read", "answer_check"):
        if key in values:
            out[key] = values[key]
    if "evidence" in values:
        out["evidence"] = [
            {"id": e["source_id"], "kept_by": e["kept_by"], "scores": e["scores"]}
            | ({"title": e["title"], "text": e["snippet"]} if passages else {})
            for e in values["evidence"]
        ]
    if values.get("filter_log"):  # each round's hits a filter stage dropped, and why
        out["filter_log"] = values["filter_log"]
    if "budget" in values:
        b = values["budget"]
        out["budget"] = {k: b[k] for k in ("rounds", "tokens_used", "bad_attempts")}
    if values.get("answer"):
        out["answer"] = values["answer"]
    if values.get("source_failures"):
        out["source_failures"] = values["source_failures"]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``seekgraph`` console script."""
    from seekgraph.server.cli.admin import add_key, index_folder, manage_sources

    args = _parser(argv).parse_args(argv)
    try:
        if args.command == "ask":
            return asyncio.run(ask(args))
        if args.command == "research":
            from seekgraph.server.cli.research import research_command

            return asyncio.run(research_command(args))
        if args.command == "history":
            return asyncio.run(history(args))
        if args.command == "index":
            return index_folder(args)
        if args.command == "sources":
            return manage_sources(args)
        if args.command == "ingest":
            from seekgraph.server.cli.admin import ingest_command

            return ingest_command(args)
        if args.command == "serve":
            from seekgraph.server.cli.serve import serve

            return serve(args)
        if args.command == "worker":
            from seekgraph.server.cli.worker import worker_command

            return asyncio.run(worker_command(args))
        if args.command == "keys":
            return add_key(args)
        if args.command == "sync":
            from seekgraph.server.cli.admin import sync_connectors

            return sync_connectors(args)
        if args.command == "connect":
            from seekgraph.server.cli.admin import check_connectors

            return check_connectors(args)
        if args.command == "runs" and args.runs_command in ("list", "cancel"):
            from seekgraph.server.cli.run_records import runs_cancel, runs_list

            command = runs_list if args.runs_command == "list" else runs_cancel
            return asyncio.run(command(args, Settings()))
        if args.command in ("audit", "runs"):
            from seekgraph.server.cli.ops import audit_command, runs_show

            return asyncio.run(audit_command(args) if args.command == "audit" else runs_show(args))
        if args.command == "admin":
            from seekgraph.server.cli.storage import storage_command

            return asyncio.run(storage_command(args, Settings()))
        if args.command == "mcp":
            from seekgraph.server.cli.serve import serve_mcp_stdio

            return asyncio.run(serve_mcp_stdio(args))
        from seekgraph.graph.search import build_search_graph

        print(build_search_graph(None).compile().get_graph().draw_mermaid())
        return 0
    except CliError as exc:
        print(f"seekgraph: {exc}", file=sys.stderr)
        if getattr(args, "json", False):  # a script reading stdout gets one JSON object too
            print(json.dumps({"status": "error", "error": str(exc)}, ensure_ascii=False))
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
