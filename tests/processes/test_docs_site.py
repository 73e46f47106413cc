"""The documentation site builds without a broken link, with its generated pages."""

import os
import subprocess
import sys
from pathlib import Path

from tests.support import REPO


def test_the_site_builds_with_no_broken_link(tmp_path) -> None:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "reference" / "index.html").exists()
    assert (tmp_path / "benchmarks" / "faults" / "index.html").exists()  # from bench/results/
