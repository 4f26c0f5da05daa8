"""A LangChain chat model (anything with ``.invoke``/``.stream``) as an akasha ChatModel.

``ChatOpenAI(...)``, ``ChatOllama(...)`` or any ``BaseChatModel`` can be passed as ``model=``;
the object brings its own code and keeps its own generation settings (max tokens, temperature).
Messages are passed as LangChain message objects. A stream that fails part way raises
StreamInterruptedError with the partial text. A reply whose ``response_metadata`` says it hit
the output limit is logged at WARNING and recorded in ``GenerationOptions.report``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from akasha.errors import StreamInterruptedError
from akasha.llm.base import GenerationOptions, Message, note_finish

_ROLES = {"assistant": "ai", "user": "human", "system": "system"}


def to_langchain(messages: list[Message]) -> list[Any]:
    """OpenAI-shaped messages -> LangChain message objects (``(role, content)`` tuples if
    ``langchain_core`` is somehow absent; the object then has its own conventions)."""
    try:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    except ImportError:
        return [(_ROLES.get(m.get("role", "user"), "human"), m.get("content", "")) for m in messages]
    kinds = {"system": SystemMessage, "assistant": AIMessage}
    return [kinds.get(m.get("role", "user"), HumanMessage)(content=m.get("content", "")) for m in messages]


def finish_reason(result: Any) -> str | None:
    """The finish reason in a LangChain message's ``response_metadata`` (None when it has none)."""
    metadata = getattr(result, "response_metadata", None)
    if not isinstance(metadata, dict):
        return None
    return next((str(metadata[key]) for key in ("finish_reason", "done_reason", "stop_reason") if metadata.get(key)),
                None)


def content_text(result: Any) -> str:
    """Text of an ``AIMessage``/chunk (string or content-block list) or of a plain string."""
    content = getattr(result, "content", result)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type", "text") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return "" if content is None else str(content)


class LangChainChat:
    """Wraps a LangChain chat model or LLM object (``invoke``, optional ``stream``/``ainvoke``/``astream``)."""

    def __init__(self, obj: Any, name: str | None = None) -> None:
        self.obj = obj
        model = getattr(obj, "model_name", None) or getattr(obj, "model", None)
        suffix = f":{model}" if isinstance(model, str) and model else ""
        self.name = name or f"langchain:{type(obj).__name__}{suffix}"

    def __repr__(self) -> str:
        return f"LangChainChat(name={self.name!r})"

    def _interrupted(self, exc: Exception, received: list[str]) -> StreamInterruptedError:
        return StreamInterruptedError(self.name, f"{type(exc).__name__}: {exc}", "".join(received))

    def _reply(self, result: Any, options: GenerationOptions | None) -> str:
        note_finish(self.name, options, finish_reason(result))
        return content_text(result)

    def generate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        return self._reply(self.obj.invoke(to_langchain(messages)), options)

    def stream(self, messages: list[Message], options: GenerationOptions | None = None) -> Iterator[str]:
        if not hasattr(self.obj, "stream"):
            yield self.generate(messages, options)
            return
        received: list[str] = []
        try:
            for chunk in self.obj.stream(to_langchain(messages)):
                if text := self._reply(chunk, options):
                    received.append(text)
                    yield text
        except Exception as exc:
            raise self._interrupted(exc, received) from exc

    async def agenerate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        if hasattr(self.obj, "ainvoke"):
            return self._reply(await self.obj.ainvoke(to_langchain(messages)), options)
        import asyncio

        return await asyncio.to_thread(self.generate, messages, options)

    async def astream(self, messages: list[Message], options: GenerationOptions | None = None) -> AsyncIterator[str]:
        if not hasattr(self.obj, "astream"):
            yield await self.agenerate(messages, options)
            return
        received: list[str] = []
        try:
            async for chunk in self.obj.astream(to_langchain(messages)):
                if text := self._reply(chunk, options):
                    received.append(text)
                    yield text
        except Exception as exc:
            raise self._interrupted(exc, received) from exc


__all__ = ["LangChainChat", "content_text", "finish_reason", "to_langchain"]
