"""A tiny SSE reader for tests: frames with id, event, data; comments counted separately."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class Frame:
    id: str | None
    event: str
    data: dict[str, Any]

    @property
    def seq(self) -> int:
        return int((self.id or "x:0").rsplit(":", 1)[1])


@dataclass
class Stream:
    frames: list[Frame] = field(default_factory=list)
    comments: int = 0
    status: int = 0

    def of(self, event: str) -> list[Frame]:
        return [f for f in self.frames if f.event == event]

    @property
    def last_id(self) -> str | None:
        ids = [f.id for f in self.frames if f.id]
        return ids[-1] if ids else None


def parse(lines: Iterator[str], stream: Stream) -> Iterator[Frame]:
    fields: dict[str, str] = {}
    for line in lines:
        if line == "":
            if "event" in fields or "data" in fields:
                frame = Frame(
                    fields.get("id"),
                    fields.get("event", "message"),
                    json.loads(fields.get("data", "{}")),
                )
                stream.frames.append(frame)
                yield frame
            fields = {}
        elif line.startswith(":"):
            stream.comments += 1
        else:
            key, _, value = line.partition(": ")
            fields[key] = value


def read(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    stop_after: int | None = None,
    until: str | None = None,
    stop: Callable[[Frame], bool] | None = None,
    deadline: float = 300,
    **kwargs: Any,
) -> Stream:
    """Read an SSE response; stop (closing the connection) after ``stop_after`` frames, at
    the first frame of type ``until`` or the first that ``stop`` accepts.

    A stream that keeps pinging without ever ending fails after ``deadline`` seconds (the
    read timeout never fires on a live connection): a test fails, it does not hang CI.
    """
    stream = Stream()
    ends_at = time.monotonic() + deadline

    def lines(response: httpx.Response) -> Iterator[str]:
        for line in response.iter_lines():
            if time.monotonic() > ends_at:
                raise TimeoutError(
                    f"{method} {url}: no end in {deadline:g} s, {stream.frames[-3:]}"
                )
            yield line

    with client.stream(method, url, timeout=httpx.Timeout(120, connect=5), **kwargs) as response:
        stream.status = response.status_code
        if response.status_code != 200:
            response.read()
            stream.frames.append(Frame(None, "http_error", response.json()))
            return stream
        for frame in parse(lines(response), stream):
            if stop_after is not None and len(stream.frames) >= stop_after:
                break
            if until is not None and frame.event == until:
                break
            if stop is not None and stop(frame):
                break
    return stream
