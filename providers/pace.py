"""How long each chat model takes for a call here, measured on its own calls.

A hosted model answers a call in a second or two; a 1.5B model on two CPU cores takes 15–60 s
(prompt read at ~20 tokens/s, decode at ~7). A run's wall-clock budget set for the first
would cut the second off after one round, and a research plan's estimate would be off by
ten times. Every call (structured or streamed) records its wall time under the model that
served it; :func:`run_seconds` turns the measured pace into a run's time.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

#: Weight of the newest call in the running mean (a model's pace changes with the load).
NEWEST = 0.3
#: Model calls of one search round (expand the query, grade, evaluate) and of the answer
#: (write it, check it) — counted on the search flow's LLM mode.
CALLS_PER_ROUND = 3
CALLS_TO_ANSWER = 2


@dataclass
class _Pace:
    calls: int = 0
    seconds: float = 0.0


_paces: dict[str, _Pace] = {}
_lock = threading.Lock()


def _step(model: str, step: str) -> str:
    """The key of ``model``'s pace at one step.

    A grading call reads ten passages, an expansion call one question.
    """
    return f"{model}#{step}"


def record(model: str, seconds: float, step: str | None = None) -> None:
    """One call of ``model`` took ``seconds`` (wall time, first byte to last).

    Counted for the model as a whole and, when ``step`` is given, for that step.
    """
    keys = [model] + ([_step(model, step)] if step else [])
    with _lock:
        for key in keys:
            pace = _paces.setdefault(key, _Pace())
            pace.seconds = (
                seconds if pace.calls == 0 else NEWEST * seconds + (1 - NEWEST) * pace.seconds
            )
            pace.calls += 1


def at_least(model: str, seconds: float, step: str) -> None:
    """A call of ``model`` at ``step`` ran out its ``seconds`` without an answer.

    It takes at least that long: the step's pace is raised to it, so its next timeout
    (``fitted_timeout``) leaves half as much again.
    """
    with _lock:
        pace = _paces.setdefault(_step(model, step), _Pace())
        pace.seconds = max(pace.seconds, seconds) if pace.calls else seconds
        pace.calls += 1


def seconds_per_call(model: str | None, step: str | None = None) -> float | None:
    """The running mean seconds a call of ``model`` takes here; ``None`` before its first.

    At ``step``'s own pace when that step was measured.
    """
    with _lock:
        for key in ([_step(model or "", step)] if step else []) + [model or ""]:
            pace = _paces.get(key)
            if pace and pace.calls:
                return pace.seconds
        return None


def run_seconds(model: str | None, rounds: int) -> float | None:
    """Seconds a search-flow run of ``rounds`` rounds takes with ``model`` at its pace."""
    per_call = seconds_per_call(model)
    if per_call is None:
        return None
    return per_call * (CALLS_PER_ROUND * rounds + CALLS_TO_ANSWER)


def fitted_seconds(max_seconds: float, model: str | None, rounds: int, fit: bool = True) -> float:
    """A run's wall-clock budget: ``max_seconds``, or what ``model``'s measured pace needs.

    Raised only when ``fit``, and to at most ten times ``max_seconds``.
    """
    needed = run_seconds(model, rounds) if fit else None
    return min(max(max_seconds, needed or 0.0), 10 * max_seconds)


#: A paced call's time is a running mean: a timeout fitted to it leaves this much room.
TIMEOUT_ROOM = 1.5


def fitted_timeout(
    timeout: float, model: str | None, calls: int, fit: bool = True, step: str | None = None
) -> float:
    """A step's timeout: ``timeout``, or what ``calls`` queued calls of ``model`` take.

    A local server answers one call at a time, so a step's calls queue. At the step's own
    pace when it was measured (else the model's), raised only when ``fit``, with room for a
    slower call (``TIMEOUT_ROOM``), to at most ten times ``timeout``.
    """
    per_call = seconds_per_call(model, step) if fit else None
    needed = TIMEOUT_ROOM * calls * per_call if per_call else 0.0
    return min(max(timeout, needed), 10 * timeout)


def report_seconds(model: str | None, sub_questions: int, rounds: int) -> float | None:
    """Seconds a research report takes with ``model`` at its pace.

    Each sub-question's run, then a call per section and one to read the whole report
    through (the calls of one model queue).
    """
    per_run, per_call = run_seconds(model, rounds), seconds_per_call(model)
    if per_run is None or per_call is None:
        return None
    return sub_questions * per_run + (sub_questions + 1) * per_call


def load(path: Path) -> None:
    """Start from the paces an earlier process measured (saved by :func:`keep_in`).

    A fresh ``seekgraph`` process would otherwise give its first run of a slow model the
    budget of a fast one. A model already measured here keeps its own pace; an unreadable
    file is ignored (the paces are an estimate, measured again on every call).
    """
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    if not isinstance(saved, dict):
        return
    with _lock:
        for model, seconds in saved.items():
            if isinstance(seconds, int | float) and seconds > 0 and model not in _paces:
                _paces[model] = _Pace(calls=1, seconds=float(seconds))


def save(path: Path) -> None:
    """Write every measured pace to ``path`` (atomically; the last process to end wins)."""
    with _lock:
        paces = {m: round(p.seconds, 3) for m, p in _paces.items() if p.calls}
    if not paces:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(f".{os.getpid()}.part")
        part.write_text(json.dumps(paces, indent=1, sort_keys=True) + "\n")
        os.replace(part, path)
    except OSError:
        pass  # a read-only data directory costs the next process its estimate, nothing else


def keep_in(path: Path) -> None:
    """Load the paces saved at ``path`` now, and save them there when the process ends."""
    load(path)
    atexit.register(save, path)


def forget() -> None:
    """Drop every measurement (tests)."""
    with _lock:
        _paces.clear()
