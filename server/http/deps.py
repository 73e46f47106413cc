"""Typed dependencies: the shared app state, the caller, and a thread the caller owns."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Path, Request
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from seekgraph.graph.api import UnknownUserError, User
from seekgraph.server.app_state import AppState
from seekgraph.server.caller import CALLER, Caller, door_of, key_id
from seekgraph.server.thread_ids import BadThreadIdError, canonical_thread_id

STORE_DOWN = (RedisConnectionError, RedisTimeoutError, OSError)


def get_app_state(request: Request) -> AppState:
    """The state built at start-up."""
    state: AppState = request.app.state.seekgraph
    return state


AppDep = Annotated[AppState, Depends(get_app_state)]


async def current_user(request: Request, app: AppDep) -> User:
    """The user of the bearer API key; 401 without a valid one."""
    header = request.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise HTTPException(
            401,
            "send an API key: Authorization: Bearer <key>",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return await user_for_key(app, key.strip(), door_of(request.url.path))


async def user_for_key(app: AppState, key: str, door: str) -> User:
    """The user of an API key; 401 for an unknown key, 403 for a user the workspace lacks.

    The request's ``Caller`` (user, key id, door) is set for what the request does next,
    and the key's request rate is counted (429 past it).
    """
    try:
        name = await app.keys.user_for(key)
    except STORE_DOWN:
        raise HTTPException(503, "the key store is unreachable; try again shortly") from None
    if name is None:
        raise HTTPException(401, "unknown API key", headers={"WWW-Authenticate": "Bearer"})
    try:
        user = app.services.registry.user(name)
    except UnknownUserError:
        raise HTTPException(403, "this key's user is not known to the workspace") from None
    caller = Caller(user=user.name, key_id=key_id(key), door=door)
    CALLER.set(caller)
    await within_rate(app, caller.key_id)
    return user


async def within_rate(app: AppState, key: str) -> None:
    """Count a request with the key ``key`` (its id); 429 with ``Retry-After`` past the rate."""
    try:
        wait = await app.limits.hit(key, app.settings.rate_limit_per_minute)
    except STORE_DOWN:
        raise HTTPException(503, "the limits store is unreachable; try again shortly") from None
    if wait is not None:
        app.metrics.limited.labels("rate").inc()
        raise HTTPException(
            429,
            f"more than {app.settings.rate_limit_per_minute} requests a minute with this "
            "key; wait and try again",
            headers={"Retry-After": str(max(1, round(wait)))},
        )


UserDep = Annotated[User, Depends(current_user)]


async def owned_thread(app: AppDep, user: UserDep, thread_id: Annotated[str, Path()]) -> str:
    """The canonical thread id, when the caller owns it; 404 otherwise (exists or not)."""
    return await own_thread(app, user, thread_id)


def thread_id_of(raw: str) -> str:
    """The canonical form of a thread id a client sent; 422 when it is not one."""
    try:
        return canonical_thread_id(raw)
    except BadThreadIdError as exc:
        raise HTTPException(422, str(exc)) from None


async def own_thread(app: AppState, user: User, raw: str) -> str:
    """The canonical id of ``raw`` when ``user`` owns it; 404 otherwise (exists or not).

    Every door checks ownership here, and uses the id it returns from then on. The thread
    is renewed (``server.runs.retention``): reading or continuing it keeps it.
    """
    thread_id = thread_id_of(raw)
    try:
        owner = await app.coordinator.owner(thread_id)
        if owner == user.name and app.retention is not None:
            await app.retention.touch(thread_id)  # read or continued: kept from now
    except STORE_DOWN:
        raise HTTPException(503, "the thread store is unreachable; try again shortly") from None
    if owner != user.name:
        raise HTTPException(404, f"no thread {thread_id}")
    return thread_id


ThreadDep = Annotated[str, Depends(owned_thread)]
