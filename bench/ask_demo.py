"""Wall time and peak memory of ``seekgraph ask`` on the bundled demo workspace.

Cold runs start from an empty data directory (ingestion and embedding included); warm runs
reuse the index. Each run is a separate process; its peak RSS comes from ``wait4``.

    python -m bench.ask_demo --runs 5 --json bench/results/ask_demo.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTIONS = [
    "How do I connect to the VPN from a new laptop?",
    "What is the daily meal allowance when travelling?",
    "How do I set up SSO for a new application?",
]
BIN = Path(sys.executable).parent / "seekgraph"


def one_run(question: str, data_dir: Path) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one ``seekgraph ask`` process."""
    env = {**os.environ, "SEEKGRAPH_DATA_DIR": str(data_dir)}
    env.pop("SEEKGRAPH_LLM_MODEL", None)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(BIN), "ask", question, "--user", "bob", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    out = proc.stdout.read() if proc.stdout else b""
    if proc.stdout:
        proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"seekgraph ask failed for {question!r}")
    answer = json.loads(out)
    assert answer["citations"], f"no citations for {question!r}"
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, default=Path("bench/results/ask_demo.json"))
    args = parser.parse_args()
    cold: list[tuple[float, float]] = []
    warm: list[tuple[float, float]] = []
    started = time.time()
    for i in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            cold.append(one_run(QUESTIONS[i % len(QUESTIONS)], Path(tmp)))
    with tempfile.TemporaryDirectory() as tmp:
        one_run(QUESTIONS[0], Path(tmp))  # build the index once
        for i in range(args.runs):
            warm.append(one_run(QUESTIONS[i % len(QUESTIONS)], Path(tmp)))

    def summary(runs: list[tuple[float, float]]) -> dict[str, float]:
        return {
            "median_seconds": round(statistics.median(s for s, _ in runs), 3),
            "max_seconds": round(max(s for s, _ in runs), 3),
            "median_peak_rss_mb": round(statistics.median(m for _, m in runs), 1),
            "max_peak_rss_mb": round(max(m for _, m in runs), 1),
        }

    result = {
        "command": "python -m bench.ask_demo " + " ".join(sys.argv[1:]),
        "runs": args.runs,
        "first_run_with_ingestion": summary(cold),
        "warm": summary(warm),
        "targets": {"warm_seconds": 3.0, "first_run_seconds": 30.0, "peak_rss_mb": 800},
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "took_seconds": round(time.time() - started, 1),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    md = args.json.with_suffix(".md")
    c, w = result["first_run_with_ingestion"], result["warm"]
    md.write_text(
        "# `seekgraph ask` on the demo workspace\n\n"
        f"Command: `{result['command']}` — {result['date']}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}\n\n"
        "| run | median wall time | max | median peak RSS | max peak RSS | target |\n"
        "|---|---|---|---|---|---|\n"
        f"| first (with ingestion) | {c['median_seconds']} s | {c['max_seconds']} s | "
        f"{c['median_peak_rss_mb']} MB | {c['max_peak_rss_mb']} MB | < 30 s, < 800 MB |\n"
        f"| warm | {w['median_seconds']} s | {w['max_seconds']} s | {w['median_peak_rss_mb']} MB"
        f" | {w['max_peak_rss_mb']} MB | < 3 s, < 800 MB |\n"
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
