"""API keys: stored hashed in a file or in Redis, resolved to users."""

from __future__ import annotations

import json
from pathlib import Path

import redis.asyncio as aioredis

from seekgraph.server.auth import ApiKeyStore, add_key_to_file, add_key_to_redis, hash_key


async def test_file_keys_are_stored_hashed_and_resolve_to_their_user(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    key = add_key_to_file(path, "bob")
    stored = json.loads(path.read_text())
    assert key not in path.read_text() and stored == {hash_key(key): "bob"}
    store = ApiKeyStore(path)
    assert await store.user_for(key) == "bob"
    assert await store.user_for(key + "x") is None


async def test_redis_keys_resolve_to_their_user(redis_url: str) -> None:
    key = await add_key_to_redis(redis_url, "alice", redis_key="test:apikeys")
    client = aioredis.from_url(redis_url)
    try:
        raw = await client.hgetall("test:apikeys")
        assert key.encode() not in b"".join(raw.keys())
        store = ApiKeyStore(None, client, redis_key="test:apikeys")
        assert await store.user_for(key) == "alice"
        assert await store.user_for("sg_wrong") is None
    finally:
        await client.aclose()
