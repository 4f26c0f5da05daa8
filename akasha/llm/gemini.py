"""``gemini:<model>``: Gemini chat through the official ``google-genai`` client.

OpenAI-shaped messages are translated to Gemini's: system messages become the
``system_instruction``, ``assistant`` turns become ``model`` turns. Nothing is
imported or read from the environment until the first request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from akasha.errors import ProviderError
from akasha.llm.base import GenerationOptions, Message, note_finish
from akasha.options import positive_int
from akasha.providers.faults import genai_fault
from akasha.providers.gemini_conn import GeminiConnection, import_genai
from akasha.providers.remote import RemoteProvider
from akasha.providers.streaming import Piece, Reader, aretrying_stream, retrying_stream
from akasha.retry import acall_with_retry, call_with_retry

_OK_FINISH = {"STOP", "MAX_TOKENS", "FINISH_REASON_UNSPECIFIED"}


def to_gemini(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """Split OpenAI-shaped messages into ``(system_instruction, contents)`` for Gemini."""
    system = [m["content"] for m in messages if m.get("role") == "system"]
    contents = [{"role": "model" if m.get("role") == "assistant" else "user", "parts": [{"text": m["content"]}]}
                for m in messages if m.get("role") != "system"]
    if not contents:
        contents.append({"role": "user", "parts": [{"text": ""}]})
    return ("\n\n".join(system) if system else None), contents


def _text_and_finish(response: Any) -> tuple[str, str | None]:
    candidates = getattr(response, "candidates", None) or []
    if not candidates:
        return "", None
    candidate = candidates[0]
    parts = getattr(getattr(candidate, "content", None), "parts", None) or []
    text = "".join(p.text for p in parts if getattr(p, "text", None) and not getattr(p, "thought", False))
    finish = candidate.finish_reason
    return text, (getattr(finish, "value", None) or str(finish)) if finish is not None else None


class GeminiChat(RemoteProvider):
    """Chat model over ``models.generate_content`` (sync and async, whole or streamed).

    Options: ``api_key``, ``base_url``, ``api_version``, ``timeout`` (seconds), ``headers``,
    ``context_window`` (tokens, to keep requests inside a smaller window), and the retry options.
    """

    provider = "gemini"
    example = "gemini-2.5-flash"

    def __init__(self, rest: str, *, context_window: int | None = None, **options: Any) -> None:
        super().__init__(rest, options, GeminiConnection, genai_fault)
        #: the context size when given (Gemini's own windows are large and not looked up)
        self.context_window = positive_int("gemini: context_window", context_window, allow_none=True)

    def _request(self, messages: list[Message], options: GenerationOptions | None) -> dict[str, Any]:
        options = options or GenerationOptions()
        _, types = import_genai()
        system, contents = to_gemini(messages)
        config: dict[str, Any] = {}
        if system:
            config["system_instruction"] = system
        if options.temperature is not None:
            config["temperature"] = options.temperature
        if options.max_output_tokens is not None:
            config["max_output_tokens"] = options.max_output_tokens
        if options.json_schema is not None:
            config["response_mime_type"] = "application/json"
            if "response_json_schema" in types.GenerateContentConfig.model_fields:
                config["response_json_schema"] = dict(options.json_schema)
        return {"model": self.model, "contents": contents, "config": types.GenerateContentConfig(**config)}

    def _answer(self, response: Any, options: GenerationOptions | None) -> str:
        text, finish = _text_and_finish(response)
        note_finish(self.name, options, finish)
        if not text and finish not in _OK_FINISH:
            feedback = getattr(response, "prompt_feedback", None)
            reason = finish or getattr(feedback, "block_reason", None) or "no candidates"
            raise ProviderError(self.name, f"the reply contained no text (finish reason: {reason})")
        return text

    def generate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        client = self.connection.client()
        request = self._request(messages, options)
        response = call_with_retry(lambda: client.models.generate_content(**request), **self._retry_kwargs())
        return self._answer(response, options)

    def stream(self, messages: list[Message], options: GenerationOptions | None = None) -> Iterator[str]:
        def open_stream() -> Iterator[Any]:
            return self.connection.client().models.generate_content_stream(**self._request(messages, options))

        return retrying_stream(open_stream, self._reader(options), **self._retry_kwargs())

    async def agenerate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        models = self.connection.async_models()
        request = self._request(messages, options)
        response = await acall_with_retry(lambda: models.generate_content(**request), **self._retry_kwargs())
        return self._answer(response, options)

    def astream(self, messages: list[Message], options: GenerationOptions | None = None) -> AsyncIterator[str]:
        async def open_stream() -> AsyncIterator[Any]:
            return await self.connection.async_models().generate_content_stream(**self._request(messages, options))

        return aretrying_stream(open_stream, self._reader(options), **self._retry_kwargs())

    def _reader(self, options: GenerationOptions | None) -> Reader:
        """A streamed response as a ``(text, finished)`` piece, its finish reason noted."""

        def read(response: Any) -> Piece:
            text, finish = _text_and_finish(response)
            note_finish(self.name, options, finish)
            return text, finish is not None

        return read


__all__ = ["GeminiChat", "to_gemini"]
