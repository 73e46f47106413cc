"""The long fault campaign and the doors benchmark, as scripted, at a size CI can afford.

``python -m bench.faults`` with every part (permissions, SIGKILL and pause trials, Redis
restarted empty, bad input, the ownership attacks, bad files, load) but fewer trials; the
full run's numbers are in ``bench/results/faults.json``.
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


def test_the_fault_campaign_finds_nothing_lost_nothing_leaked_no_500(tmp_path) -> None:
    result = run(
        "bench.faults", "--modes", "1", "--kill-rounds", "1", "--pauses", "2",
        "--load-runs", "12", out=tmp_path / "faults.json", timeout=900,
    )  # fmt: skip
    summary = result["summary"]
    assert summary["permission canaries leaked"] == 0
    assert summary["restricted ids leaked"] == 0
    kills = result["sigkill"]
    assert kills["completed_cleanly"] == kills["trials"] == 12, kills["details"]
    assert result["pause"]["state_never_backwards"] == result["pause"]["trials"] == 2
    assert summary["Redis restart recovered"] is True
    assert result["bad_input"]["five_hundreds"] == 0, result["bad_input"]["which"]
    assert result["bad_input"]["state_unchanged"] and result["bad_input"]["thread_free_afterwards"]
    files = result["bad_files"]
    assert files["bad_files_reported"] == files["bad_files"] and files["exit_code"] == 0
    assert result["load"]["lost"] == 0 and result["load"]["done"] == 12
    attacks = result["ownership"]["cases"]
    assert [c["case"] for c in attacks if not c["held"]] == [], attacks
    assert (tmp_path / "faults.md").exists()


def test_the_doors_benchmark_measures_every_door(tmp_path) -> None:
    result = run("bench.doors", "--runs", "1", out=tmp_path / "doors.json", timeout=300)
    assert set(result["systems"]) == {"native", "openai", "langgraph", "mcp"}
    for door in result["systems"].values():
        assert door["run_p50_s"] > 0 and door["first_token_p50_s"] > 0


def test_the_jobs_benchmark_scales_cancels_and_survives_its_workers(tmp_path) -> None:
    result = run(
        "bench.jobs", "--runs", "6", "--workers", "1,2", "--cancels", "2",
        "--overhead-runs", "3", "--fault-trials", "2", out=tmp_path / "jobs.json", timeout=600,
    )  # fmt: skip
    assert set(result["throughput"]) == {"1_workers", "2_workers"}
    assert all(t["runs_per_minute"] > 0 for t in result["throughput"].values())
    assert result["cancel_latency"]["max_s"] < 2.0
    faults = result["faults"]
    assert faults["sigkill"].startswith("2/2") and faults["sigterm"].startswith("2/2"), faults
    assert result["queue_overhead"]["queued_median_ms"] > 0
