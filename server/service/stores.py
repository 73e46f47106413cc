"""What a store that does not answer raises (Redis down, a socket reset, a full disk)."""

from __future__ import annotations

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

STORE_DOWN = (RedisConnectionError, RedisTimeoutError, OSError)
