"""Turning a run's events into OpenAI chat-completion chunks (pure; no I/O).

Progress becomes ``reasoning_content`` deltas (or ``<think>`` text, or nothing), the answer
becomes content deltas with ``[src:ID]`` citations rewritten as numbered markers ``[1]``,
and the final chunk carries the citations as ``url_citation`` annotations.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from fastapi.responses import JSONResponse

Thinking = Literal["reasoning", "think", "none"]

_CITATION = re.compile(r"\[src:([^\]\s]+)\]")
#: Longest ``[src:…]`` marker held back while its closing bracket has not arrived.
_MAX_MARKER = 300


@dataclass
class Markers:
    """Rewrites ``[src:ID]`` into ``[n]`` in streamed text, numbering sources by first use.

    A marker split across two tokens is held back until it is complete.
    """

    numbers: dict[str, int] = field(default_factory=dict)
    pending: str = ""
    emitted: str = ""

    def _number(self, match: re.Match[str]) -> str:
        source_id = match.group(1)
        number = self.numbers.setdefault(source_id, len(self.numbers) + 1)
        return f"[{number}]"

    def feed(self, text: str) -> str:
        """The part of ``pending + text`` that can be shown now, rewritten."""
        self.pending += text
        cut = len(self.pending)
        start = self.pending.rfind("[")
        if start != -1 and "]" not in self.pending[start:]:
            tail = self.pending[start:]
            if len(tail) < _MAX_MARKER and "[src:".startswith(tail[:5]):
                cut = start  # may be the start of a marker: wait for more
        ready, self.pending = self.pending[:cut], self.pending[cut:]
        out = _CITATION.sub(self._number, ready)
        self.emitted += out
        return out

    def flush(self) -> str:
        """Whatever was held back."""
        out = _CITATION.sub(self._number, self.pending)
        self.pending = ""
        self.emitted += out
        return out


def citation_annotations(
    text: str, numbers: dict[str, int], citations: list[dict[str, Any]]
) -> list[Any]:
    """One ``url_citation`` per marker in ``text``: where it is, and what it names."""
    by_id = {c["id"]: c for c in citations}
    by_number = {n: by_id.get(source_id) for source_id, n in numbers.items()}
    ids = {n: source_id for source_id, n in numbers.items()}
    out: list[Any] = []
    for match in re.finditer(r"\[(\d+)\]", text):
        number = int(match.group(1))
        citation = by_number.get(number)
        if citation is None:
            continue
        out.append(
            {
                "type": "url_citation",
                "url_citation": {
                    "start_index": match.start(),
                    "end_index": match.end(),
                    "title": citation["title"],
                    "url": citation.get("url") or f"seekgraph:{citation['doc_id']}",
                    "source_id": ids[number],
                    "marker": number,
                    "quote": citation.get("snippet", ""),
                    "source": citation.get("source"),
                    "updated_at": citation.get("updated_at"),
                },
            }
        )
    return out


def progress_line(event: str, data: dict[str, Any]) -> str | None:
    """A line of visible thinking for a progress event, or None."""
    if event == "node":
        return f"{data['node']}: {data['summary']}\n"
    if event == "snapshot":
        return "".join(f"{s['node']}: {s['summary']}\n" for s in data.get("steps", []))
    if event == "error":
        return f"error: {data.get('message', '')}\n"
    return None


@dataclass
class Completion:
    """The state of one chat completion built from a run's events."""

    completion_id: str
    model: str
    thinking: Thinking
    created: int = field(default_factory=lambda: int(time.time()))
    markers: Markers = field(default_factory=Markers)
    reasoning: str = ""
    answer_seen: str = ""
    final: dict[str, Any] = field(default_factory=dict)
    status: str = "running"
    thinking_open: bool = False
    content: str = ""
    """Everything sent as content so far (``<think>`` text included), as the client has it."""

    def chunk(
        self, delta: dict[str, Any], finish: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        """One ``chat.completion.chunk``."""
        self.content += delta.get("content", "")
        return {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }

    def _think(self, text: str) -> list[dict[str, Any]]:
        self.reasoning += text
        if self.thinking == "reasoning":
            return [self.chunk({"reasoning_content": text})]
        if self.thinking == "think":
            opener = "" if self.thinking_open else "<think>\n"
            self.thinking_open = True
            return [self.chunk({"content": opener + text})]
        return []

    def _close_think(self) -> list[dict[str, Any]]:
        if self.thinking == "think" and self.thinking_open:
            self.thinking_open = False
            return [self.chunk({"content": "</think>\n\n"})]
        return []

    def _say(self, text: str) -> list[dict[str, Any]]:
        shown = self.markers.feed(text)
        return [*self._close_think(), self.chunk({"content": shown})] if shown else []

    def on_event(self, event: str, data: dict[str, Any]) -> list[dict[str, Any]]:
        """Chunks for one run event."""
        if event == "snapshot":  # a resumed run: what happened so far, then the answer so far
            chunks = self._think(progress_line(event, data) or "")
            if data.get("answer"):
                self.answer_seen += data["answer"]
                chunks += self._say(data["answer"])
            if data.get("status") in ("done", "error") and data.get("citations") is not None:
                self.final = {k: data.get(k) for k in ("answer", "citations", "mode")}
            return chunks
        if event == "token":
            self.answer_seen += data["text"]
            return self._say(data["text"])
        if event == "answer":
            self.final = data
            answer = data.get("answer") or ""
            if not self.answer_seen.strip():  # extractive mode streams no tokens
                self.answer_seen = answer
                return self._say(answer)
            if answer.strip() != self.answer_seen.strip():  # a later round rewrote it
                self.answer_seen = answer
                return self._say("\n\n(revised after checking its citations)\n\n" + answer)
            return []
        if event == "end":
            self.status = data.get("status", "done")
            return []
        line = progress_line(event, data)
        return self._think(line) if line else []

    def finish(self, usage: dict[str, int]) -> dict[str, Any]:
        """The last chunk: held-back text, the citations as annotations, and the usage."""
        tail = self.markers.flush()
        delta: dict[str, Any] = {"content": tail} if tail else {}
        last = self.chunk(delta, "stop" if self.status == "done" else "length")
        delta["annotations"] = citation_annotations(
            self.content, self.markers.numbers, self.final.get("citations") or []
        )
        return {**last, "usage": usage, "seekgraph": {"status": self.status}}

    def message(self, usage: dict[str, int], thread_id: str, run_id: str | None) -> dict[str, Any]:
        """The whole (non-streamed) completion."""
        self.finish(usage)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": self.content,
            "annotations": citation_annotations(
                self.content, self.markers.numbers, self.final.get("citations") or []
            ),
        }
        if self.thinking == "reasoning":
            message["reasoning_content"] = self.reasoning
        return {
            "id": self.completion_id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "stop" if self.status == "done" else "length",
                }
            ],
            "usage": usage,
            "seekgraph": {"thread_id": thread_id, "run_id": run_id, "status": self.status},
        }


def usage_of(values: dict[str, Any]) -> dict[str, int]:
    """Model tokens the run spent: all calls; the answer-writing ones as completion tokens."""
    calls = values.get("model_calls") or []
    total = int((values.get("budget") or {}).get("tokens_used") or sum(c["tokens"] for c in calls))
    completion = sum(int(c["tokens"]) for c in calls if c.get("node") == "integrate")
    completion = min(completion, total)
    return {
        "prompt_tokens": total - completion,
        "completion_tokens": completion,
        "total_tokens": total,
    }


ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("not_found_error", "not_found"),
    409: ("conflict_error", "run_in_progress"),
    422: ("invalid_request_error", "invalid_value"),
    429: ("rate_limit_error", "rate_limit_exceeded"),  # OpenAI clients back off on it
    503: ("service_unavailable", "store_unavailable"),
}


def openai_error(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """An error in OpenAI's format, with the same message the native API gives."""
    kind, code = ERROR_TYPES.get(status, ("server_error", None))
    if status == 404 and message.startswith("no model"):
        code = "model_not_found"
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return JSONResponse(status_code=status, content=body, headers=dict(headers or {}))
