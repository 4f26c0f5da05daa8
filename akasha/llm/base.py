"""The chat-model contract every answer/reranker model implements.

Messages use the OpenAI shape: ``[{"role": "system"|"user"|"assistant", "content": str}]``.
Providers translate that into their own wire format.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

Message = dict[str, str]


@dataclass(frozen=True)
class GenerationOptions:
    """Per-request generation settings shared by all providers."""

    max_output_tokens: int | None = None
    temperature: float = 0.0


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
