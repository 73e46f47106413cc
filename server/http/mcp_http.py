"""The MCP door over streamable HTTP at ``/mcp``, loaded by the first request that uses it.

The MCP SDK takes about 0.7 s of a core to import (a fifth of a server's start): a server that
nobody calls over MCP never loads it. The first request with a valid API key builds the door
(``mcp_door.build_mcp_server``) and starts its session manager in a task of its own, which
enters and leaves the manager's task group itself (anyio requires it) and runs until the
server stops (``LazyMcpDoor.running``, in the app's lifespan). A request without a key the
app knows is refused before anything is loaded (``RequireApiKey``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from seekgraph.server.caller import bearer_key, key_id
from seekgraph.server.service.run_service import RunService


class LazyMcpDoor:
    """The ``/mcp`` endpoint, built on its first request; ``running`` is its lifetime."""

    def __init__(self, service: Callable[[], RunService]) -> None:
        self.service = service
        self._endpoint: ASGIApp | None = None
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The app's lifetime: on leaving, the session manager (if started) stops."""
        try:
            yield
        finally:
            self._stop.set()
            if self._task is not None:
                await self._task

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a request, building the door first if it is the first."""
        endpoint = self._endpoint or await self._start()
        await endpoint(scope, receive, send)

    async def _start(self) -> ASGIApp:
        """Build the door and run its session manager (once; later callers wait for it)."""
        async with self._lock:
            if self._endpoint is not None:
                return self._endpoint
            from mcp.server.transport_security import TransportSecuritySettings
            from starlette.routing import Route

            from seekgraph.server.http.mcp_door import build_mcp_server, http_user

            server = build_mcp_server(self.service, http_user(self.service))
            # Stateless: any instance can serve any request. DNS-rebinding protection (a
            # Host allow-list) is for servers without credentials; every request here
            # carries an API key a browser cannot forge.
            mcp_http = server.streamable_http_app(
                streamable_http_path="/mcp",
                stateless_http=True,
                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            )
            endpoint = next(r for r in mcp_http.routes if isinstance(r, Route)).endpoint
            started = asyncio.Event()

            async def serve() -> None:
                async with server.session_manager.run():
                    started.set()
                    await self._stop.wait()

            self._task = asyncio.create_task(serve(), name="seekgraph-mcp-sessions")
            ready = asyncio.create_task(started.wait())
            await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
            if not started.is_set():  # the manager failed to start: say why, try again later
                ready.cancel()
                failed, self._task = self._task, None
                failed.result()
            self._endpoint = endpoint
            return endpoint


class RequireApiKey:
    """ASGI guard in front of the MCP endpoint: no valid API key, no MCP session."""

    def __init__(self, inner: ASGIApp, app: Callable[[], RunService]) -> None:
        self.inner = inner
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse requests without a key the app knows (401, like the API)."""
        if scope["type"] == "http":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            key = bearer_key(headers)
            state = self.app()
            try:
                name = await state.keys.user_for(key) if key is not None else None
                wait = (
                    None
                    if key is None or name is None
                    else await state.limits.hit(key_id(key), state.settings.rate_limit_per_minute)
                )
            except OSError:
                name, wait = None, None
            if wait is not None:
                state.metrics.limited.labels("rate").inc()
                response = JSONResponse(
                    {"detail": "too many requests with this key; wait and try again"},
                    status_code=429,
                    headers={"Retry-After": str(max(1, round(wait)))},
                )
                await response(scope, receive, send)
                return
            if name is None:
                detail = (
                    "unknown API key" if key else "send an API key: Authorization: Bearer <key>"
                )
                response = JSONResponse(
                    {"detail": detail}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
                )
                await response(scope, receive, send)
                return
        await self.inner(scope, receive, send)
