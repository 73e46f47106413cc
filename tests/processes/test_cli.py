"""The ``seekgraph`` command end to end, as a separate process, in extractive mode."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import RESTRICTED_MARKERS
from tests.support.processes import cli


def test_ask_prints_progress_then_the_answer_with_citations(tmp_path: Path) -> None:
    done = cli(
        "ask", "How do I set up SSO for a new application?", "--user", "bob", data_dir=tmp_path
    )
    assert done.returncode == 0, done.stderr
    progress = [line for line in done.stderr.splitlines() if line.startswith("[")]
    nodes = [line.split("]")[0][1:] for line in progress]
    # the first run's indexing has its own test: here the index is there, as on every later run
    assert nodes[0] == "prepare" and nodes[-1] == "check_answer"
    assert any("queries" in line for line in progress if line.startswith("[expand_query]"))
    assert "Answer (extractive mode):" in done.stdout
    assert "[src:kb/sso-setup-okta#" in done.stdout
    assert "Citations:" in done.stdout and "Thread: " in done.stdout


def test_the_first_ask_says_it_indexes_the_demo_before_it_does_and_the_next_one_does_not(
    tmp_path: Path,
) -> None:
    question = ("ask", "How do I connect to the VPN from a new laptop?", "--user", "bob")
    first = cli(*question, data_dir=tmp_path, fresh=True)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    assert lines[0] == "[index] indexing the demo workspace (first run only)…"
    done = [line for line in lines if line.startswith("[index] ") and "(" in line[8:20]]
    assert [line.split()[1] for line in done] == ["kb", "docs", "chat", "meetings"]
    assert "(4/4)" in done[-1]
    again = cli(*question, data_dir=tmp_path)
    assert again.returncode == 0 and "indexing" not in again.stderr


def test_json_output_and_thread_history(tmp_path: Path) -> None:
    done = cli(
        "ask", "What is the daily meal allowance?", "--user", "bob", "--json", data_dir=tmp_path
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert set(out) >= {"answer", "mode", "citations", "conflicts", "unanswered", "thread_id"}
    assert out["mode"] == "extractive" and out["status"] == "answered"
    assert {"id", "title", "source", "kind", "doc_id"} <= set(out["citations"][0])
    assert out["conflicts"]
    thread = out["thread_id"]

    again = cli(
        "ask",
        "And where do I book hotels?",
        "--user",
        "bob",
        "--thread",
        thread,
        "--json",
        data_dir=tmp_path,
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["thread_id"] == thread

    hist = cli("history", "--thread", thread, "--user", "bob", "--json", data_dir=tmp_path)
    assert hist.returncode == 0, hist.stderr
    steps = json.loads(hist.stdout)
    questions = {s["values"].get("question") for s in steps}
    assert {"What is the daily meal allowance?", "And where do I book hotels?"} <= questions
    assert any(s["values"].get("verdict") for s in steps)

    other = cli("history", "--thread", thread, "--user", "alice", data_dir=tmp_path)
    assert other.returncode == 2
    assert other.stdout == "" and "meal" not in other.stderr
    hijack = cli("ask", "hello?", "--user", "alice", "--thread", thread, data_dir=tmp_path)
    assert hijack.returncode == 2 and "no thread" in hijack.stderr


def test_restricted_question_leaves_no_trace_in_bobs_output_or_history(tmp_path: Path) -> None:
    done = cli(
        "ask",
        "Project Nightjar — penetration test findings",
        "--user",
        "bob",
        "--json",
        data_dir=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    thread = json.loads(done.stdout)["thread_id"]
    hist = cli("history", "--thread", thread, "--user", "bob", "--json", data_dir=tmp_path)
    seen = (done.stdout + done.stderr + hist.stdout + hist.stderr).lower()
    for marker in RESTRICTED_MARKERS:
        assert marker.lower() not in seen, marker


def test_bad_input_gets_one_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    cases = [
        (("ask", "vpn?", "--user", "mallory"), "unknown user 'mallory'"),
        (("ask", "   ", "--user", "bob"), "question is empty"),
        (("ask", "vpn?"), "--user NAME"),
        (
            ("ask", "vpn?", "--user", "bob", "--workspace", str(tmp_path / "nope")),
            "not a readable folder",
        ),
        (("ask", "vpn?", "--user", "bob", "--source", "wiki"), "unknown source 'wiki'"),
        # a user of one's own workspace, asked of the demo's: how to name the workspace
        (("history", "--thread", "t1", "--user", "me"), "pass --workspace DIR"),
    ]
    for args, message in cases:
        done = cli(*args, data_dir=tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        # the first run's indexing progress aside, the error is one line
        lines = [x for x in done.stderr.strip().splitlines() if not x.startswith("[index] ")]
        assert len(lines) == 1 and message in lines[0], (args, done.stderr)
    # asked for JSON, a script reading stdout gets one JSON object saying what to fix
    done = cli("ask", "vpn?", "--user", "mallory", "--json", data_dir=tmp_path)
    assert done.returncode == 2
    refused = json.loads(done.stdout)
    assert refused["status"] == "error" and "unknown user 'mallory'" in refused["error"]
    # and so does an option the command does not have
    done = cli("ask", "vpn?", "--user", "bob", "--search-k", "3", "--json", data_dir=tmp_path)
    assert done.returncode == 2
    refused = json.loads(done.stdout)
    assert refused["status"] == "error" and "--search-k" in refused["error"], done.stdout


def test_run_commands_say_when_the_servers_redis_does_not_answer(
    tmp_path: Path, monkeypatch
) -> None:
    # nothing listens on port 1; the URL's password is never repeated
    monkeypatch.setenv("SEEKGRAPH_REDIS_URL", "redis://ops:s3cret-pw@127.0.0.1:1/0")
    for args in (("runs", "list", "t1"), ("runs", "cancel", "t1", "r1"), ("admin", "storage")):
        done = cli(*args, data_dir=tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        [line] = done.stderr.strip().splitlines()  # one line, no traceback
        assert "Redis at 127.0.0.1:1 (SEEKGRAPH_REDIS_URL) does not answer" in line, line
        assert "s3cret-pw" not in done.stderr + done.stdout


def test_run_commands_say_when_the_servers_redis_refuses_the_password(
    tmp_path: Path, monkeypatch
) -> None:
    # a server on loopback that refuses every AUTH, as a Redis does a wrong password
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def refuse() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                while conn.recv(4096):
                    conn.sendall(b"-WRONGPASS invalid username-password pair\r\n")

    threading.Thread(target=refuse, daemon=True).start()
    monkeypatch.setenv("SEEKGRAPH_REDIS_URL", f"redis://ops:s3cret-pw@127.0.0.1:{port}/0")
    try:
        done = cli("runs", "list", "t1", data_dir=tmp_path)
    finally:
        server.close()
    assert done.returncode == 2, done.stderr
    assert f"Redis at 127.0.0.1:{port} refused the credentials" in done.stderr, done.stderr
    assert "s3cret-pw" not in done.stderr + done.stdout


def test_keys_add_refuses_an_unknown_user_and_says_where_the_file_goes(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    unknown = cli("keys", "add", "--user", "mallory", "--file", str(keys), data_dir=tmp_path)
    assert unknown.returncode == 2 and "unknown user 'mallory' (users here: alice, bob)" in (
        unknown.stderr
    )
    assert not keys.exists()
    added = cli("keys", "add", "--user", "bob", "--file", str(keys), data_dir=tmp_path)
    assert added.returncode == 0 and added.stdout.startswith("sg_")
    assert f"SEEKGRAPH_API_KEYS_FILE={keys.resolve()}" in added.stderr
    assert "bob" in keys.read_text()


def test_help_and_input_errors_answer_without_loading_the_graph() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, server.cli.main as c\n"
        "try:\n    c.main(['ask', '   '])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('langgraph', 'langchain_core', 'onnxruntime', 'openai') "
        "if m in sys.modules]\n"
        "print(heavy)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    assert "the question is empty" in done.stderr


def test_an_added_source_can_be_listed_and_removed(tmp_path: Path) -> None:
    folder = tmp_path / "handbook"
    folder.mkdir()
    (folder / "parking.md").write_text("Visitors park on level minus two, bay 14.\n")
    (folder / "_build").mkdir()  # the site built from it: the same pages again, not read
    (folder / "_build" / "parking.html").write_text("<p>Visitors park on level minus two.</p>")
    added = cli(
        "index", str(folder), "--source", "handbook", "--kind", "docs", "--acl", "group:everyone",
        data_dir=tmp_path,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    # added to the bundled demo: the person is told its sources are searched too, and how not
    assert "added to the bundled demo workspace" in added.stderr
    assert "(kb, docs, chat, meetings)" in added.stderr and "--source handbook" in added.stderr
    assert "handbook: 1 document indexed" in added.stdout
    assert "not read: 1 folders of build output, templates or tools (_build)" in added.stdout
    listed = cli("sources", "list", data_dir=tmp_path)
    assert "kb\tkb\tworkspace" in listed.stdout and f"handbook\tdocs\tadded from {folder}" in (
        listed.stdout
    )
    found = cli("ask", "Where do visitors park?", "--user", "bob", "--json", data_dir=tmp_path)
    assert "handbook/parking" in found.stdout
    workspace_source = cli("sources", "remove", "kb", data_dir=tmp_path)
    assert workspace_source.returncode == 2 and "workspace.json" in workspace_source.stderr
    removed = cli("sources", "remove", "handbook", data_dir=tmp_path)
    assert removed.returncode == 0 and "handbook: removed with its 1 document" in removed.stdout
    gone = cli("ask", "Where do visitors park?", "--user", "bob", "--source", "handbook",
               data_dir=tmp_path)  # fmt: skip
    assert gone.returncode == 2 and "unknown source 'handbook'" in gone.stderr


def test_the_demo_index_is_the_same_file_for_every_install(tmp_path: Path) -> None:
    import hashlib

    from seekgraph.server.bootstrap import index_path
    from seekgraph.server.settings import Settings
    from seekgraph.sources.ingestion.workspace import demo_workspace

    settings = Settings(data_dir=tmp_path)
    demo = demo_workspace().resolve()
    # an index kept under the old name (keyed by this install's path) is carried over
    old_key = hashlib.sha256(str(demo).encode()).hexdigest()[:16]
    old = tmp_path / "indexes" / f"{old_key}.sqlite"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"an index with sources added to it")
    path = index_path(settings, demo)
    assert path.name == "demo.sqlite" and path.read_bytes().startswith(b"an index")
    assert not old.exists()
    assert index_path(settings, tmp_path / "mine") != index_path(settings, tmp_path / "other")


def test_answers_over_hard_wrapped_markdown_quote_whole_clean_sentences(tmp_path: Path) -> None:
    docs = tmp_path / "api"
    docs.mkdir()
    (docs / "path.md").write_text(
        "# Path\n\n<!-- YAML\nadded: v0.1.16\n-->\n\n## path.join([...paths])\n\n"
        "The `path.join()` method joins all given `path` segments together using the\n"
        "platform-specific separator as a delimiter, then normalizes the resulting\n"
        "path. See the [path docs][] for more.\n\n"
        "```js\npath.join('/foo', 'bar', 'baz/asdf', 'quux', '..');\n```\n\n"
        "[path docs]: https://nodejs.org/api/path.html\n"
    )
    added = cli(
        "index", str(docs), "--source", "api", "--kind", "docs", "--acl", "group:everyone",
        data_dir=tmp_path,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    done = cli(
        "ask", "What does path.join do with the path segments?", "--user", "bob", "--json",
        "--source", "api", data_dir=tmp_path,
    )  # fmt: skip
    answer = json.loads(done.stdout)["answer"]
    assert (
        "The `path.join()` method joins all given `path` segments together using the "
        "platform-specific separator as a delimiter, then normalizes the resulting path."
    ) in answer
    for junk in ("<!--", "YAML", "[path docs]", "using the\n"):
        assert junk not in answer, junk
    # the example the sentence comes with is shown whole, or not at all
    assert answer.count("```") % 2 == 0


def test_research_writes_a_cited_report_and_refuses_a_cyclic_plan(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    done = cli(
        "research", "Everything about the VPN and single sign-on", "--user", "bob",
        "--out", str(out), data_dir=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "[plan_research]" in done.stderr and "[check_report]" in done.stderr
    report = out.read_text()
    assert report.startswith("# Everything about the VPN") and "## Contents" in report
    assert "[1]: " in report and "[src:" in report
    assert not [m for m in RESTRICTED_MARKERS if m in report + done.stderr]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"id": "a", "question": "x", "depends_on": ["b"]},
                                {"id": "b", "question": "y", "depends_on": ["a"]}]))  # fmt: skip
    refused = cli("research", "x", "--user", "bob", "--plan", str(plan), data_dir=tmp_path)
    assert refused.returncode == 2 and "the plan has a cycle: " in refused.stderr
