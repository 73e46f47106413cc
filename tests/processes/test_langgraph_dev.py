"""LangGraph Studio's server (``langgraph dev``) loads the graphs and completes their runs."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from seekgraph.sources.registry import SourceRegistry
from tests.support import BIN, REPO, RESTRICTED_MARKERS
from tests.support.processes import free_port
from tests.support.waiting import wait_until


def dev_up(proc: subprocess.Popen[bytes], base: str, tmp_path: Path) -> bool:
    """``langgraph dev`` answers ``/ok`` (it fails at once if the process ended)."""
    try:
        return httpx.get(f"{base}/ok", timeout=2).status_code == 200
    except httpx.TransportError:
        assert proc.poll() is None, (tmp_path / "dev.log").read_text()[-3000:]
        return False


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One ``langgraph dev`` for this module's tests: its base URL and its log."""
    tmp = tmp_path_factory.mktemp("studio")
    with langgraph_dev(tmp) as base:
        yield base, tmp / "dev.log"


def test_langgraph_dev_serves_the_search_graph(studio: tuple[str, Path]) -> None:
    base, _ = studio
    assistants = httpx.post(f"{base}/assistants/search", json={}, timeout=10).json()
    assert "search" in {a["graph_id"] for a in assistants}
    run = httpx.post(
        f"{base}/runs/wait",
        json={
            "assistant_id": "search",
            "input": {"question": "How do I set up SSO for a new application?"},
            "context": {"user": "alice"},
        },
        timeout=120,
    )
    assert run.status_code == 200, run.text
    out = run.json()
    assert out["mode"] == "extractive"
    assert any(c["doc_id"] == "kb/sso-setup-okta" for c in out["citations"])
    # no user in the context: langgraph.json's development default, the demo's bob
    default = httpx.post(
        f"{base}/runs/wait",
        json={
            "assistant_id": "search",
            "input": {"question": "What did the Project Nightjar penetration test find?"},
        },
        timeout=120,
    )
    assert default.status_code == 200, default.text
    assert default.json()["mode"] == "extractive"
    assert not [m for m in RESTRICTED_MARKERS if m in default.text]
    # the example flows: one round then the answer; a pause for a person's review
    question = {"question": "How do I connect to the VPN from a new laptop?"}
    quick = httpx.post(
        f"{base}/runs/wait", json={"assistant_id": "quick", "input": question}, timeout=120
    )
    assert "vpn2.fernhill.example" in quick.json()["answer"]
    reviewed = httpx.post(
        f"{base}/runs/wait", json={"assistant_id": "reviewed", "input": question}, timeout=120
    )
    [pause] = reviewed.json()["__interrupt__"]
    assert pause["value"]["evidence"] and "answer" not in reviewed.json()
    # the research flow: its plan review is an interrupt Studio shows; an edit resumes it
    thread = httpx.post(f"{base}/threads", json={}, timeout=10).json()["thread_id"]
    asked = httpx.post(
        f"{base}/threads/{thread}/runs/wait",
        json={
            "assistant_id": "research",
            "input": {"question": "Everything about the VPN and single sign-on"},
            "context": {"user": "bob", "review_before_answer": True},
        },
        timeout=180,
    ).json()
    [review] = asked["__interrupt__"]
    assert review["value"]["plan"] and review["value"]["estimate"]["sub_questions"]
    edit = [{"id": "vpn", "question": "How do I connect to the VPN from a new laptop?"}]
    report = httpx.post(
        f"{base}/threads/{thread}/runs/wait",
        json={
            "assistant_id": "research",
            "command": {"resume": {"plan": edit}},
            "context": {"user": "bob", "review_before_answer": True},
        },
        timeout=180,
    ).json()
    assert "vpn2.fernhill.example" in report["answer"] and report["references"]
    state = httpx.get(f"{base}/threads/{thread}/state", timeout=10).json()["values"]
    assert list(state["results"]) == ["vpn"] and state["plan_status"] == "approved"
    assert not [m for m in RESTRICTED_MARKERS if m in json.dumps([asked, report, state])]


@contextmanager
def langgraph_dev(tmp_path: Path) -> Iterator[str]:
    """``langgraph dev`` as Studio starts it (blocking-call detection on); its base URL."""
    port = free_port()
    env = {**os.environ, "SEEKGRAPH_DATA_DIR": str(tmp_path)}
    env.pop("LANGGRAPH_ALLOW_BLOCKING", None)
    log = open(tmp_path / "dev.log", "w")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(
        [str(BIN / "langgraph"), "dev", "--port", str(port), "--no-browser", "--no-reload"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: dev_up(proc, base, tmp_path), timeout=90, what="langgraph dev")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def idle_past(since: float, seconds: float) -> None:
    """Wait until ``seconds`` have passed since ``since``: time passing is the scenario (an
    idle server), not a stand-in for a condition."""
    time.sleep(max(0.0, since + seconds - time.monotonic()))


def test_every_flow_runs_in_studio_after_an_idle_pause(studio: tuple[str, Path]) -> None:
    """Each of the four graphs, run again a few seconds after the one before, no blocking call.

    ``langgraph dev`` refuses a blocking call in the event loop (blockbuster). A graph's first
    run after start passed; the next one, after the server sat idle past the registry's
    refresh interval, failed with ``BlockingError`` (the sources' refresh read SQLite in the
    loop). So every graph runs once, then again after that interval, as a person in Studio.
    """
    idle = SourceRegistry().refresh_seconds + 1
    question = {"question": "How do I connect to the VPN from a new laptop?"}
    base, log_path = studio
    with get_sync_client(url=base) as client:
        graphs = {a["graph_id"] for a in client.assistants.search()}
        assert graphs == {"search", "quick", "reviewed", "research"}
        outputs: dict[str, Any] = {}
        for graph in ["search", "quick", "reviewed", "research"]:  # each graph loaded
            thread = client.threads.create()["thread_id"]
            outputs[graph] = client.runs.wait(
                thread, graph, input=question, context={"user": "bob"}, raise_error=False
            )
            assert "__error__" not in outputs[graph], (graph, outputs[graph])
        last = time.monotonic()
        for graph in ["search", "quick", "reviewed", "research"]:
            idle_past(last, idle)
            thread = client.threads.create()["thread_id"]
            outputs[graph] = client.runs.wait(
                thread, graph, input=question, context={"user": "bob"}, raise_error=False
            )
            last = time.monotonic()
            assert "__error__" not in outputs[graph], (graph, outputs[graph])
        log = log_path.read_text()
        assert "BlockingError" not in log, log[-3000:]
    for graph in ["search", "quick"]:
        assert "vpn2.fernhill.example" in outputs[graph]["answer"], outputs[graph]
    [pause] = outputs["reviewed"]["__interrupt__"]
    assert pause["value"]["evidence"]
    assert "vpn2.fernhill.example" in outputs["research"]["answer"]
    assert outputs["research"]["references"]
