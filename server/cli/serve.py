"""``seekgraph serve`` (the HTTP doors, with an in-process worker) and ``seekgraph mcp``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from seekgraph.graph.api import UnknownUserError
from seekgraph.server.cli.common import CliError, settings_of, user_of_args
from seekgraph.server.settings import Settings


def serve(args: argparse.Namespace) -> int:
    """Run the HTTP server with uvicorn."""
    import uvicorn

    from seekgraph.server.http.app import create_app
    from seekgraph.server.http.http_guard import guarded_protocol

    settings = Settings(**({"worker": False} if args.no_worker else {}))  # type: ignore[arg-type]
    if not settings.redis_url:
        if args.no_worker:
            raise CliError("--no-worker needs SEEKGRAPH_REDIS_URL: workers take runs from Redis")
        print(
            "seekgraph: no SEEKGRAPH_REDIS_URL — one instance, SQLite checkpoints", file=sys.stderr
        )
    uvicorn.run(
        create_app(settings),
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        http=guarded_protocol(settings.header_timeout_seconds, settings.request_timeout_seconds),
        limit_concurrency=settings.max_connections,
        timeout_graceful_shutdown=settings.shutdown_grace_seconds,
    )
    return 0


async def serve_mcp_stdio(args: argparse.Namespace) -> int:
    """Serve the MCP tools on stdin/stdout as one user (desktop assistants launch this)."""
    from seekgraph.server.caller import CALLER, Caller, key_id
    from seekgraph.server.http.app import create_app
    from seekgraph.server.http.mcp_door import build_mcp_server

    settings = settings_of(args)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        state = app.state.seekgraph
        if args.key:
            name = await state.keys.user_for(args.key)
            if name is None:
                raise CliError("unknown API key (is SEEKGRAPH_API_KEYS_FILE set?)")
        else:
            name = user_of_args(args, settings, state.services)
        try:
            user = state.services.registry.user(name)
        except UnknownUserError:
            raise CliError(f"the key's user {name!r} is not known to the workspace") from None

        caller = Caller(user=user.name, key_id=key_id(args.key) if args.key else "", door="mcp")

        async def user_of(_ctx: Any) -> Any:
            CALLER.set(caller)  # its audit entries name the door (and the key, if one)
            return user

        server = build_mcp_server(lambda: state.service, user_of)
        await server.run_stdio_async()
    return 0
