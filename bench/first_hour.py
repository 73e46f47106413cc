"""The newcomer's first hour, measured: first ask, who can read what was indexed, Studio.

1. ``seekgraph ask`` on an empty data directory (the demo indexed first), and its stderr's
   first line.
2. The demo, then a Slack export (.zip) and a mailbox (.mbox) added with ``seekgraph index``:
   how many documents no workspace user can read, as the summaries say — once with the
   demo's workspace.json as it ships (nobody has a Slack handle or an address), once with
   the handles, addresses and a list's address added.
3. ``langgraph dev``: seconds until it answers ``/ok``, the first run of each graph (services
   built on first use), and a second run after an idle pause past the sources' refresh
   interval (where a blocking call used to fail it).

The Slack export and the mailbox are built here (Slack's documented export layout; RFC 4155
mbox), the same shapes as the tests'.

    python -m bench.first_hour --json bench/results/first_hour.json
"""

from __future__ import annotations

import argparse
import json
import mailbox
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from email.message import EmailMessage
from pathlib import Path

import httpx

from seekgraph.sources.ingestion.workspace import demo_workspace
from tests.processes.test_nobody_locked_out import slack_zip

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[1]
WARNING = re.compile(r"warning: (\d+) documents are readable by no workspace user")


def seekgraph(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEEKGRAPH_DATA_DIR": str(data)}
    env.pop("SEEKGRAPH_LLM_MODEL", None)
    return subprocess.run(
        [str(BIN / "seekgraph"), *args], capture_output=True, text=True, env=env, cwd=REPO
    )


def mbox(folder: Path) -> Path:
    """Three messages: to a list, to a person, and from outside to both."""
    folder.mkdir(parents=True, exist_ok=True)
    box = mailbox.mbox(folder / "inbox.mbox")
    for n, (to, subject, body) in enumerate([
        ("everyone@fernhill.example", "Parking garage closed", "Closed Friday for resurfacing."),
        ("alice@fernhill.example", "Your badge", "Your new badge is at the front desk."),
        ("everyone@fernhill.example, bob@fernhill.example", "Fire drill", "Drill at 10:00."),
    ], start=1):  # fmt: skip
        message = EmailMessage()
        message["From"] = "facilities@fernhill-landlord.example"
        message["To"] = to
        message["Subject"] = subject
        message["Date"] = f"Tue, 0{n} Nov 2026 09:00:00 +0000"
        message["Message-ID"] = f"<m{n}@fernhill-landlord.example>"
        message.set_content(body)
        box.add(message)
    box.close()
    return folder


def unreadable_after_indexing(workspace: Path, tmp: Path) -> dict[str, object]:
    data = tmp / f"data-{workspace.name}"
    first = seekgraph("ask", "How do I connect to the VPN?", "--user", "bob",
                      "--workspace", str(workspace), data=data)  # fmt: skip
    counts = {"demo": sum(int(m) for m in WARNING.findall(first.stderr))}
    for source, path, kind in [("slack", slack_zip(tmp), "messages"),
                               ("mail", mbox(tmp / "mail"), "messages")]:  # fmt: skip
        acl = [] if source == "slack" else ["--acl", "group:everyone"]
        done = seekgraph("index", str(path), "--source", source, "--kind", kind, *acl,
                         "--workspace", str(workspace), data=data)  # fmt: skip
        assert done.returncode == 0, done.stderr
        counts[source] = sum(int(m) for m in WARNING.findall(done.stderr))
        counts[f"{source}_indexed"] = int(done.stdout.split(": ")[-1].split()[0])
    listed = seekgraph("sources", "list", "--workspace", str(workspace), data=data).stdout
    return {"unreadable": counts, "sources_list": listed.strip().splitlines()}


def mapped_workspace(tmp: Path) -> Path:
    """The demo, with Slack handles, addresses and a list's address in its workspace.json."""
    root = tmp / "mapped"
    shutil.copytree(demo_workspace(), root)
    config = json.loads((root / "workspace.json").read_text())
    config["users"]["alice"].update(slack="jane.doe", email="alice@fernhill.example")
    config["users"]["bob"].update(slack="U0BMM2FEJ", email="bob@fernhill.example")
    config["groups"] = {"everyone": {"email": "everyone@fernhill.example"}}
    (root / "workspace.json").write_text(json.dumps(config, indent=1))
    return root


def studio(tmp: Path, idle: float) -> dict[str, float]:
    data = tmp / "studio"
    env = {**os.environ, "SEEKGRAPH_DATA_DIR": str(data)}
    port = 8900 + os.getpid() % 90
    started = time.perf_counter()
    proc = subprocess.Popen(
        [str(BIN / "langgraph"), "dev", "--port", str(port), "--no-browser", "--no-reload"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    out: dict[str, float] = {}
    try:
        while True:
            try:
                if httpx.get(f"{base}/ok", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        out["ok_seconds"] = round(time.perf_counter() - started, 1)
        question = {"question": "How do I connect to the VPN from a new laptop?"}
        for round_ in ("first", "after_idle"):
            for graph in ("search", "quick", "reviewed", "research"):
                if round_ == "after_idle":
                    time.sleep(idle)  # the scenario: a person reading the previous answer
                t = time.perf_counter()
                body = {"assistant_id": graph, "input": question, "context": {"user": "bob"}}
                run = httpx.post(f"{base}/runs/wait", json=body, timeout=300)
                assert "__error__" not in run.json(), (graph, run.text[:300])
                out[f"{graph}_{round_}_seconds"] = round(time.perf_counter() - t, 1)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="first-hour-"))
    data = tmp / "first"
    t = time.perf_counter()
    first = seekgraph("ask", "How do I connect to the VPN from a new laptop?", "--user", "bob",
                      data=data)  # fmt: skip
    result: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "first_ask_seconds": round(time.perf_counter() - t, 1),
        "first_ask_stderr_head": first.stderr.splitlines()[:6],
        "as_shipped": unreadable_after_indexing(demo_workspace(), tmp / "shipped"),
        "mapped": unreadable_after_indexing(mapped_workspace(tmp), tmp / "mapped-run"),
        "studio": studio(tmp, idle=6.0),
    }
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
