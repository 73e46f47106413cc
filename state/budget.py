"""The run's budget: rounds, tokens, wall clock and bad attempts, as plain data with pure checks."""

from __future__ import annotations

from typing_extensions import TypedDict


class Budget(TypedDict):
    """Limits and what has been spent, kept in state so it survives a resume."""

    rounds: int
    max_rounds: int
    tokens_used: int
    max_tokens: int
    started_at: float
    deadline: float
    clock: float
    """Wall-clock time (epoch seconds) last seen by a node; routers compare it to ``deadline``."""
    bad_attempts: int
    max_bad_attempts: int


def new_budget(
    *, now: float, max_rounds: int, max_tokens: int, max_seconds: float, max_bad_attempts: int
) -> Budget:
    """A fresh budget starting at ``now``."""
    return {
        "rounds": 0,
        "max_rounds": max_rounds,
        "tokens_used": 0,
        "max_tokens": max_tokens,
        "started_at": now,
        "deadline": now + max_seconds,
        "clock": now,
        "bad_attempts": 0,
        "max_bad_attempts": max_bad_attempts,
    }


def exhausted(budget: Budget) -> str | None:
    """Why the budget is spent, or ``None`` while any is left. Pure: reads only the budget."""
    if budget["rounds"] >= budget["max_rounds"]:
        return f"all {budget['max_rounds']} search rounds used"
    if budget["tokens_used"] >= budget["max_tokens"]:
        return f"token budget spent ({budget['tokens_used']} of {budget['max_tokens']})"
    if budget["clock"] >= budget["deadline"]:
        seconds = budget["deadline"] - budget["started_at"]
        return f"time budget spent ({seconds:.0f} s)"
    if budget["bad_attempts"] >= budget["max_bad_attempts"]:
        return f"{budget['bad_attempts']} attempts without progress"
    return None


def spend(
    budget: Budget, *, now: float, tokens: int = 0, rounds: int = 0, bad_attempts: int = 0
) -> Budget:
    """A new budget with more spent (never mutates the old one)."""
    return {
        **budget,
        "clock": max(budget["clock"], now),
        "tokens_used": budget["tokens_used"] + tokens,
        "rounds": budget["rounds"] + rounds,
        "bad_attempts": budget["bad_attempts"] + bad_attempts,
    }
