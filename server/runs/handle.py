"""A run's numbered events and their folded snapshot, and who waits for more.

A ``RunHandle`` keeps every event of a run (ids ``run:seq``) and a folded view of them (the
snapshot a reconnecting client receives instead of a replay). The executor of a run emits
into it; a *replica* on another instance appends what the executor published.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from seekgraph.graph.api import empty_fold, fold_event


@dataclass
class Event:
    """One numbered event of a run."""

    seq: int
    type: str
    data: dict[str, Any]


@dataclass
class RunHandle:
    """A run's events, their folded snapshot, and who waits for more."""

    run_id: str
    thread_id: str
    owner: str
    seq: int = 0
    events: list[Event] = field(default_factory=list)
    fold: dict[str, Any] = field(default_factory=dict)
    protocol_seq: int = 0
    protocol: list[Event] = field(default_factory=list)
    """The LangGraph protocol's events of this run (``metadata``, ``values``, ``updates``,
    ``custom``, ``end``), numbered apart from the native ones and kept for replay."""
    values: dict[str, Any] | None = None
    """The latest state values (the protocol's snapshot on a reconnect)."""
    record_protocol: bool = False
    """Keep every ``values`` and ``updates`` event for replay (runs started through the
    LangGraph protocol); other runs keep only the latest values, sent on a protocol join."""
    done: bool = False
    status: str = "running"
    lost_lock: bool = False
    limit_key: str = ""
    """Whose live-run slot this run holds (the key id that started it)."""
    finished_at: float | None = None
    task: asyncio.Task[None] | None = None
    sink: Callable[[str, Event], None] | None = None
    """Called with (channel, event) as each event is emitted (publishes it for other
    instances when the run executes on a worker)."""
    cancel: str = ""
    """The cancel action this run was stopped by (``interrupt`` or ``rollback``)."""
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        if not self.fold:
            self.fold = empty_fold(self.run_id, self.thread_id)

    def emit(self, type_: str, data: dict[str, Any]) -> Event:
        """Number an event, fold it into the snapshot and wake the followers."""
        self.seq += 1
        event = Event(self.seq, type_, data)
        self.events.append(event)
        fold_event(self.fold, type_, data)
        self._wake()
        if self.sink is not None:
            self.sink("native", event)
        return event

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def append(self, channel: str, event: Event) -> None:
        """Add an event numbered elsewhere (a replica of a run another process executes)."""
        if channel == "native":
            self.seq = event.seq
            self.events.append(event)
            fold_event(self.fold, event.type, event.data)
        else:
            self.protocol_seq = event.seq
            self.protocol.append(event)
            if event.type == "values":
                self.values = event.data
        self._wake()

    def emit_protocol(self, type_: str, data: Any) -> Event:
        """Number a LangGraph-protocol event and wake the followers."""
        self.protocol_seq += 1
        event = Event(self.protocol_seq, type_, data)
        self.protocol.append(event)
        self._wake()
        if self.sink is not None:
            self.sink("protocol", event)
        return event

    def snapshot(self) -> Event:
        """Everything so far as one event, numbered with the latest sequence number."""
        return Event(self.seq, "snapshot", {**self.fold, "seq": self.seq})

    def finish(self) -> None:
        """Mark the run done and wake the followers."""
        self.done = True
        self.finished_at = time.monotonic()
        self._changed.set()

    async def follow(self, after: int, channel: str = "native") -> AsyncIterator[Event]:
        """Events numbered after ``after``, live, until the run ends.

        ``channel``: ``native`` (the SSE protocol) or ``protocol`` (the LangGraph one).
        """
        while True:
            waiter = self._changed
            events = self.events if channel == "native" else self.protocol
            last = self.seq if channel == "native" else self.protocol_seq
            for event in events[bisect.bisect_right(events, after, key=lambda e: e.seq) :]:
                if event.seq > after:
                    after = event.seq
                    yield event
            if self.done and after >= last:
                return
            await waiter.wait()

    @property
    def first_seq(self) -> int:
        """Sequence number before this handle's first event (a takeover continues numbering)."""
        return self.events[0].seq - 1 if self.events else self.seq
