"""A plain function ``prompt -> str`` as a chat model.

The chat messages are flattened into one prompt string (system text, earlier turns labelled
``User:``/``Assistant:``, then the final user turn). A function may return an iterator of strings,
which :meth:`CallableChat.stream` yields piece by piece. UTF-8 ``bytes`` are decoded; anything else
is a ``TypeError`` naming the callable, never its ``str()`` or its bytes as numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Set
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

    def _text(self, value: Any) -> str:
        """One answer or answer piece as text: str as is, UTF-8 bytes decoded, anything else refused."""
        if isinstance(value, str):
            return value
        if isinstance(value, (bytes, bytearray)):
            try:
                return bytes(value).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise TypeError(f"model callable {self.name} returned bytes that are not UTF-8 ({exc.reason}); "
                                "return a str") from None
        raise TypeError(f"model callable {self.name} must return a str (or an iterator of str), "
                        f"got {type(value).__name__}")

    def _pieces(self, result: Any) -> Iterator[str]:
        if isinstance(result, (str, bytes, bytearray)):
            yield self._text(result)
        elif isinstance(result, Iterable) and not isinstance(result, (Mapping, Set)):
            for piece in result:  # a generator of pieces; not a dict (its keys) or a set (no order)
                yield self._text(piece)
        else:
            self._text(result)  # raises the TypeError naming what came back

    def generate(self, messages: list[Message], options: GenerationOptions) -> str:
        return "".join(self._pieces(self.fn(flatten_messages(messages))))

    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str]:
        yield from self._pieces(self.fn(flatten_messages(messages)))
