"""The long campaigns as scripted, at a size CI can afford; their full size is the benchmark.

- ``python -m bench.faults``: permission canaries on four of the sixteen questions (each
  asked by bob and by alice), SIGKILL trials at three of the twelve kill points (before the
  search, between its stages, as the answer is written; a kill while tokens stream is
  ``tests/processes/test_server.py``'s), and the bad files. Its other parts each have one
  focused test in ``tests/processes``, so CI runs them there, not twice: pause trials, Redis
  restarted empty, the bad-input corpus and the short lock TTL under load
  (``test_faults.py``), the ownership attacks (``test_ownership.py``). ``python -m
  bench.faults`` runs every part at full size; its numbers are in
  ``bench/results/faults.json``.
- ``python -m bench.jobs``: in ``test_jobs_soak.py`` (a module of its own: CI hands whole
  modules to its workers, and each campaign keeps one busy for a minute or more).
- ``python -m bench.doors``: one run through every door.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run(*args: str, out: Path, timeout: float) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", *args, "--json", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(out.read_text()))


def test_the_fault_campaign_finds_nothing_lost_nothing_leaked(tmp_path) -> None:
    result = run(
        "bench.faults", "--modes", "1", "--questions", "4",
        "--points", "prepare", "filter_results", "integrate",
        "--skip", "pause", "redis_restart", "bad_input", "load", "ownership",
        out=tmp_path / "faults.json", timeout=900,
    )  # fmt: skip
    summary = result["summary"]
    assert summary["permission canaries leaked"] == 0
    assert summary["restricted ids leaked"] == 0
    assert result["permissions"]["runs_as_bob"] == 4
    assert result["permissions"]["alice_runs_that_found_a_canary"] > 0  # the canaries are there
    kills = result["sigkill"]
    assert [k["point"] for k in kills["details"]] == ["prepare", "filter_results", "integrate"]
    assert kills["completed_cleanly"] == kills["trials"] == 3, kills["details"]
    files = result["bad_files"]
    assert files["bad_files_reported"] == files["bad_files"] and files["exit_code"] == 0
    assert (tmp_path / "faults.md").exists()


def test_the_doors_benchmark_measures_every_door(tmp_path) -> None:
    result = run("bench.doors", "--runs", "1", out=tmp_path / "doors.json", timeout=300)
    assert set(result["systems"]) == {"native", "openai", "langgraph", "mcp"}
    for door in result["systems"].values():
        assert door["run_p50_s"] > 0 and door["first_token_p50_s"] > 0
