"""Bearer API keys mapped to users; only SHA-256 hashes of keys are stored."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path

import redis.asyncio as aioredis


def hash_key(key: str) -> str:
    """The stored form of an API key."""
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> str:
    """A fresh random API key."""
    return "sg_" + secrets.token_urlsafe(24)


class ApiKeyStore:
    """Looks up the user of a key: in a JSON file (``{"<sha256>": "user"}``) and/or Redis."""

    def __init__(
        self,
        path: Path | None = None,
        redis: aioredis.Redis | None = None,
        redis_key: str = "seekgraph:apikeys",
    ) -> None:
        self.path = path
        self.redis = redis
        self.redis_key = redis_key
        self._file: dict[str, str] = {}
        self._mtime = 0.0

    def _load_file(self) -> dict[str, str]:
        if self.path is None or not self.path.exists():
            return {}
        mtime = self.path.stat().st_mtime
        if mtime != self._mtime:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self._file = {str(h): str(u) for h, u in data.items()}
            self._mtime = mtime
        return self._file

    async def user_for(self, key: str) -> str | None:
        """The user a key belongs to, or None."""
        digest = hash_key(key)
        user = self._load_file().get(digest)
        if user is None and self.redis is not None:
            value = await self.redis.hget(self.redis_key, digest)
            user = (
                None
                if value is None
                else (value.decode() if isinstance(value, bytes) else str(value))
            )
        return user


def add_key_to_file(path: Path, user: str) -> str:
    """Create a key for ``user``, store its hash in ``path``, and return the key (shown once)."""
    key = new_key()
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    data[hash_key(key)] = user
    path.parent.mkdir(parents=True, exist_ok=True)
    # readable by its owner only (the hashes are not the keys, but they name every user)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(data, indent=2) + "\n")
    return key


async def add_key_to_redis(url: str, user: str, redis_key: str = "seekgraph:apikeys") -> str:
    """Create a key for ``user``, store its hash in Redis, and return the key (shown once)."""
    key = new_key()
    client = aioredis.from_url(url)
    try:
        await client.hset(redis_key, hash_key(key), user)
    finally:
        await client.aclose()
    return key
