"""One key's request rate is one budget, whichever instance on the same Redis it calls.

Two apps in process on one real Redis, each with its own connections, as two
``seekgraph serve`` instances would be: the rate is counted in Redis (``limits``' moving
window), not per process.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx

from seekgraph.server.auth import add_key_to_file
from seekgraph.server.http.app import create_app
from seekgraph.server.settings import Settings

PER_MINUTE = 3


@asynccontextmanager
async def instance(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """One app, its lifespan entered in the test's task, and a client of it."""
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield client


async def test_two_instances_on_one_redis_share_a_keys_request_rate(
    redis_url: str, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.json"
    busy, other = add_key_to_file(keys, "bob"), add_key_to_file(keys, "bob")
    settings = Settings(
        data_dir=tmp_path / "data",
        api_keys_file=keys,
        redis_url=redis_url,
        queue=f"test-rate-{uuid.uuid4().hex[:8]}",
        rate_limit_per_minute=PER_MINUTE,
    )
    headers = {"Authorization": f"Bearer {busy}"}
    async with AsyncExitStack() as stack:
        a = await stack.enter_async_context(instance(settings))
        b = await stack.enter_async_context(instance(settings))
        first = [(await a.get("/me", headers=headers)).status_code for _ in range(2)]
        last = await b.get("/me", headers=headers)
        refused = await b.get("/me", headers=headers)  # the fourth within a minute
        refused_on_a = await a.get("/me", headers=headers)
        another_key = await b.get("/me", headers={"Authorization": f"Bearer {other}"})
    assert first == [200, 200] and last.status_code == 200
    for r in (refused, refused_on_a):
        assert r.status_code == 429, r.text
        assert f"more than {PER_MINUTE} requests a minute" in r.json()["detail"]
        assert 1 <= int(r.headers["retry-after"]) <= 60
    assert another_key.status_code == 200  # another key is not held back
