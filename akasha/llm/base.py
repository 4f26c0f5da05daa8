"""The chat-model contract every answer/reranker model implements.

Messages use the OpenAI shape: ``[{"role": "system"|"user"|"assistant", "content": str}]``.
Providers translate that into their own wire format.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

Message = dict[str, str]


@dataclass(frozen=True)
class GenerationOptions:
    """Per-request generation settings shared by all providers.

    ``json_schema``: ask for a JSON reply matching this JSON Schema through the
    provider's structured-output switch (OpenAI-compatible ``response_format``,
    Gemini ``response_mime_type``/``response_json_schema``, Ollama ``format``,
    llama.cpp's ``response_format``). Providers without one ignore it, so callers
    must still validate the reply.
    """

    max_output_tokens: int | None = None
    temperature: float = 0.0
    json_schema: Mapping[str, Any] | None = None


def context_window(model: object) -> int | None:
    """The model's context size in tokens when it is known (a ``context_window`` attribute), else None."""
    value = getattr(model, "context_window", None)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


@runtime_checkable
class ChatModel(Protocol):
    """Generates text from chat messages, whole or streamed."""

    #: Display name, e.g. ``"openai:gpt-4o-mini"``; never contains secrets.
    name: str

    def generate(self, messages: list[Message], options: GenerationOptions) -> str:
        """Return the whole answer."""
        ...

    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str]:
        """Yield the answer in pieces as the provider produces them."""
        ...


@runtime_checkable
class AsyncChatModel(Protocol):
    """Optional async twin of :class:`ChatModel` (providers with async clients)."""

    async def agenerate(self, messages: list[Message], options: GenerationOptions) -> str: ...

    def astream(self, messages: list[Message], options: GenerationOptions) -> AsyncIterator[str]: ...
