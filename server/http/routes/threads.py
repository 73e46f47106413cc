"""Threads: create, list, and read their checkpointed state and history."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import APIRouter, HTTPException, Response

from seekgraph.graph.inspect import question_state, steps_of
from seekgraph.server.app_state import AppState
from seekgraph.server.http.api_models import HistoryItem, StateOut, ThreadOut
from seekgraph.server.http.deps import STORE_DOWN, AppDep, ThreadDep, UserDep
from seekgraph.server.observe import prices_of
from seekgraph.server.thread_ids import new_thread_id

router = APIRouter(prefix="/threads", tags=["threads"])


@router.post("", status_code=201)
async def create_thread(app: AppDep, user: UserDep) -> ThreadOut:
    """A new thread owned by the caller."""
    thread_id = new_thread_id()
    try:
        await app.coordinator.create_thread(thread_id, user.name)
    except STORE_DOWN:
        raise HTTPException(503, "the thread store is unreachable; try again shortly") from None
    return ThreadOut(
        thread_id=thread_id,
        owner=user.name,
        created_at=iso(await app.coordinator.created_at(thread_id)),
    )


@router.get("")
async def list_threads(app: AppDep, user: UserDep) -> list[ThreadOut]:
    """The caller's threads, newest first."""
    try:
        ids = await app.coordinator.threads_of(user.name)
    except STORE_DOWN:
        raise HTTPException(503, "the thread store is unreachable; try again shortly") from None
    return [
        ThreadOut(
            thread_id=t,
            owner=user.name,
            title=await app.coordinator.title(t),
            created_at=iso(await app.coordinator.created_at(t)),
        )
        for t in ids
    ]


async def remove_thread(app: AppState, thread_id: str) -> None:
    """Delete the thread with every key it made, at once; 409 while a run has it."""
    try:
        holder = await app.coordinator.holder(thread_id)
        if holder is not None:
            run_id = holder.split("@", 1)[0]
            raise HTTPException(
                409,
                f"thread {thread_id} has a live or queued run ({run_id}); cancel it first",
            )
        if app.retention is not None:
            await app.retention.delete(thread_id)
    except STORE_DOWN:
        raise HTTPException(503, "the thread store is unreachable; try again shortly") from None
    handle = app.runs.live(thread_id)
    if handle is not None:
        app.runs.forget(handle)


@router.delete("/{thread_id}", status_code=204)
async def delete_thread(app: AppDep, thread_id: ThreadDep) -> Response:
    """Delete the thread: its checkpoints, runs, events and record, all at once."""
    await remove_thread(app, thread_id)
    return Response(status_code=204)


def iso(epoch: float | None) -> str | None:
    """Epoch seconds as ISO 8601 in UTC."""
    return None if epoch is None else dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat()


def summarise(values: dict[str, Any], prices: dict[str, float] | None = None) -> dict[str, Any]:
    """What a person wants to see of one checkpoint (with its model usage so far)."""
    out: dict[str, Any] = {
        k: values[k]
        for k in (
            "question",
            "mode",
            "variants",
            "verdict",
            "documents_read",
            "answer_check",
            "forced_reason",
            "answer",
            "source_failures",
            "filter_log",
            "plan",
            "plan_status",
            "trace_id",
        )
        if values.get(k) not in (None, [], "")
    }
    if values.get("results"):  # a research run: each sub-question's outcome
        out["results"] = {
            i: {"status": r["status"], "reason": r["reason"]} for i, r in values["results"].items()
        }
    if values.get("evidence"):
        out["evidence"] = [
            {
                "id": e["source_id"],
                "title": e["title"],
                "kept_by": e["kept_by"],
                "scores": e["scores"],
            }
            for e in values["evidence"]
        ]
    calls = [c for c in values.get("model_calls") or [] if c.get("tokens")]
    if calls:
        prices = prices or {}
        out["usage"] = {
            "tokens": sum(int(c["tokens"]) for c in calls),
            "cost_usd": round(
                sum(int(c["tokens"]) * prices.get(c["model"], 0.0) / 1e6 for c in calls), 6
            ),
        }
    if "budget" in values:
        b = values["budget"]
        keys = ("rounds", "max_rounds", "tokens_used", "bad_attempts", "started", "max_seconds")
        out["budget"] = {k: b[k] for k in keys if k in b}
    return out


def _checkpoint_id(config: Any) -> str | None:
    value = (config or {}).get("configurable", {}).get("checkpoint_id")
    return None if value is None else str(value)


@router.get("/{thread_id}/state")
async def thread_state(app: AppDep, thread_id: ThreadDep) -> StateOut:
    """The latest checkpoint of the thread, with its latest question's whole search state."""
    shown = await app.shown_graph_of(thread_id)
    snap = await shown.aget_state({"configurable": {"thread_id": thread_id}})
    return StateOut(
        thread_id=thread_id,
        values=await question_state(shown, thread_id),
        next=list(snap.next),
        pending_tasks=len(snap.tasks),
        checkpoint_id=_checkpoint_id(snap.config),
    )


@router.get("/{thread_id}/history")
async def thread_history(app: AppDep, thread_id: ThreadDep) -> list[HistoryItem]:
    """The state after every step, oldest first: what each node decided and why."""
    items: list[HistoryItem] = []
    prices = prices_of(app.settings.model_prices)
    for snap, wrote in await steps_of(await app.shown_graph_of(thread_id), thread_id):
        meta = snap.metadata or {}
        items.append(
            HistoryItem(
                checkpoint_id=_checkpoint_id(snap.config),
                parent_checkpoint_id=_checkpoint_id(snap.parent_config),
                checkpoint_ns=str(
                    (snap.config or {}).get("configurable", {}).get("checkpoint_ns", "")
                ),
                step=meta.get("step"),
                wrote=wrote,
                next=list(snap.next),
                created_at=snap.created_at,
                summary=summarise(snap.values or {}, prices),
            )
        )
    return items
