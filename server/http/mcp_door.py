"""The MCP door: seekgraph's permissioned search as tools for agents.

Served over streamable HTTP at ``/mcp`` (the API key in ``Authorization: Bearer`` names the
user, exactly as on the API) and over stdio by ``seekgraph mcp`` (the user from
``--key`` or ``--user``). Tools: ``search`` (passages, for agents that reason for themselves),
``ask`` (a run of the search graph: answer, citations, conflicts, what was not found),
``research`` (a cited report, run as a background job; cancelling the call stops it),
``read_document`` (a whole document the user may read); the sources the user may search are
the resource ``seekgraph://sources/{kind}`` (``all`` or a kind). Every tool acts as the user
and each source enforces its own permissions.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from seekgraph.graph.api import MAX_SOURCES, UnknownSourceError, UnknownUserError, User
from seekgraph.server.audit import AuditEntry
from seekgraph.server.caller import CALLER, Caller, bearer_key, key_id
from seekgraph.server.service.errors import ServiceError
from seekgraph.server.service.requests import RunRequest
from seekgraph.server.service.run_service import RunService
from seekgraph.server.service.streams import events

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
#: Seconds a source may take in the ``search`` tool before it is reported as failed.
SOURCE_TIMEOUT = 20.0


class Passage(BaseModel):
    """One passage a source found."""

    id: str = Field(description="Stable passage id; cite it as [src:ID].")
    doc_id: str = Field(description="The document it belongs to (for read_document).")
    title: str
    source: str
    kind: str = Field(description="kb, docs, messages or notes.")
    updated_at: str | None
    deprecated: bool
    score: float = Field(description="The source's own score, 0..1.")
    text: str
    url: str | None


class SearchResult(BaseModel):
    """Passages for a query, best first, from every source searched."""

    query: str
    passages: list[Passage]
    failed_sources: list[str] = Field(description="Sources that did not answer, and why.")


class CitedSource(BaseModel):
    """A source the answer cites."""

    id: str
    title: str
    source: str
    kind: str
    url: str | None
    updated_at: str | None
    quote: str


class AskResult(BaseModel):
    """The answer of a search run."""

    answer: str
    mode: str | None
    citations: list[CitedSource]
    conflicts: list[dict[str, Any]]
    unanswered: list[str] = Field(description="What could not be found.")
    notes: list[str]
    thread_id: str = Field(description="Pass it again to ask a follow-up in the same thread.")
    status: str = Field(description="done, or why the run stopped (error, interrupted).")


class DocumentResult(BaseModel):
    """A whole document (its text cut at ``max_chars``)."""

    doc_id: str
    title: str
    source: str
    kind: str
    url: str | None
    updated_at: str | None
    version: str | None
    deprecated: bool
    text: str
    truncated: bool


async def result_of(frames: AsyncIterator[bytes], thread: str, ctx: Context) -> AskResult:
    """A run's result from its frames, reporting each step as progress."""
    final: dict[str, Any] = {}
    status, step = "done", 0
    async for event, data in events(frames):
        if event == "node":
            step += 1
            await ctx.report_progress(step, None, f"{data['node']}: {data['summary']}")
        elif event in ("answer", "snapshot") and "citations" in data:
            final = data
        elif event == "end":
            status = data.get("status", "done")
    return AskResult(
        answer=final.get("answer") or "",
        mode=final.get("mode"),
        citations=[
            CitedSource(
                id=c["id"],
                title=c["title"],
                source=c["source"],
                kind=c["kind"],
                url=c.get("url"),
                updated_at=c.get("updated_at"),
                quote=c.get("snippet", ""),
            )
            for c in final.get("citations") or []
        ],
        conflicts=list(final.get("conflicts") or []),
        unanswered=list(final.get("unanswered") or []),
        notes=list(final.get("notes") or []),
        thread_id=thread,
        status=status,
    )


UserOf = Callable[[Context], Awaitable[User]]
#: The tools' shared arguments.
Sources = Annotated[
    list[str], Field(max_length=MAX_SOURCES, description="Sources to search; all if empty.")
]
Question = Annotated[str, Field(min_length=1, max_length=4000)]


