"""Processes forked from a preloaded interpreter: a test run's CPU goes to the code under test,
not to importing the same libraries a few hundred times.

Every ``seekgraph`` process (server, worker, CLI) spends 2-3 CPU-s importing LangGraph,
langchain-core, LangSmith's pydantic types, FastAPI and numpy before it does anything, and the
processes and soak tiers start a few hundred of them (``bench/results/ci_time_57.md``). Here a
*preloader* -- one interpreter per test process that has imported those libraries and nothing of
seekgraph's or of the tests' -- forks each such process instead of a new interpreter being
executed. What a test gets is still a process of its own: its own pid (SIGKILL, SIGSTOP and
SIGTERM reach it), its own file descriptors, environment, working directory and session; it
imports seekgraph itself and runs the command's entry point as ``__main__``, and a test waits on
it and reads its exit status as on any child (the test process is made the "child subreaper" of
what the preloader forks: Linux hands it the forked processes as its own children).

Only the checkout's own commands are forked: the ``seekgraph`` console script and
``python -m`` a module of the checkout (``tests.fakes.*``, ``bench.*``; a benchmark the soak
tier runs forks the servers it starts from a preloader of its own). They are executed as
always -- as is anything else, another program or another Python -- when the call asks for
what a fork cannot give (``pass_fds``, ``preexec_fn``, ``close_fds=False``, another user, a
shell), or when its environment differs from the preloader's in what an interpreter or a
preloaded library reads once at start (``PYTHON*``, the locale, ``TZ``, thread counts,
LangSmith's and LangGraph's settings). ``SEEKGRAPH_TEST_PRELOAD=0`` executes every command.

The test process, made a subreaper, is handed every orphan below it too: a process that a
killed server had started stays its zombie until the test process ends (harmless to a test).

The preloader is single-threaded when it forks (it only imports and reads its socket), so the
forked process starts with no lock held by a thread that does not exist in it.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any

#: The third-party libraries every seekgraph process imports (``python -X importtime``), loaded
#: once in the preloader.
PRELOADED = (
    "langgraph.graph",
    "langgraph.pregel",
    "langgraph.checkpoint.base",
    "langchain_core.runnables.base",
    "langchain_core.messages",
    "langchain_core.language_models",
    "langsmith.client",
    "pydantic",
    "pydantic_settings",
    "fastapi",
    "starlette.applications",
    "uvicorn",
    "httpx",
    "redis.asyncio",
    "numpy",
    "markdown_it",
    "yaml",
    "rich.console",
)
#: Environment read once, at an interpreter's start or a preloaded library's import: a command
#: whose environment differs from the preloader's here is executed, not forked.
#: ("LANG" covers the locale's LANG and LANGUAGE and LangSmith's, LangChain's and LangGraph's
#: LANGSMITH_, LANGCHAIN_ and LANGGRAPH_ settings.)
READ_AT_START = ("PYTHON", "LANG", "LC_", "TZ", "OPENBLAS_", "OMP_", "MKL_")
#: The checkout's console script and the packages whose modules ``python -m`` may fork.
SCRIPTS = ("seekgraph",)
PACKAGES = ("tests", "bench", "seekgraph")

SWITCH = "SEEKGRAPH_TEST_PRELOAD"
REPO = Path(__file__).resolve().parents[2]
_PR_SET_CHILD_SUBREAPER = 36
_MESSAGE = 1 << 17  # an environment and a command line fit many times over (the socket: 208 KB)


def serve(fd: int) -> None:
    """The preloader's loop: one request (a command, its environment and its three standard
    streams) at a time; answers with the pid of the process that runs it, or the error."""
    for name in PRELOADED:
        with contextlib.suppress(ImportError):
            __import__(name)
    link = socket.socket(fileno=fd)
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(link, _MESSAGE, 3)
        except OSError:
            return
        if not data:  # the test process is gone
            return
        try:
            answer: dict[str, Any] = {"pid": _fork(json.loads(data), fds, link)}
        except Exception as e:  # noqa: BLE001 - said to the test process, which raises it
            answer = {"error": f"{type(e).__name__}: {e}"}
        finally:
            for fd_ in fds:
                with contextlib.suppress(OSError):
                    os.close(fd_)
        link.sendall(json.dumps(answer).encode())


def _fork(request: dict[str, Any], fds: list[int], link: socket.socket) -> int:
    """Fork twice: the first child forks the process proper and leaves at once, and Linux hands
    the orphan to the nearest subreaper, the test process. Returns once it has."""
    read_end, write_end = os.pipe()
    first = os.fork()
    if first == 0:
        try:
            os.close(read_end)
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(write_end)
                    link.close()
                    _run(request, fds)  # ends the process
                finally:
                    os._exit(1)
            os.write(write_end, str(pid).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as answer:
        pid_text = answer.read()
    os.waitpid(first, 0)  # after this the process is the test process's child
    return int(pid_text)


def _run(request: dict[str, Any], fds: list[int]) -> None:
    """Become the command: its session, standard streams, directory, environment and argv;
    run its entry point as ``__main__``; end as the interpreter would."""
    global _preloader
    code: int = 0
    interrupted = False
    try:
        if request["new_session"]:
            os.setsid()
        elif request["process_group"] is not None:
            os.setpgid(0, request["process_group"])
        for target, fd in enumerate(fds):
            os.dup2(fd, target)  # dup2 makes 0, 1 and 2 inheritable, as exec would leave them
        os.closerange(3, 65536)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # what a new interpreter sets
        _standard_streams(request["env"])
        sys.argv = list(request["argv"])
        import runpy

        if request["module"]:
            sys.path[0] = os.getcwd()
            _preloader = _Preloader()  # the inherited one's files were closed above
            install()  # a benchmark the soak tier runs forks its own servers from one too
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = str(Path(request["argv"][0]).parent)
            runpy.run_path(request["argv"][0], run_name="__main__")
    except SystemExit as e:
        code = _exit_code(e.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        interrupted = True
    except BaseException:  # noqa: BLE001 - printed as an uncaught exception is
        with contextlib.suppress(BaseException):
            traceback.print_exc()
        code = 1
    _finish(code, interrupted)


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    with contextlib.suppress(BaseException):
        print(value, file=sys.stderr)
    return 1


def _finish(code: int, interrupted: bool) -> None:
    """The interpreter's own ending: wait for non-daemon threads, run ``atexit``, flush; an
    uncaught KeyboardInterrupt ends the process by SIGINT, as Python does."""
    with contextlib.suppress(BaseException):
        threading._shutdown()  # type: ignore[attr-defined]  # what Py_Finalize calls first
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


def _standard_streams(env: dict[str, str]) -> None:
    """New ``sys.stdin/stdout/stderr`` on fds 0-2, as a new interpreter makes them under this
    environment: unbuffered with ``PYTHONUNBUFFERED``, line-buffered on a terminal, UTF-8 with
    ``surrogateescape`` (stderr: ``backslashreplace``)."""
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))

    def writer(fd: int, errors: str, line: bool) -> io.TextIOWrapper:
        raw = io.FileIO(fd, "w", closefd=False)
        return io.TextIOWrapper(
            raw if unbuffered else io.BufferedWriter(raw),  # type: ignore[arg-type]
            encoding="utf-8",
            errors=errors,
            line_buffering=line or raw.isatty(),
            write_through=unbuffered,
        )

    stdin = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r", closefd=False)), "utf-8", "surrogateescape"
    )
    sys.stdin = sys.__stdin__ = stdin
    sys.stdout = sys.__stdout__ = writer(1, "surrogateescape", False)
    sys.stderr = sys.__stderr__ = writer(2, "backslashreplace", True)


class _Preloader:
    """The test process's end: starts the preloader once, sends it commands."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._link: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None  # the preloader's own errors, if it ever fails
        self.environ: dict[str, str] = {}

    def _start(self) -> socket.socket:
        if self._link is None:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            self._log = tempfile.TemporaryFile()  # noqa: SIM115 - kept while it runs
            self.environ = dict(os.environ)
            self._proc = _Popen(
                [sys.executable, "-c", f"import {__name__} as p; p.serve({theirs.fileno()})"],
                pass_fds=[theirs.fileno()],
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
            )
            theirs.close()
            self._link = ours
            atexit.register(self.close)
        return self._link

    def same_start(self, env: dict[str, str]) -> bool:
        """Whether ``env`` reads at a start as the preloader's (started now if need be)."""
        with self._lock:
            self._start()
        return all(
            env.get(k) == self.environ.get(k)
            for k in {*env, *self.environ}
            if k.startswith(READ_AT_START)
        )

    def spawn(self, request: dict[str, Any], fds: list[int]) -> int:
        with self._lock:
            link = self._start()
            socket.send_fds(link, [json.dumps(request).encode()], fds)
            answer = link.recv(_MESSAGE)
        if not answer:
            self._log.seek(0)
            raise OSError(f"the test preloader ended: {self._log.read()[-2000:].decode()}")
        said = json.loads(answer)
        if "error" in said:
            raise OSError(f"the test preloader could not start {request['argv']}: {said['error']}")
        return int(said["pid"])

    def close(self) -> None:
        if self._link is not None:
            self._link.close()
            self._link = None
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)


