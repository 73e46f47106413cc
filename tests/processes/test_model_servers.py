"""What local model servers (llama.cpp, Ollama, vLLM) do differently, against the test server.

Reasoning written inline before the answer, a long silence while a slow model reads the
prompt, a stall mid-answer, JSON modes, the reply-length fields, and refusals that must say
which setting to change.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.decisions import EvaluateDecision
from seekgraph.nodes.plumbing.writing import stream_answer
from seekgraph.providers.chat import (
    AnswerInterruptedError,
    ChatModelConfig,
    ModelClientError,
    ModelUnavailableError,
    ainvoke_structured,
    load_chat_model,
)
from tests.processes.test_models import Writer
from tests.support.processes import Proc, script_model, start_model_server

PROMPT = "<role>You decide whether the evidence is enough to answer a question.</role>"
ANSWER = '<role>You answer questions</role> <source id="kb/a#0">'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    proc = start_model_server(tmp_path_factory.mktemp("model-servers"), delay=0.0, tokens=20)
    try:
        yield proc
    finally:
        proc.stop()


def model(server: Proc, **config: Any) -> Any:
    script_model(server)
    return load_chat_model(
        ChatModelConfig(model="local", base_url=server.url + "/v1", api_key="k", **config)
    )


def last_request(server: Proc) -> dict[str, Any]:
    return dict(httpx.get(server.url + "/calls").json()["requests"][-1])


async def answer(m: Any, writer: Writer | None = None) -> str:
    runtime = Runtime(context=Context(user="bob"), stream_writer=writer or Writer())
    text, _, _ = await stream_answer(m, ANSWER, runtime)
    return text


async def test_reasoning_before_the_answer_is_neither_streamed_nor_kept(server) -> None:
    m = model(server)
    reply = (
        "<think>The user asks about kb/a; I should cite it. Let me think.</think>\n\n"
        "The VPN uses WireGuard [src:kb/a#0]."
    )
    script_model(server, {"content": reply})
    writer = Writer()
    text = await answer(m, writer)
    assert text == "The VPN uses WireGuard [src:kb/a#0]."
    assert "think" not in "".join(writer.tokens).lower()
    assert "".join(writer.tokens).strip() == text


async def test_a_slow_first_token_is_its_own_phase(server) -> None:
    # the prompt read takes 2 s; tokens then come fast: allowed with a first-token limit of
    # 5 s although the limit between tokens is 1 s
    m = model(server, timeout=1.0, first_token_timeout=5.0)
    script_model(server, {"sleep": 2})
    assert (await answer(m)).startswith("Answer")
    # and refused, naming the setting, when the first token does not come in time
    m = model(server, timeout=10.0, first_token_timeout=1.0)
    script_model(server, {"sleep": 4})
    started = time.monotonic()
    with pytest.raises(ModelUnavailableError, match="SEEKGRAPH_LLM_FIRST_TOKEN_TIMEOUT"):
        await answer(m)
    assert time.monotonic() - started < 3.5


async def test_a_stall_mid_answer_stops_the_step_after_the_tokens_shown(server) -> None:
    m = model(server, timeout=1.0, first_token_timeout=10.0)
    script_model(server, {"stall_after": 3, "stall": 4})
    writer = Writer()
    started = time.monotonic()
    with pytest.raises(AnswerInterruptedError, match="after 3 answer tokens"):
        await answer(m, writer)
    assert len(writer.tokens) == 3 and time.monotonic() - started < 3.5


@pytest.mark.parametrize("mode", ["prompt", "json_object", "json_schema"])
async def test_json_modes_send_the_schema_as_the_server_reads_it(server, mode) -> None:
    m = model(server, json_mode=mode)
    decision, _, _, _ = await ainvoke_structured(m, PROMPT, EvaluateDecision)
    assert decision.action == "answer"
    sent = last_request(server)["response_format"]
    if mode == "prompt":
        assert sent is None
    elif mode == "json_object":
        assert sent["type"] == "json_object" and "action" in sent["schema"]["properties"]
    else:
        assert sent["type"] == "json_schema"
        assert "action" in sent["json_schema"]["schema"]["properties"]


async def test_the_reply_length_is_sent_in_both_fields(server) -> None:
    m = model(server, max_tokens=321)
    await ainvoke_structured(m, PROMPT, EvaluateDecision)
    sent = last_request(server)
    assert sent["max_tokens"] == 321 and sent["max_completion_tokens"] == 321


async def test_answers_are_sampled_at_temperature_zero_unless_told_otherwise(server) -> None:
    # llama.cpp's server samples at 0.8 when no temperature is sent: the same question got
    # a right answer, then "yes." from Qwen 1.5B; a model taking only its own gets none
    await ainvoke_structured(model(server), PROMPT, EvaluateDecision)
    assert last_request(server)["temperature"] == 0.0
    await answer(model(server, temperature=None))
    assert last_request(server)["temperature"] == "not sent"


@pytest.mark.parametrize(
    ("status", "message", "setting"),
    [
        (400, "response_format type json_schema is not supported", "SEEKGRAPH_LLM_JSON_MODE"),
        (500, "Either \"json_schema\" or \"grammar\" can be specified (response_format)",
         "SEEKGRAPH_LLM_JSON_MODE"),
        (400, "max_completion_tokens is too large for this model", "SEEKGRAPH_LLM_MAX_TOKENS"),
        (400, "the request exceeds the available context size", "larger one"),
        (400, "Unsupported value: 'temperature' does not support 0 with this model",
         "SEEKGRAPH_LLM_TEMPERATURE=none"),
    ],
    ids=["json-400", "json-500-llama.cpp", "length", "context", "temperature"],
)  # fmt: skip
async def test_a_refusal_names_the_setting_to_change(server, status, message, setting) -> None:
    m = model(server, json_mode="json_schema")
    script_model(server, {"status": status, "message": message})
    with pytest.raises(ModelClientError, match=setting):
        await ainvoke_structured(m, PROMPT, EvaluateDecision)
