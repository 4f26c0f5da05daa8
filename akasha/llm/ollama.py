"""``ollama:<model>``: chat through Ollama's native ``/api/chat`` (NDJSON streaming).

The address: :mod:`akasha.providers.ollama_conn`. ``model_options`` passes extra Ollama ``options``
(``num_ctx``, ``top_p``...); ``keep_alive`` is forwarded when given.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from akasha.llm.base import GenerationOptions, Message, note_finish
from akasha.providers.faults import http_fault
from akasha.providers.ollama_conn import OllamaConnection
from akasha.providers.remote import RemoteProvider
from akasha.providers.streaming import Piece, Reader, aretrying_stream, retrying_stream
from akasha.retry import acall_with_retry, call_with_retry


class OllamaChat(RemoteProvider):
    """Chat model over Ollama's HTTP API (sync and async, whole or streamed).

    Options: ``host`` (alias ``base_url``), ``api_key``, ``timeout`` (seconds, default 60),
    ``model_options`` (dict), ``keep_alive``, and the retry options.
    """

    provider = "ollama"
    example = "llama3.2"

    def __init__(self, rest: str, *, model_options: dict[str, Any] | None = None,
                 keep_alive: str | int | None = None, **options: Any) -> None:
        super().__init__(rest, options, OllamaConnection, http_fault)
        self.model_options = dict(model_options or {})
        self.keep_alive = keep_alive

    def _payload(self, messages: list[Message], options: GenerationOptions | None, stream: bool) -> dict[str, Any]:
        options = options or GenerationOptions()
        model_options = dict(self.model_options)
        if options.temperature is not None:
            model_options["temperature"] = options.temperature
        if options.max_output_tokens is not None:
            model_options["num_predict"] = options.max_output_tokens
        turns = [{"role": m.get("role", "user"), "content": m["content"]} for m in messages]
        payload: dict[str, Any] = {"model": self.model, "messages": turns, "stream": stream}
        if model_options:
            payload["options"] = model_options
        if options.json_schema is not None:
            payload["format"] = dict(options.json_schema)  # Ollama 0.5+: a JSON schema constrains the reply
        if self.keep_alive is not None:
            payload["keep_alive"] = self.keep_alive
        return payload

    @property
    def context_window(self) -> int | None:
        """``num_ctx`` when given in ``model_options`` (Ollama's own default is not known here)."""
        value = self.model_options.get("num_ctx")
        return value if isinstance(value, int) and value > 0 else None

    @staticmethod
    def _answer(reply: dict[str, Any]) -> str:
        return str((reply.get("message") or {}).get("content") or "")

    def _finished(self, reply: dict[str, Any], options: GenerationOptions | None) -> str:
        """The reply's text, its ``done_reason`` noted."""
        note_finish(self.name, options, reply.get("done_reason"))
        return self._answer(reply)

    def _reader(self, options: GenerationOptions | None) -> Reader:
        """An NDJSON object of the stream as a ``(text, finished)`` piece, its ``done_reason`` noted."""

        def read(obj: dict[str, Any]) -> Piece:
            if obj.get("done"):
                note_finish(self.name, options, obj.get("done_reason"))
            return self._answer(obj), bool(obj.get("done"))

        return read

    def generate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        payload = self._payload(messages, options, stream=False)
        reply = call_with_retry(lambda: self.connection.post("/api/chat", payload), **self._retry_kwargs())
        return self._finished(reply, options)

    async def agenerate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        payload = self._payload(messages, options, stream=False)
        reply = await acall_with_retry(lambda: self.connection.apost("/api/chat", payload), **self._retry_kwargs())
        return self._finished(reply, options)

    def stream(self, messages: list[Message], options: GenerationOptions | None = None) -> Iterator[str]:
        payload = self._payload(messages, options, stream=True)
        return retrying_stream(lambda: self.connection.stream_lines("/api/chat", payload), self._reader(options),
                               **self._retry_kwargs())

    def astream(self, messages: list[Message], options: GenerationOptions | None = None) -> AsyncIterator[str]:
        payload = self._payload(messages, options, stream=True)
        return aretrying_stream(lambda: self.connection.astream_lines("/api/chat", payload), self._reader(options),
                                **self._retry_kwargs())


__all__ = ["OllamaChat"]
