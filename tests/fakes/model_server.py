"""A small OpenAI-compatible chat server for tests (the one edge that cannot run here).

It answers each seekgraph prompt by its role: queries, grades, verdicts, a streamed answer
citing the first source it was given, an answer check, and the research flow's plan (three
sub-questions, the third depending on the first), sections (two sentences citing their first
passages), coherence pass (sections reversed, a repeated citation dropped) and gap round
(one sub-question naming the first thing not found). ``--delay``
slows every streamed answer token, so a test can catch a run mid-answer.

A test scripts failures with ``POST /script`` (a list of steps, one consumed per call):
``{"status": 503}``, ``{"sleep": 5}``, ``{"drop": true}`` (connection closed mid-response),
``{"content": "raw reply"}``, ``{"fail_after": 3}`` (stream 3 chunks, then drop),
``{"stall_after": 3, "stall": 5}`` (stream 3 chunks, then stay silent 5 s), a status with the
server's own words (``{"status": 400, "message": "…"}``), or ``{"alternate": 503}`` (every
other call fails with that status, until ``/script`` again). ``GET /calls`` counts the calls
served and shows the last requests' fields (``response_format``, the two length fields).

    python -m tests.fakes.model_server --port 9000 --delay 0.05 --tokens 60
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse


def reply_for(prompt: str, tokens: int) -> str:
    """What a well-behaved model would say to one of seekgraph's prompts."""
    if "<role>You write search queries" in prompt:
        return json.dumps({"queries": []})
    if "<role>You judge whether passages" in prompt:
        ids = re.findall(r'<passage id="([^"]+)"', prompt)
        return json.dumps({"grades": [{"id": i, "score": 0.9} for i in ids]})
    if "<role>You decide whether the evidence" in prompt:
        return json.dumps(
            {"action": "answer", "reason": "enough", "read_doc_ids": [], "gap_questions": []}
        )
    if "<role>You check an answer" in prompt:
        return json.dumps({"supported": True, "definitive": True, "problems": []})
    if "<role>You plan research" in prompt:
        return json.dumps({"sub_questions": research_plan(prompt)})
    if "<role>You write one section" in prompt:
        found = re.findall(r'<passage id="([^"]+)" title="[^"]*">(.*?)</passage>', prompt, re.S)
        return json.dumps(
            {
                "sentences": [
                    {"text": f"The sources say: {' '.join(text.split()[:10])}", "source_id": i}
                    for i, text in found[:2]
                ]
            }
        )
    if "<role>You find what a research report still lacks" in prompt:
        lacking = re.findall(r"^- (.+?):", prompt.split("<not_found>", 1)[1], re.M)
        return json.dumps({"questions": [f"Which sources mention {q}" for q in lacking[:1]]})
    if "<role>You edit a research report" in prompt:
        return json.dumps({"sections": edited(prompt)})
    ids = re.findall(r'<source id="([^"]+)"', prompt)
    cite = f" [src:{ids[0]}]" if ids else ""
    words = " ".join(f"w{i}" for i in range(tokens))
    return f"Answer {words}{cite}."


def research_plan(prompt: str) -> list[dict[str, Any]]:
    """Two sub-questions on the first topics found, and a third that needs the first's answer."""
    block = prompt.split("<topics_found>", 1)[1].split("</topics_found>", 1)[0]
    topics = [t.strip("- ").strip() for t in block.strip().splitlines() if t.strip()][:2]
    topics += ["the request"] * (2 - len(topics))
    return [
        {"id": "q1", "question": f"What do the sources say about {topics[0]}?", "title": topics[0]},
        {"id": "q2", "question": f"What do the sources say about {topics[1]}?", "title": topics[1]},
        {
            "id": "q3",
            "question": "What else is known about {q1}?",
            "title": "More",
            "intent": "only what builds on q1's answer",
            "depends_on": ["q1"],
        },
    ]


def edited(prompt: str) -> list[dict[str, Any]]:
    """The sections in reverse order, a fact an earlier section gave dropped, titles kept."""
    sections = re.findall(r'<section id="([^"]+)" title="([^"]*)">(.*?)</section>', prompt, re.S)
    seen: set[str] = set()
    out = []
    for sid, title, body in reversed(sections):
        sentences = []
        for source_id, text in re.findall(
            r'<sentence source_id="([^"]+)">(.*?)</sentence>', body, re.S
        ):
            if source_id not in seen:
                seen.add(source_id)
                sentences.append({"text": text, "source_id": source_id})
        out.append({"id": sid, "title": title, "sentences": sentences})
    return out


class Dropped(Exception):
    """Raised inside a response body so the server drops the connection."""


