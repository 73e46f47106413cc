"""The FastAPI application: threads, resumable SSE runs, state and history, health."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import redis
import redis.asyncio as aioredis
from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from langgraph.graph.state import CompiledStateGraph
from mcp.server.transport_security import TransportSecuritySettings
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry
from redisvl.exceptions import RedisVLError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from graph.search import build_search_graph
from nodes.services import Services
from providers.chat import aclose_chat_clients
from server.auth import ApiKeyStore
from server.bootstrap import build_services
from server.coordination import Coordinator, RedisCoordinator
from server.fencing import FencedRedisSaver, FencedSqliteSaver
from server.local_coordination import LocalCoordinator
from server.runs import RunManager
from server.settings import Settings

log = logging.getLogger("seekgraph.server")


@dataclass
class AppState:
    """Everything the routes share, built once at start-up."""

    settings: Settings
    services: Services
    graph: CompiledStateGraph[Any, Any, Any, Any]
    coordinator: Coordinator
    runs: RunManager
    keys: ApiKeyStore
    http: httpx.AsyncClient
    instance: str
    images_dir: Path
    backend: str
    saver: Any = None

    async def store_ready(self) -> bool:
        """The checkpoint store answers and has its search indexes (recreated if missing)."""
        await self.coordinator.ping()
        ready = getattr(self.saver, "indexes_ready", None)
        return True if ready is None else bool(await ready())


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


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app; nothing is opened until the lifespan starts."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services, _ = await asyncio.to_thread(build_services, settings)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        instance = settings.instance_url or "local"
        async with AsyncExitStack() as stack:
            redis_client = None
            if settings.redis_url:
                # A blocking pool: a burst of requests waits for a free connection instead of
                # failing (the default pool raises MaxConnectionsError past its limit).
                # A connection broken by a Redis restart is retried on a fresh one (every
                # write is idempotent: a checkpoint or a write stored twice is stored once).
                retries = {
                    "retry_on_error": [RedisConnectionError, RedisTimeoutError],
                    "socket_timeout": 5,
                }
                pool = aioredis.BlockingConnectionPool.from_url(
                    settings.redis_url,
                    max_connections=64,
                    timeout=10,
                    retry=AsyncRetry(ExponentialBackoff(cap=1.0, base=0.05), 3),
                    **retries,
                )
                redis_client = aioredis.Redis(connection_pool=pool)
                ttl = (
                    {"default_ttl": settings.checkpoint_ttl_minutes, "refresh_on_read": True}
                    if settings.checkpoint_ttl_minutes
                    else None
                )
                saver: Any = FencedRedisSaver(redis_client=redis_client, ttl=ttl)
                await saver.asetup()
                sync_client = redis.Redis.from_url(
                    settings.redis_url,
                    retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), 3),
                    **retries,
                )
                coordinator: Coordinator = RedisCoordinator(redis_client, sync_client=sync_client)
                backend = "redis"
            else:
                saver = await stack.enter_async_context(
                    FencedSqliteSaver.from_conn_string(str(settings.data_dir / "server.sqlite"))
                )
                coordinator = LocalCoordinator(settings.data_dir / "threads.json")
                backend = "sqlite"
                log.warning(
                    "no SEEKGRAPH_REDIS_URL: running as a single instance on SQLite checkpoints"
                )
            graph = build_search_graph(services).compile(
                checkpointer=saver, name="seekgraph-search"
            )
            http = await stack.enter_async_context(httpx.AsyncClient(timeout=None))
            runs = RunManager(graph, coordinator, instance, settings.lock_ttl_ms)
            app.state.seekgraph = AppState(
                settings=settings,
                services=services,
                graph=graph,
                coordinator=coordinator,
                runs=runs,
                keys=ApiKeyStore(settings.api_keys_file, redis_client),
                http=http,
                instance=instance,
                images_dir=settings.data_dir / "images",
                backend=backend,
                saver=saver,
            )
            await stack.enter_async_context(mcp_server.session_manager.run())
            try:
                yield
            finally:
                await runs.shutdown()
                await coordinator.close()
                await aclose_chat_clients()
                close = getattr(services.reranker, "aclose", None)
                if close is not None:
                    await close()

    app = FastAPI(
        title="seekgraph",
        summary="Answers from every source you may see, with citations it can prove.",
        version="0.1.0",
        lifespan=lifespan,
    )

    @app.exception_handler(RedisVLError)
    async def store_reset(request: Request, exc: RedisVLError) -> JSONResponse:
        # the saver's search indexes are gone (Redis restarted empty): recreate, say retry
        log.warning("checkpoint store error on %s: %s", request.url.path, exc)
        await request.app.state.seekgraph.store_ready()
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

    from server.mcp_door import RequireApiKey, build_mcp_server, http_user
    from server.routes import health, internal, langgraph_api, me, runs, threads, v1
    from server.routes.v1 import openai_error

    app.include_router(health.router)
    app.include_router(me.router)
    app.include_router(threads.router)
    app.include_router(runs.router)
    app.include_router(internal.router)
    app.include_router(v1.router)
    app.include_router(langgraph_api.router)

    # MCP over streamable HTTP at /mcp, behind the same API keys. Stateless: any instance
    # can serve any request. DNS-rebinding protection (a Host allow-list) is for servers
    # without credentials; every request here carries an API key a browser cannot forge.
    mcp_server = build_mcp_server(
        lambda: app.state.seekgraph, http_user(lambda: app.state.seekgraph)
    )
    mcp_http = mcp_server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    mcp_endpoint = next(r for r in mcp_http.routes if isinstance(r, Route)).endpoint
    app.router.routes.append(
        Route(
            "/mcp",
            RequireApiKey(mcp_endpoint, lambda: app.state.seekgraph),
            include_in_schema=False,
        )
    )

    static = Path(__file__).parent / "static"
    app.mount("/static", StaticFiles(directory=static), name="static")

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(static / "index.html", headers={"Cache-Control": "no-cache"})

    return app
