"""A plain function ``prompt -> str`` as a chat model.

The chat messages are flattened into one prompt string (system text, earlier
turns labelled ``User:``/``Assistant:``, then the final user turn), which is what
most "call my model" functions expect. If the function returns an iterator of
strings instead of a string, :meth:`CallableChat.stream` yields its pieces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from akasha.llm.base import GenerationOptions, Message


def flatten_messages(messages: list[Message]) -> str:
    """One prompt string from OpenAI-shaped messages."""
    parts: list[str] = []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    for i, message in enumerate(messages):
        role, content = message.get("role", "user"), message.get("content", "")
        if role == "system" or i == last_user:
            parts.append(content)
        else:
            parts.append(f"{'Assistant' if role == 'assistant' else 'User'}: {content}")
    return "\n\n".join(p for p in parts if p)


class CallableChat:
    """Wraps ``fn(prompt: str) -> str`` (or an iterator of str) as a ChatModel."""

    def __init__(self, fn: Callable[[str], Any]) -> None:
        self.fn = fn
        self.name = f"callable:{getattr(fn, '__name__', type(fn).__name__)}"

    def _call(self, messages: list[Message]) -> Any:
        return self.fn(flatten_messages(messages))

    def generate(self, messages: list[Message], options: GenerationOptions) -> str:
        result = self._call(messages)
        if isinstance(result, str):
            return result
        if isinstance(result, Iterable):
            return "".join(str(piece) for piece in result)
        raise TypeError(f"model callable {self.name} must return a str, got {type(result).__name__}")

    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str]:
        result = self._call(messages)
        if isinstance(result, str):
            yield result
        elif isinstance(result, Iterable):
            for piece in result:
                yield str(piece)
        else:
            raise TypeError(f"model callable {self.name} must return a str, got {type(result).__name__}")
