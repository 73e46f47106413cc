"""Calling a remote service the way every HTTP-backed source does.

Each request has a timeout; 5xx answers and connection failures are retried with backoff
(tenacity); a 429 is retried after the service's ``Retry-After`` (bounded); after repeated
failures a circuit breaker stops calling the service for a while, so a dead service costs
nothing; an optional rate limit (aiolimiter) keeps within what the service allows.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from aiolimiter import AsyncLimiter
from circuitbreaker import CircuitBreaker, CircuitBreakerError
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

#: Longest ``Retry-After`` honoured; a service asking for more is reported as unavailable.
MAX_RETRY_AFTER_S = 10.0


class SourceUnavailableError(ConnectionError):
    """The service failed (5xx, timeout, connection, rate limit) or its circuit is open."""


class SourceRequestError(ValueError):
    """The service refused the request (4xx) or answered something unusable."""


class ResilientClient:
    """An ``httpx.AsyncClient`` wrapped in timeouts, retries, a breaker and a rate limit."""

    def __init__(
        self,
        name: str,
        *,
        client: httpx.AsyncClient | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 5.0,
        retries: int = 2,
        failure_threshold: int = 5,
        recovery_timeout: float = 30.0,
        per_second: float | None = None,
    ) -> None:
        self.name = name
        self.client = client or httpx.AsyncClient(trust_env=False)
        self.headers = headers or {}
        self.timeout = timeout
        self.retries = retries
        self.limiter = AsyncLimiter(per_second, 1.0) if per_second else None
        self.breaker = CircuitBreaker(
            failure_threshold=failure_threshold,
            recovery_timeout=recovery_timeout,
            expected_exception=SourceUnavailableError,
            name=f"source {name}",
        )
        self._guarded = self.breaker(self._with_retries)

    async def _once(self, method: str, url: str, kwargs: dict[str, Any]) -> httpx.Response:
        if self.limiter is not None:
            await self.limiter.acquire()
        try:
            response = await self.client.request(
                method, url, headers=self.headers, timeout=self.timeout, **kwargs
            )
        except httpx.TimeoutException as exc:
            raise SourceUnavailableError(f"{self.name}: timed out after {self.timeout} s") from exc
        except httpx.TransportError as exc:
            raise SourceUnavailableError(f"{self.name}: {type(exc).__name__}") from exc
        if response.status_code == 429:
            wait = _retry_after(response)
            if wait is None or wait > MAX_RETRY_AFTER_S:
                raise SourceUnavailableError(f"{self.name}: rate limited by the service")
            await asyncio.sleep(wait)
            raise SourceUnavailableError(f"{self.name}: rate limited (retried after {wait} s)")
        if response.status_code >= 500:
            raise SourceUnavailableError(f"{self.name}: service answered {response.status_code}")
        return response

    async def _with_retries(self, method: str, url: str, kwargs: dict[str, Any]) -> httpx.Response:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type(SourceUnavailableError),
            stop=stop_after_attempt(self.retries + 1),
            wait=wait_exponential(multiplier=0.1, max=2.0),
            reraise=True,
        ):
            with attempt:
                return await self._once(method, url, kwargs)
        raise AssertionError("unreachable")  # pragma: no cover

    async def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """The service's answer (any status below 500), or ``SourceUnavailableError``."""
        try:
            response: httpx.Response = await self._guarded(method, url, kwargs)
        except CircuitBreakerError:
            raise SourceUnavailableError(
                f"{self.name}: circuit open after repeated failures; not calling it for now"
            ) from None
        return response

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.aclose()


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "1")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