def create_app(delay: float, tokens: int, first_delay: float = 0.0) -> FastAPI:
    """The test model server."""
    app = FastAPI()
    script: list[dict[str, Any]] = []
    state: dict[str, Any] = {"calls": 0, "alternate": None, "requests": []}

    @app.post("/script")
    async def set_script(request: Request) -> dict[str, int]:
        steps = await request.json()
        script.clear()
        state["alternate"] = None
        for step in steps:
            if "alternate" in step:
                state["alternate"] = int(step["alternate"])
            else:
                script.append(step)
        return {"steps": len(script)}

    @app.get("/calls")
    async def calls() -> dict[str, Any]:
        return {"calls": state["calls"], "requests": state["requests"][-20:]}

    async def dropping(chunks: list[bytes]) -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk
        raise Dropped("connection dropped on purpose")

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(request: Request) -> JSONResponse | StreamingResponse:
        body: dict[str, Any] = await request.json()
        state["calls"] += 1
        prompt = "\n".join(_text(m.get("content", "")) for m in body.get("messages", []))
        state["requests"].append(
            {
                "model": body.get("model"),
                "stream": bool(body.get("stream")),
                "images": prompt.count("data:image/"),
                "response_format": body.get("response_format"),
                "max_tokens": body.get("max_tokens"),
                "max_completion_tokens": body.get("max_completion_tokens"),
                "temperature": body.get("temperature", "not sent"),
            }
        )
        step = script.pop(0) if script else {}
        if state["alternate"] and state["calls"] % 2 == 1:
            step = {"status": state["alternate"]}
        if "sleep" in step:
            await asyncio.sleep(step["sleep"])
        if "status" in step:
            return JSONResponse(
                status_code=step["status"],
                content={
                    "error": {
                        "message": step.get("message", f"scripted failure {step['status']}"),
                        "type": "test",
                    }
                },
            )
        if step.get("drop"):
            return StreamingResponse(
                dropping([b'{"id": "chatcmpl-test", "choi']), media_type="application/json"
            )
        text = step.get("content") or reply_for(prompt, tokens)
        usage = {
            "prompt_tokens": len(prompt) // 4,
            "completion_tokens": len(text) // 4,
            "total_tokens": (len(prompt) + len(text)) // 4,
        }
        base = {"id": "chatcmpl-test", "created": int(time.time()), "model": body["model"]}
        if not body.get("stream"):
            return JSONResponse(
                {
                    **base,
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": text},
                        }
                    ],
                    "usage": usage,
                }
            )

        fail_after = step.get("fail_after")
        stall_after, stall = step.get("stall_after"), float(step.get("stall", 0))

        async def chunks() -> AsyncIterator[bytes]:
            pieces = re.findall(r"\S+\s*", text)
            if (cut := step.get("cut_after")) is not None:
                # llama.cpp's Python server, when a second request comes: a role chunk, what
                # was decoded so far, then a normal end of stream without a finish reason
                for delta in [{"role": "assistant"}, *({"content": p} for p in pieces[:cut])]:
                    choice = {"index": 0, "delta": delta, "finish_reason": None}
                    piece_chunk = {**base, "object": "chat.completion.chunk", "choices": [choice]}
                    yield f"data: {json.dumps(piece_chunk)}\n\n".encode()
                yield b"data: [DONE]\n\n"
                return
            if first_delay and "[src:" in text:
                await asyncio.sleep(first_delay)  # a slow model: silence before the first token
            for piece in pieces:
                chunk = {
                    **base,
                    "object": "chat.completion.chunk",
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": piece},
                            "finish_reason": None,
                        }
                    ],
                }
                yield f"data: {json.dumps(chunk)}\n\n".encode()
                if fail_after is not None and pieces.index(piece) + 1 >= fail_after:
                    raise Dropped("stream dropped on purpose")
                if stall_after is not None and pieces.index(piece) + 1 == stall_after:
                    await asyncio.sleep(stall)
                if delay and "[src:" in text:
                    await asyncio.sleep(delay)
            final = {
                **base,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": usage,
            }
            yield f"data: {json.dumps(final)}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(chunks(), media_type="text/event-stream")

    return app


def _text(content: Any) -> str:
    if isinstance(content, list):  # multimodal: text parts, and image URLs counted by callers
        return "\n".join(
            p.get("text", "") if p.get("type") == "text" else p.get("image_url", {}).get("url", "")
            for p in content
        )
    return str(content)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--first-delay", type=float, default=0.0)
    args = parser.parse_args()
    app = create_app(args.delay, args.tokens, args.first_delay)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
