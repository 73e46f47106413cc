"""The FastAPI application: threads, resumable SSE runs, state and history, health."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from redis.exceptions import ConnectionError as RedisConnectionError
from redisvl.exceptions import RedisVLError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from seekgraph.server.app_state import close_app_state, open_app_state
from seekgraph.server.http.chat_completions import openai_error
from seekgraph.server.http.errors import map_service_errors
from seekgraph.server.http.http_guard import JsonShapeGuard, KeyGate, RequestGuard
from seekgraph.server.http.mcp_http import LazyMcpDoor, RequireApiKey
from seekgraph.server.http.routes import (
    health,
    internal,
    langgraph_api,
    langgraph_runs,
    me,
    ops,
    runs,
    threads,
    v1,
)
from seekgraph.server.http.telemetry import instrument_http
from seekgraph.server.observe import Telemetry
from seekgraph.server.settings import Settings

log = logging.getLogger("seekgraph.server")


def validation_detail(exc: RequestValidationError) -> str:
    """One line that says where the request is wrong and what to send instead."""
    problems = []
    for e in exc.errors():
        if e.get("type") == "json_invalid":
            offset = e["loc"][-1] if len(e["loc"]) > 1 else None
            position = offset + 1 if isinstance(offset, int) else "?"  # counted from 1
            reason = (e.get("ctx") or {}).get("error", "not JSON")
            problems.append(
                f"the body is not valid JSON at character {position} ({reason}); "
                'send an object such as {"question": "..."}'
            )
            continue
        where = ".".join(str(p) for p in e["loc"] if p != "body") or "body"
        message = str(e["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {message}")
    return f"invalid request: {'; '.join(problems)}"


def create_app(settings: Settings | None = None, telemetry: Telemetry | None = None) -> FastAPI:
    """Build the app; nothing is opened until the lifespan starts.

    ``telemetry``: its metrics and traces (from the ``OTEL_*`` variables when None).
    """
    settings = settings or Settings()
    telemetry = telemetry or Telemetry.from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            state = await open_app_state(settings, stack, telemetry=telemetry)
            app.state.seekgraph = state
            await stack.enter_async_context(mcp_door.running())
            try:
                yield
            finally:
                await close_app_state(state)

    app = FastAPI(
        title="seekgraph",
        summary="Answers from every source you may see, with citations it can prove.",
        version="0.1.0",
        lifespan=lifespan,
    )

    # inside the key's check: a known key's huge JSON of tiny objects is not parsed either
    app.add_middleware(JsonShapeGuard, max_containers=settings.max_json_containers)
    # inside the guard: a body is not read for a key nobody knows, on any door
    app.add_middleware(KeyGate, user_for=lambda: app.state.seekgraph.keys.user_for)
    # outermost: a body over the limit is refused before any route or key check reads it
    app.add_middleware(
        RequestGuard,
        max_body_bytes=settings.max_request_bytes,
        body_timeout=settings.body_timeout_seconds,
        request_timeout=settings.request_timeout_seconds,
    )

    @app.exception_handler(RedisVLError)
    async def store_reset(request: Request, exc: RedisVLError) -> JSONResponse:
        # the saver's search indexes are gone (Redis restarted empty): recreate, say retry
        log.warning("checkpoint store error on %s: %s", request.url.path, exc)
        await request.app.state.seekgraph.service.store_ready()
        return JSONResponse(
            status_code=503,
            content={"detail": "the checkpoint store was reset or is not ready; try again shortly"},
        )

    @app.exception_handler(RedisConnectionError)
    async def store_down(request: Request, exc: RedisConnectionError) -> JSONResponse:
        return JSONResponse(
            status_code=503,
            content={"detail": "the checkpoint store is unreachable; try again shortly"},
        )

    map_service_errors(app)  # the run service's refusals: status, message, Retry-After

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        if request.url.path.startswith("/v1/"):
            return openai_error(422, validation_detail(exc))
        return JSONResponse(status_code=422, content={"detail": validation_detail(exc)})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if request.url.path.startswith("/v1/"):  # OpenAI clients read OpenAI's error format
            return openai_error(exc.status_code, str(exc.detail), exc.headers)
        return await http_exception_handler(request, exc)

    app.include_router(health.router)
    app.include_router(me.router)
    app.include_router(threads.router)
    app.include_router(runs.router)
    app.include_router(internal.router)
    app.include_router(ops.router)
    app.include_router(v1.router)
    app.include_router(langgraph_api.router)
    app.include_router(langgraph_runs.router)

    # MCP over streamable HTTP at /mcp, behind the same API keys; the MCP SDK is loaded by
    # the first request with a valid key (``mcp_http``)
    mcp_door = LazyMcpDoor(lambda: app.state.seekgraph.service)
    app.router.routes.append(
        Route(
            "/mcp",
            RequireApiKey(mcp_door, lambda: app.state.seekgraph.service),
            include_in_schema=False,
        )
    )

    static = Path(__file__).parent / "static"
    app.mount("/static", StaticFiles(directory=static), name="static")

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(static / "index.html", headers={"Cache-Control": "no-cache"})

    # outermost: a request the guards refuse (401, 413, 429) is counted and traced too
    instrument_http(app, telemetry)
    return app
