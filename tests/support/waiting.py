"""Waiting on a condition with a deadline, never a fixed sleep."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The condition did not hold before the deadline."""


def wait_until(
    predicate: Callable[[], T], *, timeout: float, what: str, interval: float = 0.05
) -> T:
    """Call ``predicate`` until it returns something truthy, and return that.

    Raises :class:`WaitTimeout` naming ``what`` was awaited when ``timeout`` seconds pass
    first (the predicate's last value is in the message).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise WaitTimeout(f"waited {timeout:g} s for {what}; last seen: {value!r}")
        time.sleep(interval)


async def await_until(
    predicate: Callable[[], Awaitable[T]], *, timeout: float, what: str, interval: float = 0.05
) -> T:
    """:func:`wait_until` for a coroutine predicate, without blocking the event loop."""
    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise WaitTimeout(f"waited {timeout:g} s for {what}; last seen: {value!r}")
        await asyncio.sleep(interval)
