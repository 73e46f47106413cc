"""What every HTTP request meets before any route: size and time bounds, and safe headers.

``RequestGuard`` (ASGI middleware, outside authentication) refuses a body over the limit
with 413 — at once from ``Content-Length``, or as soon as a chunked body passes it — and a
body that stops arriving with 408, so nothing is read or parsed past the bound. It also
adds the headers a browser needs to keep the page from being framed or running foreign
scripts. ``guarded_protocol`` is uvicorn's HTTP protocol with a deadline on the request
head: a client that sends its headers slowly (or nothing at all) is disconnected.
"""

from __future__ import annotations

import asyncio
import json

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
    """413 past ``max_body_bytes``, 408 when the body stalls ``body_timeout`` seconds."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, body_timeout: float) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout

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

        async def bounded_receive() -> Message:
            nonlocal received, complete
            if complete:  # after the body: only the disconnect is waited for, unbounded
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.body_timeout)
            except TimeoutError:
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


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
                *SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def guarded_protocol(header_timeout: float) -> type[HttpToolsProtocol]:
    """The httptools protocol of uvicorn, with a deadline on the request head.

    A connection whose request head is not complete ``header_timeout`` seconds after it
    connected (or began its next request) is closed.
    """

    class HeadDeadlineProtocol(HttpToolsProtocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
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


__all__ = ["SECURITY_HEADERS", "RequestGuard", "guarded_protocol"]
