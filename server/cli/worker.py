"""``seekgraph worker``: a process that executes queued runs (any number of them on one Redis)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from contextlib import AsyncExitStack

from seekgraph.server.app_state import close_app_state, open_app_state
from seekgraph.server.cli.common import CliError
from seekgraph.server.settings import Settings


async def worker_command(args: argparse.Namespace) -> int:
    """Claim and execute runs until SIGTERM/SIGINT, then drain: finish or hand back."""
    overrides = {"worker_concurrency": args.concurrency} if args.concurrency else {}
    settings = Settings(**overrides)
    if not settings.redis_url:
        raise CliError(
            "a worker takes its runs from Redis: set SEEKGRAPH_REDIS_URL (without Redis, "
            "`seekgraph serve` executes its runs itself)"
        )
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    async with AsyncExitStack() as stack:
        state = await open_app_state(settings, stack, role="worker")
        worker = state.worker
        assert worker is not None
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        running = asyncio.create_task(worker.run())
        ingesting = asyncio.create_task(state.ingester.run()) if state.ingester else None
        also = " and ingest batches" if ingesting else ""
        print(
            f"seekgraph worker {worker.name}: up to {worker.concurrency} runs at once{also}",
            file=sys.stderr,
            flush=True,
        )
        try:
            done, _ = await asyncio.wait(
                [running, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED
            )
            if running in done:
                running.result()  # a worker that stopped by itself failed: say why
            print(f"seekgraph worker {worker.name}: draining", file=sys.stderr, flush=True)
            await worker.drain(settings.shutdown_grace_seconds)
            if state.ingester is not None:
                await state.ingester.drain(settings.shutdown_grace_seconds)
        finally:
            running.cancel()
            if ingesting is not None:
                ingesting.cancel()
            await close_app_state(state)
    return 0
