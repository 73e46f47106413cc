"""The tests' preloader (``tests/support/preload.py``): a forked command is a process of its
own whose streams, exit status, signals and environment are the command's, as when executed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support import BIN, REPO
from tests.support.preload import PreloadedPopen, _forkable
from tests.support.waiting import wait_until


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(") ", 1)[1][0]


def test_a_forked_command_is_its_own_process_with_the_commands_streams_and_status(
    tmp_path: Path,
) -> None:
    seekgraph = str(BIN / "seekgraph")
    assert subprocess.Popen is PreloadedPopen and _forkable([seekgraph, "--help"], {})
    done = subprocess.run([seekgraph, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "usage: seekgraph" in done.stdout and done.stderr == ""
    wrong = subprocess.run([seekgraph, "ask", "q", "--jsn"], capture_output=True, text=True,
                           timeout=60)  # fmt: skip
    assert wrong.returncode == 2 and "did you mean --json" in wrong.stderr
    # its environment is the one asked for, not the test process's
    env = {**os.environ, "SEEKGRAPH_WORKSPACE": str(tmp_path / "nowhere")}
    listed = subprocess.run([seekgraph, "sources", "list"], env=env, capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert listed.returncode == 2 and f"{tmp_path / 'nowhere'} is not a readable" in listed.stderr
    # a module outside the checkout, or an environment read at start, is executed, not forked
    assert _forkable([sys.executable, "-m", "tests.fakes.model_server"], {}) is not None
    assert _forkable([sys.executable, "-m", "json.tool"], {}) is None
    assert _forkable([seekgraph], {"env": {**env, "PYTHONPATH": str(tmp_path)}}) is None
    # a signal reaches the forked process itself: SIGSTOP holds it, SIGKILL ends it
    command = [sys.executable, "-m", "tests.fakes.model_server", "--port", "0"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    server = subprocess.Popen(command, cwd=REPO, **quiet)  # type: ignore[call-overload]
    assert server._preload is not None  # type: ignore[attr-defined]
    server.send_signal(signal.SIGSTOP)
    wait_until(lambda: _state(server.pid) == "T", timeout=10, what="the process to stop")
    server.send_signal(signal.SIGKILL)
    assert server.wait(timeout=10) == -signal.SIGKILL
