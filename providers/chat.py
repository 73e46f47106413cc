"""The one chat-model factory, and structured calls that work with any OpenAI-compatible server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import PydanticOutputParser
from pydantic import BaseModel, SecretStr

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class ChatModelConfig:
    """Where the chat model lives: any OpenAI-compatible endpoint."""

    model: str
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    max_tokens: int | None = 1024


def load_chat_model(config: ChatModelConfig) -> BaseChatModel:
    """A ``ChatOpenAI`` for the endpoint in ``config`` (OpenAI, vLLM, Ollama, llama.cpp…)."""
    from langchain_openai import ChatOpenAI

    kwargs: dict[str, Any] = {
        "model": config.model,
        "timeout": config.timeout,
        "max_retries": 0,
        "stream_usage": True,
    }
    if config.base_url:
        kwargs["base_url"] = config.base_url
    kwargs["api_key"] = SecretStr(config.api_key or "not-needed")
    if config.max_tokens:
        # llama.cpp ignores max_completion_tokens; send both.
        kwargs["max_tokens"] = config.max_tokens  # sent as max_completion_tokens
        kwargs["extra_body"] = {"max_tokens": config.max_tokens}
    return ChatOpenAI(**kwargs)


def usage_tokens(message: BaseMessage) -> int:
    """Tokens a response cost, from its usage metadata, or estimated from its length."""
    if isinstance(message, AIMessage) and message.usage_metadata:
        return int(message.usage_metadata.get("total_tokens", 0))
    text = message.content if isinstance(message.content, str) else str(message.content)
    return max(1, len(text) // 4)


async def ainvoke_structured(model: BaseChatModel, prompt: str, schema: type[M]) -> tuple[M, int]:
    """Ask for JSON matching ``schema``; return the parsed model and the tokens spent.

    Uses format instructions and a tolerant JSON parser (code fences are accepted) rather
    than tool calling, because many OpenAI-compatible servers do not implement tools.
    """
    parser = PydanticOutputParser(pydantic_object=schema)
    message = await model.ainvoke(f"{prompt}\n\n{parser.get_format_instructions()}")
    text = message.content if isinstance(message.content, str) else str(message.content)
    return parser.parse(text), usage_tokens(message)
