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
from typing import Any, TypeAlias, TypeVar

import httpx
import openai
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import PydanticOutputParser
from langchain_core.runnables import Runnable
from langchain_core.utils.json import parse_json_markdown
from pydantic import BaseModel, SecretStr, ValidationError

M = TypeVar("M", bound=BaseModel)

#: What nodes call: a chat model, possibly wrapped with its backup.
ChatModel: TypeAlias = Runnable[LanguageModelInput, BaseMessage]

#: Failures worth trying the backup model for (the primary may be fine again next call).
RETRYABLE: tuple[type[BaseException], ...] = (
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


@dataclass(frozen=True)
class ChatModelConfig:
    """Where a chat model lives: any OpenAI-compatible endpoint."""

    model: str
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    max_tokens: int | None = 1024


#: HTTP clients of the chat models this process made (closed by ``aclose_chat_clients``).
_CLIENTS: list[httpx.AsyncClient] = []


async def aclose_chat_clients() -> None:
    """Close the connection pools of every chat model made so far (server shutdown, tests)."""
    while _CLIENTS:
        await _CLIENTS.pop().aclose()


def _openai(config: ChatModelConfig) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    client = httpx.AsyncClient(timeout=config.timeout)
    _CLIENTS.append(client)
    kwargs: dict[str, Any] = {
        "model": config.model,
        "timeout": config.timeout,
        "max_retries": 0,  # failover is immediate; retries would only delay it
        "stream_usage": True,
        "api_key": SecretStr(config.api_key or "not-needed"),
        "http_async_client": client,
    }
    if config.base_url:
        kwargs["base_url"] = config.base_url
    if config.max_tokens:
        kwargs["max_tokens"] = config.max_tokens  # sent as max_completion_tokens
        kwargs["extra_body"] = {"max_tokens": config.max_tokens}  # llama.cpp reads this one
    return ChatOpenAI(**kwargs)


def load_chat_model(config: ChatModelConfig, backup: ChatModelConfig | None = None) -> ChatModel:
    """A chat model for ``config``; with ``backup``, retryable failures switch to it per call.

    Streaming switches only before the first chunk: once answer tokens reached the person,
    a failure is raised instead of starting the answer again with another model.
    """
    primary = _openai(config)
    if backup is None:
        return primary
    return primary.with_fallbacks([_openai(backup)], exceptions_to_handle=RETRYABLE)


def classify(exc: BaseException) -> ModelError:
    """Turn a provider exception into seekgraph's model errors (with a clear message)."""
    if isinstance(exc, ModelError):
        return exc
    if (
        isinstance(exc, openai.APIStatusError)
        and 400 <= exc.status_code < 500
        and not isinstance(exc, openai.RateLimitError)
    ):
        return ModelClientError(
            f"the chat model endpoint refused the request ({exc.status_code}): "
            f"{_short(exc)} — check the model name, key and endpoint in the settings"
        )
    if isinstance(exc, RETRYABLE):
        return ModelUnavailableError(f"the chat model is unavailable ({type(exc).__name__})")
    return ModelUnavailableError(f"the chat model call failed ({type(exc).__name__})")


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
