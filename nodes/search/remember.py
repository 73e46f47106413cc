"""``remember``: the thread keeps the finished question and answer as a turn.

The thread's memory is kept one level above the search (whose state starts empty for each
question): later questions read it as ``turns`` (follow-ups, images earlier in the thread).
"""

from __future__ import annotations

from typing import Any

from seekgraph.state.models import Turn
from seekgraph.state.schemas import ThreadState


async def remember(state: ThreadState) -> dict[str, Any]:
    """Append the answered question as a turn; the question's images move into it."""
    turn: Turn = {"question": state["question"], "answer": state["answer"], "mode": state["mode"]}
    # what the answer cited: an answer whose source its person may no longer read is withheld
    turn["cited"] = [
        {"source": c["source"], "doc_id": c["doc_id"]} for c in state.get("citations") or []
    ]
    update: dict[str, Any] = {"turns": [turn]}
    if state.get("images"):
        turn["images"] = state["images"]
        update["images"] = []  # the next question brings its own
    return update