def build_mcp_server(app: Callable[[], RunService], user_of: UserOf) -> MCPServer:
    """The MCP server over an app's services; ``user_of`` says who calls."""
    server = MCPServer(
        "seekgraph",
        instructions="Search private knowledge with the caller's permissions. Use `search` to "
        "get passages and reason yourself, `ask` for a cited answer, `research` for a cited "
        "report on a broad question, `read_document` for a whole document.",
    )

    @server.tool(annotations=READ_ONLY)
    async def search(
        query: Annotated[str, Field(min_length=1, max_length=4000)],
        ctx: Context,
        sources: Sources = [],  # noqa: B006
        k: Annotated[int, Field(ge=1, le=50, description="Passages to return.")] = 8,
    ) -> SearchResult:
        """Find passages about `query` in every source the caller may search."""
        state, user = app(), await user_of(ctx)
        await state.services.registry.refresh_sources()
        try:
            chosen = state.services.registry.select(sources)
        except UnknownSourceError as exc:
            raise ToolError(str(exc.args[0])) from None
        answers = await asyncio.gather(
            *(asyncio.wait_for(s.search(query, user, k), SOURCE_TIMEOUT) for s in chosen),
            return_exceptions=True,
        )
        passages: list[Passage] = []
        failed: list[str] = []
        for source, answer in zip(chosen, answers, strict=True):
            if isinstance(answer, BaseException):
                failed.append(f"{source.name}: {type(answer).__name__}")
                continue
            passages += [
                Passage(
                    id=h["source_id"],
                    doc_id=h["doc_id"],
                    title=h["title"],
                    source=h["source"],
                    kind=h["kind"],
                    updated_at=h["updated_at"],
                    deprecated=h["deprecated"],
                    score=h["score"],
                    text=h["snippet"],
                    url=h["url"],
                )
                for h in answer
            ]
        passages.sort(key=lambda p: -p.score)
        await audit_shown(state, user.name, "search", [p.doc_id for p in passages[:k]])
        return SearchResult(query=query, passages=passages[:k], failed_sources=failed)

    @server.tool(annotations=READ_ONLY)
    async def ask(
        question: Question,
        ctx: Context,
        sources: Sources = [],  # noqa: B006
        mode: Literal["auto", "llm", "extractive"] = "auto",
        thread_id: Annotated[
            str | None, Field(max_length=200, description="Continue this thread.")
        ] = None,
    ) -> AskResult:
        """Answer `question` from the caller's sources, with citations it can prove."""
        state, user = app(), await user_of(ctx)
        request = RunRequest(question=question, sources=sources, mode=mode)
        try:
            thread = await state.thread_for(user, thread_id)
            frames, _ = await state.run_frames(user, thread, request)
        except ServiceError as exc:  # the service's refusal: the same message as the API's
            raise ToolError(exc.detail) from None
        return await result_of(frames, thread, ctx)

    @server.tool(annotations=READ_ONLY)
    async def research(
        question: Question,
        ctx: Context,
        sources: Sources = [],  # noqa: B006
    ) -> AskResult:
        """Write a cited research report on `question` (minutes: progress is reported).

        It runs as a background job on the server's workers; cancelling the call stops it
        (what it finished is kept on its thread).
        """
        state, user = app(), await user_of(ctx)
        request = RunRequest(question=question, sources=sources, flow="research", stream=False)
        try:
            thread = await state.thread_for(user, None)
            started = await state.start_run(user, thread, request)
        except ServiceError as exc:
            raise ToolError(exc.detail) from None
        frames = state.started_frames(started, user.name)
        try:
            return await result_of(frames, thread, ctx)
        except asyncio.CancelledError:  # the client cancelled the call: stop the run too
            await asyncio.shield(state.cancel_run(thread, started.run_id, "interrupt"))
            raise

    @server.tool(annotations=READ_ONLY)
    async def read_document(
        doc_id: Annotated[str, Field(min_length=1, max_length=1000)],
        ctx: Context,
        max_chars: Annotated[int, Field(ge=100, le=200_000)] = 20_000,
    ) -> DocumentResult:
        """A whole document the caller may read, by the doc_id a passage names."""
        state, user = app(), await user_of(ctx)
        await state.services.registry.refresh_sources()
        sources = state.services.registry.select()
        named = [s for s in sources if doc_id.startswith(f"{s.name}/")]
        for source in named or sources:
            document = await source.read(doc_id, user)
            if document is not None:
                text = document["text"]
                await audit_shown(state, user.name, "read_document", [document["doc_id"]])
                return DocumentResult(
                    doc_id=document["doc_id"],
                    title=document["title"],
                    source=document["source"],
                    kind=document["kind"],
                    url=document["url"],
                    updated_at=document["updated_at"],
                    version=document["version"],
                    deprecated=document["deprecated"],
                    text=text[:max_chars],
                    truncated=len(text) > max_chars,
                )
        # the same answer whether it does not exist or the caller may not read it
        raise ToolError(f"no document {doc_id!r} that you may read")

    @server.resource("seekgraph://sources/{kind}", mime_type="application/json")
    async def sources_resource(kind: str, ctx: Context) -> dict[str, Any]:
        """The sources the caller may search (``all``, or one kind: kb, docs, messages, notes)."""
        state = app()
        await user_of(ctx)
        await state.services.registry.refresh_sources()
        listed = [
            {"name": s.name, "kind": s.kind, "authority": s.authority}
            for s in state.services.registry.select()
            if kind in ("all", s.kind)
        ]
        if not listed and kind not in ("all", "kb", "docs", "messages", "notes"):
            raise ResourceNotFoundError(f"no kind {kind!r}; use all, kb, docs, messages or notes")
        return {"sources": listed}

    return server


async def audit_shown(state: RunService, user: str, action: str, doc_ids: list[str]) -> None:
    """The audit entry of a tool call that showed documents' content."""
    await state.audit.append(AuditEntry.now(user, action, shown=list(dict.fromkeys(doc_ids))))


def http_user(app: Callable[[], RunService]) -> UserOf:
    """Who calls over HTTP: the user of the request's API key."""

    async def user_of(ctx: Context) -> User:
        state = app()
        key = bearer_key(ctx.headers)
        name = await state.keys.user_for(key) if key else None
        if key is None or name is None:
            raise ToolError("unknown API key")
        try:
            user = await state.services.registry.user_now(name)
        except UnknownUserError:
            raise ToolError("this key's user is not known to the workspace") from None
        CALLER.set(Caller(user=user.name, key_id=key_id(key), door="mcp"))
        return user

    return user_of
