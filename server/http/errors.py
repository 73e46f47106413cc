"""The one place the run service's domain errors become HTTP answers.

Status, ``detail`` (the error's own message) and headers: ``Retry-After`` for a refusal that
passes with time, ``WWW-Authenticate`` for a missing key, and the ``run_id`` to attach to for
a busy thread. The OpenAI door (``/v1/``) answers with OpenAI's error body and the same message.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from seekgraph.server.http.chat_completions import openai_error
from seekgraph.server.service.errors import (
    BadInputError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    RateLimitedError,
    RunConflictError,
    ServiceError,
    UnauthenticatedError,
    UnavailableError,
)

#: The status of each kind of refusal (the first match in the error's class order wins).
STATUS: dict[type[ServiceError], int] = {
    BadInputError: 422,
    UnauthenticatedError: 401,
    ForbiddenError: 403,
    NotFoundError: 404,
    ConflictError: 409,
    RateLimitedError: 429,
    UnavailableError: 503,
}


def status_of(exc: ServiceError) -> int:
    """The HTTP status of a domain error (500 for one no door knows)."""
    for kind in type(exc).__mro__:
        if kind in STATUS:
            return STATUS[kind]
    return 500


def headers_of(exc: ServiceError) -> dict[str, str]:
    """The headers that tell a client what to do next."""
    if isinstance(exc, RateLimitedError):
        return {"Retry-After": str(exc.retry_after)}
    if isinstance(exc, UnauthenticatedError):
        return {"WWW-Authenticate": "Bearer"}
    return {}


def http_response(request: Request, exc: ServiceError) -> JSONResponse:
    """The answer to a request the service refused."""
    status, headers = status_of(exc), headers_of(exc)
    if request.url.path.startswith("/v1/"):  # OpenAI clients read OpenAI's error format
        return openai_error(status, exc.detail, headers)
    body: dict[str, object] = {"detail": exc.detail}
    if isinstance(exc, RunConflictError):  # the client can attach to the run holding it
        body["run_id"] = exc.run_id
    return JSONResponse(status_code=status, content=body, headers=headers)


def map_service_errors(app: FastAPI) -> None:
    """Answer every ``ServiceError`` a route lets through with its status and message."""

    async def refused(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ServiceError)
        return http_response(request, exc)

    app.add_exception_handler(ServiceError, refused)
