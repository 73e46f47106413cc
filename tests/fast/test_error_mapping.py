"""The run service's refusals as a client of each HTTP door sees them (server.http.errors)."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from seekgraph.server.http.errors import map_service_errors
from seekgraph.server.service.errors import (
    BadInputError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    QuotaExceededError,
    RateLimitedError,
    RunConflictError,
    ServiceError,
    UnauthenticatedError,
    UnavailableError,
)

#: (the refusal, the status a client gets, the headers that say what to do next)
REFUSALS: list[tuple[ServiceError, int, dict[str, str]]] = [
    (BadInputError("unknown flow 'nope'; flows: search, research"), 422, {}),
    (UnauthenticatedError("unknown API key"), 401, {"www-authenticate": "Bearer"}),
    (ForbiddenError("this key's user is not known to the workspace"), 403, {}),
    (NotFoundError("no thread t-1"), 404, {}),
    (ConflictError("thread t-1 has a live or queued run (r1); cancel it first"), 409, {}),
    (
        RateLimitedError("2 runs of this key are live already; wait", retry_after=5),
        429,
        {"retry-after": "5"},
    ),
    (
        QuotaExceededError("your daily model budget of 10 tokens is spent", retry_after=3600),
        429,
        {"retry-after": "3600"},
    ),
    (UnavailableError("the thread store is unreachable; try again shortly"), 503, {}),
]


def client_raising(refusal: ServiceError) -> TestClient:
    """An app with the mapping whose routes, on the native and the OpenAI door, refuse so."""
    app = FastAPI()
    map_service_errors(app)

    @app.get("/threads/t-1")
    async def native() -> None:
        raise refusal

    @app.post("/v1/chat/completions")
    async def openai() -> None:
        raise refusal

    return TestClient(app)


@pytest.mark.parametrize(
    ("refusal", "status", "headers"), REFUSALS, ids=[type(r[0]).__name__ for r in REFUSALS]
)
def test_each_refusal_keeps_its_status_message_and_advice(
    refusal: ServiceError, status: int, headers: dict[str, str]
) -> None:
    """The native API answers ``{"detail": message}``; OpenAI clients get OpenAI's error body."""
    client = client_raising(refusal)

    native = client.get("/threads/t-1")
    assert native.status_code == status
    assert native.json() == {"detail": refusal.detail}
    assert {k: native.headers.get(k) for k in headers} == headers

    openai = client.post("/v1/chat/completions")
    assert openai.status_code == status
    error = openai.json()["error"]
    assert error["message"] == refusal.detail
    assert error["type"] != "server_error"  # a type OpenAI clients act on (retry, back off)
    assert {k: openai.headers.get(k) for k in headers} == headers


def test_a_busy_thread_names_the_run_to_attach_to() -> None:
    """409 with the live run's id and where to attach to it."""
    response = client_raising(RunConflictError("t-1", "run-7")).get("/threads/t-1")
    assert response.status_code == 409
    assert response.json() == {
        "detail": "a run is already live on this thread; attach to it with GET /threads/t-1/stream",
        "run_id": "run-7",
    }
