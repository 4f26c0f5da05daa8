"""Deterministic stand-ins for users' own tests: :class:`HashEmbedder` (64 dimensions,
``embeddings.provider: hash``; meaningless for real retrieval) and :class:`FakeLLM`. No model, no network.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence

from akasha.embeddings.hash import HashEmbedder
from akasha.llm.base import GenerationOptions, Message


class FakeLLM:
    """A deterministic :class:`~akasha.llm.base.ChatModel` with ``agenerate``/``astream`` too.

    ``replies`` may be a string (always that answer), a sequence of strings (one per call, cycling), or
    ``fn(messages) -> str``; without it the reply echoes the last user message. ``error`` makes every call
    raise it (for failure tests).
    """

    def __init__(self, replies: str | Sequence[str] | Callable[[list[Message]], str] | None = None,
                 *, name: str = "fake", error: BaseException | None = None) -> None:
        self.name = name
        self._replies = replies
        self._error = error
        self.calls: list[list[Message]] = []

    def _reply(self, messages: list[Message]) -> str:
        self.calls.append([dict(m) for m in messages])
        if self._error is not None:
            raise self._error
        replies = self._replies
        if replies is None:
            users = [m.get("content", "") for m in messages if m.get("role") == "user"]
            return users[-1] if users else ""
        if isinstance(replies, str):
            return replies
        if callable(replies):
            return str(replies(messages))
        replies = list(replies)
        return replies[(len(self.calls) - 1) % len(replies)] if replies else ""

    def generate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        return self._reply(messages)

    def stream(self, messages: list[Message], options: GenerationOptions | None = None) -> Iterator[str]:
        text = self._reply(messages)
        for i in range(0, len(text), 8):
            yield text[i : i + 8]

    async def agenerate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        return self._reply(messages)

    async def astream(self, messages: list[Message], options: GenerationOptions | None = None) -> AsyncIterator[str]:
        for piece in self.stream(messages, options):
            yield piece

    def __repr__(self) -> str:
        return f"FakeLLM(name={self.name!r}, calls={len(self.calls)})"


__all__ = ["HashEmbedder", "FakeLLM"]
