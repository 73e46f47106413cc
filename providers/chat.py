"""The one chat-model factory (OpenAI-compatible, with failover) and robust structured calls.

Structured calls survive real models: JSON in code fences, reasoning blocks, one repair round.

Failures, drawn once::

    ModelError                  anything a model call can fail with, as seekgraph sees it
    ├── ModelClientError        4xx from the endpoint (bad request, key, model name): never
    │                           failed over; the person must fix something
    ├── ModelUnavailableError   5xx, 429, timeouts, connection errors on primary *and* backup
    └── StructuredOutputError   the reply was not the JSON asked for, even after one repair
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import PydanticOutputParser
from langchain_core.runnables import Runnable
from langchain_core.utils.json import parse_json_markdown
from pydantic import BaseModel, SecretStr, ValidationError

if TYPE_CHECKING:  # the client is imported when a model is made: the extractive CLI never is
    import openai

M = TypeVar("M", bound=BaseModel)

#: What nodes call: a chat model, possibly wrapped with its backup.
ChatModel: TypeAlias = Runnable[LanguageModelInput, BaseMessage]


@cache
def retryable() -> tuple[type[BaseException], ...]:
    """Failures worth trying the backup model for (the primary may be fine again next call)."""
    import openai

    return (
        openai.InternalServerError,
        openai.RateLimitError,
        openai.APIConnectionError,  # includes APITimeoutError
        TimeoutError,
        ConnectionError,
    )


class ModelError(Exception):
    """A model call failed."""

    tokens: int = 0


class ModelClientError(ModelError):
    """The endpoint refused the request (4xx): wrong key, model name or request."""


class ModelUnavailableError(ModelError):
    """Primary and backup both failed with retryable errors."""


class AnswerInterruptedError(ModelUnavailableError):
    """The model failed after answer tokens were streamed; the step stops, resumable."""


class StructuredOutputError(ModelError):
    """The reply did not hold the JSON asked for, even after one repair round."""

    def __init__(self, message: str, tokens: int = 0) -> None:
        super().__init__(message)
        self.tokens = tokens


#: How structured replies are asked for: ``prompt`` (format instructions only: any server),
#: ``json_object`` (``response_format`` of that type with the schema beside it: llama.cpp,
#: vLLM, Ollama), ``json_schema`` (OpenAI's structured outputs).
JSON_MODES = ("prompt", "json_object", "json_schema")
#: Where a model returned by ``load_chat_model`` keeps how it is served (its config metadata).
SERVING = "seekgraph_serving"


@dataclass(frozen=True)
class ChatModelConfig:
    """Where a chat model lives: any OpenAI-compatible endpoint, and how it is served."""

    model: str
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    """The longest silence between the tokens of a reply."""
    max_tokens: int | None = 1024
    connect_timeout: float = 10.0
    first_token_timeout: float | None = None
    """The wait for a reply's first token — the prompt read on a slow local model — and for a
    reply that is not streamed, all of it (None: ``timeout``)."""
    json_mode: str = "prompt"
    temperature: float | None = 0.0
    """Sampling temperature sent with every call; None sends none (the server's default:
    0.8 on llama.cpp's server, 1 on OpenAI's), for models that take no other."""

    @property
    def first_token_s(self) -> float:
        """``first_token_timeout``, or ``timeout`` when unset."""
        return self.first_token_timeout or self.timeout

    def http_timeout(self) -> openai.Timeout:
        """By phase: connecting, then waiting for bytes (the longer of the two waits).

        The client library's own ``Timeout`` and HTTP client types are used: ``openai`` moved
        from ``httpx`` to ``httpx2`` (3.6x), whose clients refuse the other package's objects.
        """
        import openai

        wait = max(self.first_token_s, self.timeout)
        return openai.Timeout(connect=self.connect_timeout, read=wait, write=wait, pool=wait)


def serving_of(model: Any) -> dict[str, Any]:
    """How ``model`` is served (timeouts, ``json_mode``, ``name``); {} if unknown."""
    config = getattr(model, "config", None) or {}
    return dict((config.get("metadata") or {}).get(SERVING) or {})


def response_format(mode: str, schema: type[BaseModel]) -> dict[str, Any] | None:
    """The ``response_format`` field for ``mode`` (None: ``prompt``, nothing is sent)."""
    if mode == "json_object":
        return {"type": "json_object", "schema": schema.model_json_schema()}
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
        }
    return None


#: HTTP clients of the chat models this process made (closed by ``aclose_chat_clients``).
_CLIENTS: list[openai.DefaultAsyncHttpxClient] = []


async def aclose_chat_clients() -> None:
    """Close the connection pools of every chat model made so far (server shutdown, tests)."""
    while _CLIENTS:
        await _CLIENTS.pop().aclose()


def _openai(config: ChatModelConfig) -> BaseChatModel:
    import openai
    from langchain_openai import ChatOpenAI

    client = openai.DefaultAsyncHttpxClient(timeout=config.http_timeout())
    _CLIENTS.append(client)
    kwargs: dict[str, Any] = {
        "model": config.model,
        "timeout": config.http_timeout(),
        "max_retries": 0,  # failover is immediate; retries would only delay it
        "stream_usage": True,
        "api_key": SecretStr(config.api_key or "not-needed"),
        "http_async_client": client,
    }
    if config.base_url:
        kwargs["base_url"] = config.base_url
    if config.temperature is not None:
        kwargs["temperature"] = config.temperature
    if config.max_tokens:
        kwargs["max_tokens"] = config.max_tokens  # sent as max_completion_tokens
        kwargs["extra_body"] = {"max_tokens": config.max_tokens}  # llama.cpp reads this one
    return ChatOpenAI(**kwargs)


def load_chat_model(config: ChatModelConfig, backup: ChatModelConfig | None = None) -> ChatModel:
    """A chat model for ``config``; with ``backup``, retryable failures switch to it per call.

    Streaming switches only before the first chunk: once answer tokens reached the person,
    a failure is raised instead of starting the answer again with another model.
    """
    if config.json_mode not in JSON_MODES:
        raise ValueError(f"json_mode must be one of {', '.join(JSON_MODES)}")
    primary = _openai(config)
    model: ChatModel = primary
    if backup is not None:
        model = primary.with_fallbacks([_openai(backup)], exceptions_to_handle=retryable())
    serving = {"first_token_s": config.first_token_s, "idle_s": config.timeout,
               "json_mode": config.json_mode, "name": config.model}  # fmt: skip
    return model.with_config(metadata={SERVING: serving})


def classify(exc: BaseException) -> ModelError:
    """Turn a provider exception into seekgraph's model errors (with a clear message)."""
    import openai

    if isinstance(exc, ModelError):
        return exc
    if (
        isinstance(exc, openai.APIStatusError)
        and 400 <= exc.status_code < 500
        and not isinstance(exc, openai.RateLimitError)
    ):
        return ModelClientError(
            f"the chat model endpoint refused the request ({exc.status_code}): "
            f"{_short(exc)} — {_what_to_set(str(exc))}"
        )
    if isinstance(exc, openai.APIStatusError) and "response_format" in str(exc):
        # llama.cpp answers a json_schema it does not take with 500
        return ModelClientError(
            f"the chat model endpoint failed on the request ({exc.status_code}): "
            f"{_short(exc)} — {_what_to_set(str(exc))}"
        )
    if isinstance(exc, retryable()):
        return ModelUnavailableError(f"the chat model is unavailable ({type(exc).__name__})")
    return ModelUnavailableError(f"the chat model call failed ({type(exc).__name__})")


