"""``python -m bench.jobs`` at a size CI can afford: throughput with one and two workers, the
queue's overhead, and runs across a Redis restart from its AOF. Cancel latency and the worker
SIGKILL/SIGTERM trials are ``tests/processes/test_jobs.py``'s; the full run's numbers are in
``bench/results/jobs.json``.
"""

from __future__ import annotations

from tests.soak.test_soak import run


def test_the_jobs_benchmark_scales_and_keeps_its_runs_across_a_redis_restart(tmp_path) -> None:
    result = run(
        "bench.jobs", "--runs", "4", "--workers", "1,2", "--cancels", "0",
        "--overhead-runs", "3", "--fault-trials", "0", "--restart-runs", "2",
        "--redis-down", "1", out=tmp_path / "jobs.json", timeout=600,
    )  # fmt: skip
    assert set(result["throughput"]) == {"1_workers", "2_workers"}
    assert all(t["runs_per_minute"] > 0 for t in result["throughput"].values())
    assert result["queue_overhead"]["queued_median_ms"] > 0
    restart = result["redis_restart"]
    assert restart["streamed_run"] == "done, no gap or duplicate", restart
    assert restart["background_runs"].startswith("2/2") and not restart["problems"], restart
