"""A key's request rate in one process: ``limits``' moving window in memory."""

from __future__ import annotations

from seekgraph.server.limits import LocalLimits


async def test_a_key_past_its_rate_waits_and_another_key_does_not() -> None:
    limits = LocalLimits()
    assert [await limits.hit("busy", 2) for _ in range(2)] == [None, None]
    wait = await limits.hit("busy", 2)
    assert wait is not None and 59 < wait <= 60  # until its first request leaves the minute
    assert await limits.hit("quiet", 2) is None
