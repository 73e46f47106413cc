"""The native API's threads: create, list, delete, and read their state and history.

A translation of ``RunService`` to the native API's shapes (``server.http.api_models``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import APIRouter, Response

from seekgraph.graph.inspect import question_state, steps_of
from seekgraph.server.http.api_models import HistoryItem, StateOut, ThreadOut
from seekgraph.server.http.deps import Runs, SettingsDep, ThreadDep, UserDep
from seekgraph.server.observe import prices_of

router = APIRouter(prefix="/threads", tags=["threads"])


@router.post("", status_code=201)
async def create_thread(runs: Runs, user: UserDep) -> ThreadOut:
    """A new thread owned by the caller."""
    thread_id = await runs.create_thread(user)
    return ThreadOut(
        thread_id=thread_id, owner=user.name, created_at=iso(await runs.created_at(thread_id))
    )


@router.get("")
async def list_threads(runs: Runs, user: UserDep) -> list[ThreadOut]:
    """The caller's threads, newest first."""
    return [
        ThreadOut(
            thread_id=t,
            owner=user.name,
            title=await runs.title(t),
            created_at=iso(await runs.created_at(t)),
        )
        for t in await runs.threads_of(user)
    ]


@router.delete("/{thread_id}", status_code=204)
async def delete_thread(runs: Runs, thread_id: ThreadDep) -> Response:
    """Delete the thread: its checkpoints, runs, events and record, all at once."""
    await runs.delete_thread(thread_id)
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
async def thread_state(runs: Runs, thread_id: ThreadDep) -> StateOut:
    """The latest checkpoint of the thread, with its latest question's whole search state."""
    shown = await runs.shown_graph_of(thread_id)
    snap = await shown.aget_state({"configurable": {"thread_id": thread_id}})
    return StateOut(
        thread_id=thread_id,
        values=await question_state(shown, thread_id),
        next=list(snap.next),
        pending_tasks=len(snap.tasks),
        checkpoint_id=_checkpoint_id(snap.config),
    )


@router.get("/{thread_id}/history")
async def thread_history(
    runs: Runs, settings: SettingsDep, thread_id: ThreadDep
) -> list[HistoryItem]:
    """The state after every step, oldest first: what each node decided and why."""
    items: list[HistoryItem] = []
    prices = prices_of(settings.model_prices)
    for snap, wrote in await steps_of(await runs.shown_graph_of(thread_id), thread_id):
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
