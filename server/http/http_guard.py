"""What every HTTP request meets before any route: size and time bounds, and safe headers.

``RequestGuard`` (ASGI middleware, outside authentication) refuses a body over the limit
with 413 — at once from ``Content-Length``, or as soon as a chunked body passes it — and a
body that stops arriving, or takes longer than the request's deadline to arrive, with 408, so
nothing is read or parsed past the bound. It also adds the headers a browser needs to keep
the page from being framed or running foreign scripts. ``KeyGate`` (inside it) refuses a
request that carries a body without a known API key with 401 before one byte of the body
is read, on every door; ``JsonShapeGuard`` (inside that) refuses a large JSON body of
more objects and arrays than any request needs before a route parses it on the event loop.
``guarded_protocol`` is uvicorn's HTTP protocol with a deadline on
the request head and one on the whole request: a client that sends its headers or its body
slowly (or nothing at all) is disconnected.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

#: Headers on every response. The page loads only its own scripts and styles, is never
#: framed, and links open nothing but http(s) and mailto (the page checks urls too).
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
        b"script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
        b"form-action 'self'; object-src 'none'",
    ),
]


class RequestGuard:
    """413 past ``max_body_bytes``; 408 when the body stalls, or is not whole in time.

    Stalls: ``body_timeout`` seconds without a byte; in time: ``request_timeout`` seconds
    after the request began.
    """

    def __init__(
        self,
        app: ASGIApp,
        max_body_bytes: int,
        body_timeout: float,
        request_timeout: float = 60.0,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout
        self.request_timeout = request_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Bound the request's body; add the security headers to the response."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await _refuse(send, 400, "Content-Length is not a number")
                return
            if declared > self.max_body_bytes:
                await _refuse(send, 413, self._too_large())
                return
        received, complete = 0, False
        deadline = time.monotonic() + self.request_timeout

        async def bounded_receive() -> Message:
            nonlocal received, complete
            if complete:  # after the body: only the disconnect is waited for, unbounded
                return await receive()
            left = deadline - time.monotonic()
            try:
                message = await asyncio.wait_for(receive(), max(0.0, min(self.body_timeout, left)))
            except TimeoutError:
                if left <= self.body_timeout:
                    raise HTTPException(
                        408,
                        f"the request did not arrive whole within {self.request_timeout:g} s "
                        "(SEEKGRAPH_REQUEST_TIMEOUT_SECONDS); send it at once",
                    ) from None
                raise HTTPException(
                    408, f"the request body stopped arriving for {self.body_timeout:g} s"
                ) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise HTTPException(413, self._too_large())
                complete = not message.get("more_body", False)
            return message

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, bounded_receive, send_with_headers)

    def _too_large(self) -> str:
        return (
            f"the request body is larger than {self.max_body_bytes} bytes; send a shorter "
            "question or fewer or smaller images"
        )


#: Failures of the key store: a request is refused (503), never let through.
_STORE_DOWN = (RedisConnectionError, RedisTimeoutError, OSError)


class KeyGate:
    """401 for a request with a body and no known API key, before the body is read.

    FastAPI reads and parses a body before a route's dependencies check its key: 48 MiB of
    JSON from a stranger cost a second of CPU and a gigabyte. Here the key (``Authorization:
    Bearer``, or the LangGraph SDK's ``x-api-key``) is looked up from the headers alone; the
    route's own check (user, rate) still runs after. Paths under ``open_prefixes`` check
    their own credentials (the instances' internal token).
    """

    def __init__(
        self,
        app: ASGIApp,
        user_for: Callable[[], Callable[[str], Awaitable[str | None]]],
        open_prefixes: tuple[str, ...] = ("/internal/",),
    ) -> None:
        self.app = app
        self.user_for = user_for
        self.open_prefixes = open_prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Look the key up when the request carries a body; refuse it unknown."""
        if (
            scope["type"] != "http"
            or not _has_body(scope)
            or (str(scope["path"]).startswith(self.open_prefixes))
        ):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        key = headers.get(b"x-api-key", b"").decode("latin-1").strip()
        if not key:
            scheme, _, value = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
            key = value.strip() if scheme.lower() == "bearer" else ""
        if not key:
            await _refuse(send, 401, "send an API key: Authorization: Bearer <key>", scope)
            return
        try:
            user = await self.user_for()(key)
        except _STORE_DOWN:
            await _refuse(send, 503, "the key store is unreachable; try again shortly", scope)
            return
        if user is None:
            await _refuse(send, 401, "unknown API key", scope)
            return
        await self.app(scope, receive, send)


class JsonShapeGuard:
    """413 for a large JSON body that holds more objects and arrays than any request needs.

    A route parses its body on the event loop: 48 MiB of ``[{},{},…]`` from a valid key took
    seconds and a gigabyte while every other client waited. A body over ``buffer_from``
    bytes is read here first (under ``RequestGuard``'s bounds) and its ``{`` and ``[`` are
    counted (in C, milliseconds): past ``max_containers`` it is refused before it is parsed.
    A request's large part is its images, which are strings: they count nothing.
    """

    def __init__(self, app: ASGIApp, max_containers: int, buffer_from: int = 1 << 20) -> None:
        self.app = app
        self.max_containers = max_containers
        self.buffer_from = buffer_from

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Count the containers of a large JSON body; pass it on (replayed) when it fits."""
        headers = dict(scope.get("headers", []))
        length = headers.get(b"content-length", b"0").strip()
        large = b"transfer-encoding" in headers or (
            length.isdigit() and int(length) > self.buffer_from
        )
        if scope["type"] != "http" or not large or b"json" not in headers.get(b"content-type", b""):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        try:
            while True:
                message = await receive()
                if message["type"] != "http.request":  # the client left
                    return
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    break
        except HTTPException as exc:  # RequestGuard's 408 or 413, said as a route would
            await _refuse(send, exc.status_code, str(exc.detail), scope)
            return
        body = b"".join(chunks)
        containers = body.count(b"{") + body.count(b"[")
        if containers > self.max_containers:
            await _refuse(
                send,
                413,
                f"the JSON body holds {containers:,} objects and arrays; at most "
                f"{self.max_containers:,} are read (SEEKGRAPH_MAX_JSON_CONTAINERS)",
                scope,
            )
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _has_body(scope: Scope) -> bool:
    headers = dict(scope["headers"])
    length = headers.get(b"content-length")
    return b"transfer-encoding" in headers or (length is not None and length.strip() != b"0")


async def _refuse(send: Send, status: int, detail: str, scope: Scope | None = None) -> None:
    payload: dict[str, object] = {"detail": detail}
    if scope is not None and str(scope.get("path", "")).startswith("/v1/"):
        kind = "authentication_error" if status == 401 else "server_error"
        payload = {"error": {"message": detail, "type": kind, "param": None, "code": None}}
    body = json.dumps(payload).encode()
    extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
                *extra,
                *SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def guarded_protocol(
    header_timeout: float, request_timeout: float | None = None
) -> type[HttpToolsProtocol]:
    """The httptools protocol of uvicorn, with deadlines on the request head and the request.

    A connection whose request head is not complete ``header_timeout`` seconds after it
    connected (or began its next request) is closed; so is one whose request (head and
    body) is not complete ``request_timeout`` seconds after it began, a few seconds after
    ``RequestGuard`` answered 408 to a request whose body a route was reading.
    """

    class HeadDeadlineProtocol(HttpToolsProtocol):
        _head_timer: asyncio.TimerHandle | None = None
        _request_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()
            if request_timeout is not None and self._request_timer is None:
                self._request_timer = self.loop.call_later(request_timeout + 2.0, self._too_slow)

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            if self._request_timer is not None:
                self._request_timer.cancel()
                self._request_timer = None
            super().on_message_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._request_timer is not None:
                self._request_timer.cancel()
                self._request_timer = None
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(header_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _too_slow(self) -> None:
            self._head_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return HeadDeadlineProtocol


__all__ = ["SECURITY_HEADERS", "JsonShapeGuard", "KeyGate", "RequestGuard", "guarded_protocol"]