def _what_to_set(message: str) -> str:
    """The setting that a refusal points at, said plainly."""
    lowered = message.lower()
    if "response_format" in lowered or "json_schema" in lowered or "json_object" in lowered:
        return (
            "this server does not take that JSON mode: set SEEKGRAPH_LLM_JSON_MODE=json_object "
            "(llama.cpp, vLLM, Ollama) or prompt (any server)"
        )
    if "max_completion_tokens" in lowered or "max_tokens" in lowered:
        return "this server refuses the reply length: lower SEEKGRAPH_LLM_MAX_TOKENS"
    if "temperature" in lowered:
        return "this model takes no temperature of ours: set SEEKGRAPH_LLM_TEMPERATURE=none"
    if "context" in lowered and ("length" in lowered or "window" in lowered or "exceed" in lowered):
        return "the prompt is longer than the model's context: start its server with a larger one"
    return "check the model name, key and endpoint in the settings"


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) < 200 else text[:200] + "…"


def usage_tokens(message: BaseMessage) -> int:
    """Tokens a response cost, from its usage metadata, or estimated from its length."""
    if isinstance(message, AIMessage) and message.usage_metadata:
        return int(message.usage_metadata.get("total_tokens", 0))
    text = message.content if isinstance(message.content, str) else str(message.content)
    return max(1, len(text) // 4)


def served_by(message: BaseMessage) -> str:
    """The model that produced a response, as the endpoint reported it."""
    meta = getattr(message, "response_metadata", {}) or {}
    return str(meta.get("model_name") or meta.get("model") or "unknown")


_THINK = re.compile(r"<think>.*?(</think>|$)", re.S | re.I)


class ThinkFilter:
    """Drops ``<think>…</think>`` reasoning from a streamed reply, tags split across chunks too.

    Reasoning models served by llama.cpp, Ollama or vLLM (Qwen3, DeepSeek-R1 distillations)
    write their reasoning inline before the answer; it is neither the answer nor citable.
    """

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self._held = ""
        self.inside = False
        self.thought = 0
        """Characters of reasoning dropped so far."""

    def feed(self, text: str) -> str:
        """The part of ``text`` (after what was held back) that is answer, as far as known."""
        self._held += text
        out: list[str] = []
        while self._held:
            tag = self.CLOSE if self.inside else self.OPEN
            at = self._held.lower().find(tag)
            if at < 0:  # keep back what may be the start of a tag split across chunks
                keep = next((n for n in range(len(tag) - 1, 0, -1)
                             if self._held.lower().endswith(tag[:n])), 0)  # fmt: skip
                cut = len(self._held) - keep
                if self.inside:
                    self.thought += cut
                else:
                    out.append(self._held[:cut])
                self._held = self._held[cut:]
                break
            if self.inside:
                self.thought += at
            else:
                out.append(self._held[:at])
            self._held = self._held[at + len(tag) :]
            self.inside = not self.inside
        return "".join(out)

    def flush(self) -> str:
        """What was held back at the end of the reply (nothing while still reasoning)."""
        rest, self._held = ("" if self.inside else self._held), ""
        return rest


def parse_structured(text: str, schema: type[M]) -> M:
    """The ``schema`` object in a reply: reasoning blocks dropped, code fences accepted."""
    cleaned = _THINK.sub("", text).strip()
    try:
        data = parse_json_markdown(cleaned)
    except (json.JSONDecodeError, ValueError):
        start, end = cleaned.find("{"), cleaned.rfind("}")
        if start < 0 or end <= start:
            raise ValueError("the reply holds no JSON object") from None
        data = json.loads(cleaned[start : end + 1])
    if not isinstance(data, dict):
        raise ValueError("the reply's JSON is not an object")
    return schema.model_validate(data)


async def ainvoke_structured(
    model: ChatModel, prompt: str, schema: type[M]
) -> tuple[M, int, str, bool]:
    """Ask for JSON matching ``schema``: (parsed, tokens spent, model that served, repaired).

    Format instructions and a tolerant parser rather than tool calling, because many
    OpenAI-compatible servers do not implement tools. An invalid reply is sent back once
    with the validation error; a second failure raises ``StructuredOutputError``.
    """
    instructions = PydanticOutputParser(pydantic_object=schema).get_format_instructions()
    full = f"{prompt}\n\n{instructions}"
    tokens = 0
    wanted = response_format(serving_of(model).get("json_mode", "prompt"), schema)
    if wanted is not None:
        model = model.bind(response_format=wanted)
    try:
        message = await model.ainvoke(full)
    except Exception as exc:  # noqa: BLE001 - classified for the caller
        raise classify(exc) from exc
    tokens += usage_tokens(message)
    text = message.content if isinstance(message.content, str) else str(message.content)
    try:
        return parse_structured(text, schema), tokens, served_by(message), False
    except (ValidationError, ValueError) as first:
        problem = _short(first)
    repair = (
        f"{full}\n\nYour previous reply could not be used: {problem}\n"
        "Reply again with only the JSON object, nothing else."
    )
    try:
        message = await model.ainvoke(repair)
    except Exception as exc:  # noqa: BLE001 - classified for the caller
        error = classify(exc)
        error.tokens = tokens
        raise error from exc
    tokens += usage_tokens(message)
    text = message.content if isinstance(message.content, str) else str(message.content)
    try:
        return parse_structured(text, schema), tokens, served_by(message), True
    except (ValidationError, ValueError) as second:
        raise StructuredOutputError(
            f"the model's reply was not valid {schema.__name__} JSON twice: {_short(second)}",
            tokens,
        ) from None
