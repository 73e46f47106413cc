"""Fenced checkpoint writes on real Redis: a stale holder writes nothing at all.

The check of the lock token and the write are one Lua script, so there is no moment between
them in which a takeover can slip.
"""

from __future__ import annotations

import uuid

import pytest
import redis.asyncio as aioredis
from langgraph.checkpoint.base import empty_checkpoint

from seekgraph.server.runs.compact import passages_key
from seekgraph.server.runs.coordination import RedisCoordinator
from seekgraph.server.runs.fencing import FENCE, Fence, FencedRedisSaver, LostLockError

TTL_MS = 5000


@pytest.fixture
async def store(redis_url):
    client = aioredis.Redis.from_url(redis_url)
    saver = FencedRedisSaver(redis_client=client)
    await saver.asetup()
    yield saver, RedisCoordinator(client, prefix=f"t{uuid.uuid4().hex[:6]}")
    await client.aclose()


def config(thread: str) -> dict:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def passage(n: int) -> dict:
    """A piece of evidence, as the graph's channels carry it (stored apart, once)."""
    return {"source_id": f"doc-{n}#0", "snippet": f"passage {n}: " + "words " * 80}


async def put(saver: FencedRedisSaver, thread: str, evidence: list | None = None) -> dict:
    checkpoint = empty_checkpoint()
    if evidence is not None:
        checkpoint["channel_values"] = {"evidence": evidence}
    return await saver.aput(config(thread), checkpoint, {"source": "loop", "step": 1}, {})


async def test_the_holder_writes_and_reads_back_what_the_base_saver_reads(store) -> None:
    saver, coordinator = store
    thread = uuid.uuid4().hex
    assert await coordinator.acquire(thread, "run-a", TTL_MS)
    token = FENCE.set(Fence(coordinator, thread, "run-a", TTL_MS))
    try:
        saved = await put(saver, thread, [passage(1)])
        await saver.aput_writes(
            saved, [("answer", "42"), ("notes", ["n"]), ("kept", [passage(2)])], "task-1"
        )
    finally:
        FENCE.reset(token)
    got = await saver.aget_tuple(config(thread))
    assert (
        got is not None
        and got.config["configurable"]["checkpoint_id"] == (saved["configurable"]["checkpoint_id"])
    )
    assert got.checkpoint["channel_values"]["evidence"] == [passage(1)]
    assert sorted((w[1], w[2]) for w in got.pending_writes) == [
        ("answer", "42"),
        ("kept", [passage(2)]),
        ("notes", ["n"]),
    ]


async def test_a_stale_holder_writes_nothing(store) -> None:
    saver, coordinator = store
    thread = uuid.uuid4().hex
    assert await coordinator.acquire(thread, "run-a", TTL_MS)
    token = FENCE.set(Fence(coordinator, thread, "run-a", TTL_MS))
    try:
        first = await put(saver, thread)
    finally:
        FENCE.reset(token)
    await coordinator.release(thread, "run-a")  # as if it expired while run-a was paused
    assert await coordinator.acquire(thread, "run-b", TTL_MS)  # taken over
    token = FENCE.set(Fence(coordinator, thread, "run-a", TTL_MS))  # run-a wakes up
    try:
        with pytest.raises(LostLockError):
            await put(saver, thread, [passage(3)])
        with pytest.raises(LostLockError):
            await saver.aput_writes(first, [("answer", "stale"), ("kept", [passage(4)])], "task-2")
    finally:
        FENCE.reset(token)
    latest = await saver.aget_tuple(config(thread))
    assert latest is not None
    assert latest.config["configurable"]["checkpoint_id"] == first["configurable"]["checkpoint_id"]
    assert not latest.pending_writes  # the stale write did not land
    # nor the passages it carried: a thread deleted under a stale run gets no key back
    assert not await saver._redis.exists(passages_key(thread))
    # and even after run-b finished and let go, run-a may not come back
    await coordinator.release(thread, "run-b")
    token = FENCE.set(Fence(coordinator, thread, "run-a", TTL_MS))
    try:
        with pytest.raises(LostLockError):
            await put(saver, thread)
    finally:
        FENCE.reset(token)


async def test_a_slow_holder_whose_lock_lapsed_takes_it_back(store) -> None:
    saver, coordinator = store
    thread = uuid.uuid4().hex
    assert await coordinator.acquire(thread, "run-a", TTL_MS)
    await coordinator.release(thread, "run-a")  # lapsed; nobody acquired it since
    token = FENCE.set(Fence(coordinator, thread, "run-a", TTL_MS))
    try:
        await put(saver, thread)
    finally:
        FENCE.reset(token)
    assert await coordinator.holder(thread) == "run-a"
    assert not await coordinator.acquire(thread, "run-b", TTL_MS)
