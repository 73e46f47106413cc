"""Why the run service refuses: domain errors that know nothing of HTTP, MCP or OpenAI.

Each door maps them to its own shape in one place: the HTTP doors in
``server.http.errors`` (status, ``detail``, ``Retry-After``), the OpenAI door to OpenAI's
error body with the same message, the MCP door to a ``ToolError`` with the same message.
Every ``detail`` says what to do next::

    ServiceError
    ├── BadInputError          the request cannot run as sent (what to fix)
    ├── UnauthenticatedError   no key, or a key nobody knows
    ├── ForbiddenError         a known caller who may not do this
    ├── NotFoundError          nothing of the caller's by that name (exists or not)
    ├── ConflictError          the thread or run is not in a state that allows it
    │   └── RunConflictError   another run holds the thread (``run_id`` names it)
    ├── RateLimitedError       too much at once; ``retry_after`` seconds
    │   └── QuotaExceededError the day's model budget is spent
    └── UnavailableError       a store does not answer; try again shortly
"""

from __future__ import annotations


class ServiceError(Exception):
    """A refusal the caller can act on; ``detail`` says what to do."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class BadInputError(ServiceError):
    """The request cannot run as sent; ``detail`` says what to fix."""


class UnauthenticatedError(ServiceError):
    """No API key, or one nobody knows."""


class ForbiddenError(ServiceError):
    """A known caller who may not do this."""


class NotFoundError(ServiceError):
    """Nothing of the caller's by that name (the same whether it exists or not)."""


class ConflictError(ServiceError):
    """The thread or run is not in a state that allows this now."""


class RunConflictError(ConflictError):
    """Another run is live on the thread; ``run_id`` names it (when known)."""

    def __init__(self, thread_id: str, run_id: str | None) -> None:
        super().__init__(
            "a run is already live on this thread; attach to it with "
            f"GET /threads/{thread_id}/stream"
        )
        self.run_id = run_id


class RateLimitedError(ServiceError):
    """Too much at once for this key, thread or user; try again in ``retry_after`` seconds."""

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail)
        self.retry_after = retry_after


class QuotaExceededError(RateLimitedError):
    """The user's daily model budget is spent (``retry_after``: until it renews)."""


class UnavailableError(ServiceError):
    """A store does not answer (or is not ready); nothing was changed."""
