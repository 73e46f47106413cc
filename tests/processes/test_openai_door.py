"""The OpenAI-compatible door, driven by the official ``openai`` client and ``ChatOpenAI``.

Real processes: Redis, the test model server (the one edge that cannot run here), two
seekgraph instances sharing them.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator

import httpx
import openai
import pytest
from langchain_openai import ChatOpenAI

from seekgraph.server.auth import add_key_to_file
from tests.support import RESTRICTED_MARKERS
from tests.support.processes import (
    Proc,
    llm_server_env,
    shared_redis,
    start_app,
    start_model_server,
    start_redis,
)

MODEL = "seekgraph-search"
VPN = "How do I connect to the VPN from a new laptop?"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("openai-door")
    procs: list[Proc] = []
    try:
        redis_url = shared_redis(tmp, procs)
        model = start_model_server(tmp, delay=0.05, tokens=40, first_delay=0.5)
        procs.append(model)
        keys = tmp / "keys.json"
        env = llm_server_env(redis_url, model, keys, SEEKGRAPH_VISION_LLM_MODEL="vision-model")
        w = {
            "tmp": tmp,
            "model": model,
            "env": env,
            "alice": add_key_to_file(keys, "alice"),
            "bob": add_key_to_file(keys, "bob"),
        }
        w["a"] = start_app(tmp, "door-a", env)
        procs.append(w["a"])
        yield w
    finally:
        for p in reversed(procs):
            p.stop()


def client(w: dict, user: str = "alice", **kwargs) -> openai.OpenAI:
    return openai.OpenAI(base_url=w["a"].url + "/v1", api_key=w[user], max_retries=0, **kwargs)


def tiny_png(truncate: int = 0) -> str:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 64), "teal").save(out, format="PNG")
    data = out.getvalue()
    return "data:image/png;base64," + base64.b64encode(data[: len(data) - truncate]).decode()


def test_models_lists_the_flows(world) -> None:
    with client(world) as c:
        ids = [m.id for m in c.models.list()]
    assert MODEL in ids


def test_a_completion_answers_with_numbered_citations_and_usage(world) -> None:
    with client(world) as c:
        raw = c.chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": VPN}]
        )
    completion = raw.parse()
    thread = raw.headers["X-Seekgraph-Thread-Id"]
    message = completion.choices[0].message
    assert "[1]" in message.content and "[src:" not in message.content
    [note] = message.annotations
    cited = note.url_citation
    assert message.content[cited.start_index : cited.end_index] == "[1]"
    extra = cited.model_extra
    assert extra["source_id"] and extra["quote"] and cited.title
    assert "filter_results" in message.model_extra["reasoning_content"]
    assert completion.usage.total_tokens > 0
    assert completion.model_extra["seekgraph"]["thread_id"] == thread
    assert completion.choices[0].finish_reason == "stop"


def test_streaming_shows_thinking_then_the_answer_then_citations(world) -> None:
    reasoning, content, last = "", "", None
    with client(world) as c:
        for chunk in c.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": VPN}], stream=True
        ):
            delta = chunk.choices[0].delta
            reasoning += (delta.model_extra or {}).get("reasoning_content") or ""
            content += delta.content or ""
            last = chunk
    assert "expand_query" in reasoning and "evaluate" in reasoning
    assert content.startswith("Answer w0") and "[1]" in content and "[src:" not in content
    assert last.choices[0].finish_reason == "stop" and last.usage.total_tokens > 0
    annotations = last.choices[0].delta.model_extra["annotations"]
    assert annotations and content[annotations[0]["url_citation"]["start_index"] :].startswith(
        "[1]"
    )


def test_a_thread_continues_with_its_id(world) -> None:
    with client(world) as c:
        first = c.chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": VPN}]
        )
        thread = first.headers["X-Seekgraph-Thread-Id"]
        c.chat.completions.create(
            model=MODEL,
            messages=[
                {"role": "user", "content": VPN},
                {"role": "assistant", "content": first.parse().choices[0].message.content},
                {"role": "user", "content": "And which WireGuard profile do I import?"},
            ],
            extra_body={"thread_id": thread},
        )
    state = httpx.get(
        f"{world['a'].url}/threads/{thread}/state",
        headers={"Authorization": f"Bearer {world['alice']}"},
    ).json()
    turns = [t["question"] for t in state["values"]["turns"]]
    assert turns == [VPN, "And which WireGuard profile do I import?"]


def test_an_image_goes_through_the_same_checks_and_reaches_the_vision_model(world) -> None:
    parts = [{"type": "text", "text": VPN}, {"type": "image_url", "image_url": {"url": tiny_png()}}]
    with client(world) as c:
        completion = c.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": parts}]
        )
        assert completion.choices[0].message.content
        sent = httpx.get(world["model"].url + "/calls").json()["requests"]
        assert any(r["model"] == "vision-model" and r["images"] == 1 for r in sent)
        broken = [parts[0], {"type": "image_url", "image_url": {"url": tiny_png(truncate=40)}}]
        with pytest.raises(openai.UnprocessableEntityError, match="cannot be decoded"):
            c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": broken}])
        remote = [parts[0], {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}]
        with pytest.raises(openai.UnprocessableEntityError, match="remote image URLs"):
            c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": remote}])


def test_bob_never_gets_what_only_the_security_group_may_see(world) -> None:
    question = "What did the Project Nightjar penetration test find?"
    seen = {}
    for user in ("bob", "alice"):
        with client(world, user) as c:
            completion = c.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": question}],
                extra_body={"mode": "extractive"},
            )
        seen[user] = completion.model_dump_json()
    assert not [m for m in RESTRICTED_MARKERS if m in seen["bob"]]
    assert [m for m in RESTRICTED_MARKERS if m in seen["alice"]]  # the canaries are findable


def test_errors_come_in_openais_format_with_the_apis_messages(world) -> None:
    with openai.OpenAI(base_url=world["a"].url + "/v1", api_key="sg_wrong", max_retries=0) as bad:
        with pytest.raises(openai.AuthenticationError, match="unknown API key"):
            bad.models.list()
    with client(world) as c:
        with pytest.raises(openai.NotFoundError, match="no model 'gpt-4o'") as missing:
            c.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert missing.value.code == "model_not_found"
        with pytest.raises(openai.NotFoundError, match="no thread nope"):
            c.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": VPN}],
                extra_body={"thread_id": "nope"},
            )
        with pytest.raises(openai.UnprocessableEntityError, match="role 'user'"):
            c.chat.completions.create(model=MODEL, messages=[{"role": "system", "content": "x"}])
        with pytest.raises(openai.UnprocessableEntityError, match="question is empty"):
            c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": " "}])
        # a different question while a run is live on the thread
        stream = c.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": VPN}], stream=True
        )
        thread = next(iter(stream)).model_extra["seekgraph"]["thread_id"]
        with pytest.raises(openai.ConflictError, match="a run is already live"):
            c.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": "What is the meal allowance?"}],
                extra_body={"thread_id": thread},
            )
        stream.close()


def test_a_client_that_disconnects_can_retry_and_gets_the_same_run(world) -> None:
    with client(world) as c:
        stream = c.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": VPN}], stream=True
        )
        thread = None
        for chunk in stream:
            thread = thread or chunk.model_extra["seekgraph"]["thread_id"]
            if chunk.choices[0].delta.content:
                break  # the answer started: drop the connection
        stream.close()
        retried = c.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": VPN}],
            extra_body={"thread_id": thread},
        )
    content = retried.choices[0].message.content
    assert content.startswith("Answer w0") and content.rstrip(".").endswith("[1]")
    history = httpx.get(
        f"{world['a'].url}/threads/{thread}/history",
        headers={"Authorization": f"Bearer {world['alice']}"},
    ).json()
    wrote = [n for h in history for n in h["wrote"]]
    assert wrote.count("integrate") == 1  # one run, not two


def test_a_redis_outage_is_a_503_in_openais_format(world) -> None:
    tmp = world["tmp"] / "outage"
    tmp.mkdir()
    redis_proc, url = start_redis(tmp)
    app = start_app(tmp, "door-outage", {**world["env"], "SEEKGRAPH_REDIS_URL": url})
    try:
        redis_proc.kill()
        with openai.OpenAI(base_url=app.url + "/v1", api_key=world["alice"], max_retries=0) as c:
            with pytest.raises(openai.InternalServerError, match="unreachable") as down:
                c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": VPN}])
        assert down.value.status_code == 503
    finally:
        app.stop()
        redis_proc.stop()


def test_chatopenai_from_langchain_uses_seekgraph_as_a_model(world) -> None:
    llm = ChatOpenAI(
        base_url=world["a"].url + "/v1", api_key=world["alice"], model=MODEL, max_retries=0
    )
    reply = llm.invoke(VPN)
    assert "[1]" in reply.content
    streamed = "".join(str(chunk.content) for chunk in llm.stream(VPN))
    assert streamed.startswith("Answer w0") and "[1]" in streamed