_Popen = subprocess.Popen
_preloader = _Preloader()


def _forkable(args: Any, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """What the preloader needs to run ``args``, or None: the command is executed."""
    if os.environ.get(SWITCH, "1") == "0" or not isinstance(args, (list, tuple)) or not args:
        return None
    unsupported = ("preexec_fn", "pass_fds", "executable", "user", "group", "extra_groups",
                   "umask", "startupinfo")  # fmt: skip
    if kwargs.get("shell") or any(kwargs.get(k) not in (None, (), -1) for k in unsupported):
        return None
    if kwargs.get("close_fds") is False or not all(isinstance(a, (str, Path)) for a in args):
        return None
    argv = [os.fspath(a) for a in args]
    module = None
    if argv[0] == sys.executable and len(argv) >= 3 and argv[1] == "-m":
        if argv[2].split(".")[0] not in PACKAGES:
            return None
        module, argv = argv[2], [argv[2], *argv[3:]]
    elif argv[0] not in {str(Path(sys.executable).parent / name) for name in SCRIPTS}:
        return None
    env = os.environ if kwargs.get("env") is None else kwargs["env"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        return None  # Popen says what is wrong
    cwd = os.path.abspath(kwargs.get("cwd") or os.getcwd())
    if not os.path.isdir(cwd) or not _preloader.same_start(dict(env)):
        return None
    return {
        "argv": argv,
        "module": module,
        "env": dict(env),
        "cwd": cwd,
        "new_session": bool(kwargs.get("start_new_session")),
        "process_group": kwargs.get("process_group"),
    }


class PreloadedPopen(subprocess.Popen):  # type: ignore[type-arg]
    """:class:`subprocess.Popen` whose seekgraph commands come from the preloader."""

    def __init__(self, args: Any, *rest: Any, **kwargs: Any) -> None:
        self._preload = None if rest else _forkable(args, kwargs)
        super().__init__(args, *rest, **kwargs)

    def _execute_child(self, *args: Any) -> None:
        """Popen's own (POSIX) ``_execute_child(args, executable, preexec_fn, close_fds,
        pass_fds, cwd, env, startupinfo, creationflags, shell, p2cread, p2cwrite, c2pread,
        c2pwrite, errread, errwrite, ...)``, or the preloader."""
        if self._preload is None:
            super()._execute_child(*args)  # type: ignore[misc]
            return
        p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite = args[10:16]
        stdin = p2cread if p2cread != -1 else 0
        stdout = c2pwrite if c2pwrite != -1 else 1
        stderr = errwrite if errwrite != -1 else 2  # stderr=STDOUT: Popen made it stdout's fd
        try:
            self.pid = _preloader.spawn(self._preload, [stdin, stdout, stderr])
            self._child_created = True
        finally:
            # the child's ends of the pipes Popen made (and its /dev/null), closed in this
            # process as Popen closes them once it has executed the child
            self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)


def install() -> None:
    """``subprocess.Popen`` (and so ``subprocess.run``) forks the checkout's commands from the
    preloader, in this process, from now on."""
    if os.environ.get(SWITCH, "1") != "0" and sys.platform == "linux":
        subprocess.Popen = PreloadedPopen  # type: ignore[misc]
