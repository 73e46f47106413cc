"""What a run must pass before it is accepted: its key's limits, its images, the day's tokens.

Every way to start work (``server.service.run_service``) calls these, so a key's limits
are claimed the same way whatever the door: a live slot for a run that holds its thread, a
waiting place (per key and per thread) for one that waits for a busy thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

from seekgraph.graph.api import User
from seekgraph.graph.context import Context
from seekgraph.server.caller import CALLER
from seekgraph.server.images import ImageError, check_images, store_images, stored_bytes
from seekgraph.server.limits import seconds_to_midnight
from seekgraph.server.service.errors import (
    BadInputError,
    QuotaExceededError,
    RateLimitedError,
    UnavailableError,
)
from seekgraph.server.service.stores import STORE_DOWN

if TYPE_CHECKING:
    from seekgraph.server.service.run_service import RunService


async def claim_live(app: RunService, limit_key: str, thread_id: str, token: str) -> None:
    """Count the run holding ``thread_id`` as ``token`` against its key (refused past it).

    The thread's lock is released when the run may not start.
    """
    most = app.settings.max_live_runs_per_key
    if await app.limits.claim_run(limit_key, thread_id, token, most):
        return
    await app.coordinator.release(thread_id, token)
    app.metrics.limited.labels("live_runs").inc()
    raise RateLimitedError(
        f"{most} runs of this key are live already (SEEKGRAPH_MAX_LIVE_RUNS_PER_KEY); wait "
        "for one to end",
        retry_after=5,
    )


async def claim_waiting(app: RunService, limit_key: str, thread_id: str, run_id: str) -> None:
    """Count a run that waits for a busy thread (refused past the key's or thread's bound)."""
    settings = app.settings
    refused = await app.limits.claim_waiting(
        limit_key, thread_id, run_id, settings.max_queued_runs_per_key,
        settings.max_waiting_runs_per_thread, settings.queued_lock_ttl_ms,
    )  # fmt: skip
    if refused is None:
        return
    app.metrics.limited.labels("waiting_runs").inc()
    if refused == "thread":
        detail = (
            f"{settings.max_waiting_runs_per_thread} runs wait for this thread already "
            "(SEEKGRAPH_MAX_WAITING_RUNS_PER_THREAD); wait for them to end"
        )
    else:
        detail = (
            f"{settings.max_queued_runs_per_key} runs of this key wait for their threads "
            "already (SEEKGRAPH_MAX_QUEUED_RUNS_PER_KEY); wait for them to start"
        )
    raise RateLimitedError(detail, retry_after=5)


def limit_key_of(user: User) -> str:
    """What the caller's limits are counted under: its API key's id (else the user's name)."""
    caller = CALLER.get()
    return caller.key_id if caller is not None and caller.user == user.name else user.name


async def accepted_images(
    app: RunService, user: User, limit_key: str, encoded: list[str], earlier: list[Any]
) -> list[Any]:
    """The request's images checked, decoded and stored, off the event loop.

    Their pixels are read from the headers first and bounded per request (``BadInputError``);
    the decoding is bounded per key (``RateLimitedError`` while the key's other requests decode
    too many pixels), so other clients' requests are answered meanwhile.
    """
    if not encoded:
        return []
    settings = app.settings
    try:
        checked = await asyncio.to_thread(
            check_images, encoded, settings.max_images, settings.max_image_bytes,
            settings.max_image_pixels_per_request,
        )  # fmt: skip
    except ImageError as exc:
        raise BadInputError(str(exc)) from None
    most = settings.max_decoding_pixels_per_key
    if not app.decoding.take(limit_key, checked.pixels, most):
        app.metrics.limited.labels("decoding").inc()
        raise RateLimitedError(
            f"this key's requests are decoding {most / 1e6:,.0f} million pixels of images "
            "already (SEEKGRAPH_MAX_DECODING_PIXELS_PER_KEY); wait for them and try again",
            retry_after=2,
        )
    try:
        thread_bytes = await asyncio.to_thread(stored_bytes, app.images_dir, user.name, earlier)
        return await asyncio.to_thread(
            store_images, checked, app.images_dir, user.name, thread_bytes,
            settings.max_thread_image_bytes,
        )  # fmt: skip
    except ImageError as exc:
        raise BadInputError(str(exc)) from None
    finally:
        app.decoding.give(limit_key, checked.pixels)


async def within_daily_tokens(app: RunService, user: User, context: Context) -> Context:
    """The run's context with its token budget cut to what is left of the user's day.

    ``QuotaExceededError`` (retry after the next UTC day begins) when the day's tokens are spent.
    """
    budget = app.settings.daily_tokens_per_user
    if budget is None:
        return context
    try:
        used, _ = await app.limits.usage_today(user.name)
    except STORE_DOWN:
        raise UnavailableError("the limits store is unreachable; try again shortly") from None
    if used >= budget:
        app.metrics.limited.labels("daily_tokens").inc()
        raise QuotaExceededError(
            f"your daily model budget of {budget} tokens is spent ({used} used today, UTC); "
            "it renews at midnight UTC",
            retry_after=seconds_to_midnight(),
        )
    tokens = min(context.budget.max_tokens, budget - used)
    return dataclasses.replace(
        context, budget=dataclasses.replace(context.budget, max_tokens=tokens)
    )
