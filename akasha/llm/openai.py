"""``openai:<model>``: chat completions through the official ``openai`` client.

Reaches api.openai.com, Azure OpenAI or any OpenAI-compatible server (settings:
:mod:`akasha.providers.openai_conn`). No client is built and no key is read until the first request.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

from akasha.errors import ProviderError
from akasha.llm.base import GenerationOptions, Message, note_finish
from akasha.options import positive_int
from akasha.providers.faults import openai_fault
from akasha.providers.openai_conn import OpenAIConnection
from akasha.providers.remote import RemoteProvider
from akasha.providers.streaming import Piece, Reader, aretrying_stream, retrying_stream
from akasha.retry import acall_with_retry, call_with_retry

logger = logging.getLogger(__name__)


class OpenAIChat(RemoteProvider):
    """Chat model over the OpenAI chat-completions API (sync and async, whole or streamed).

    Options: ``api_key``, ``base_url``, ``timeout`` (seconds, default 60), ``azure`` (True/False/None=auto),
    ``azure_endpoint``, ``api_version``, ``organization``, ``default_headers``, ``context_window`` (tokens,
    when the server does not report it), and the retry options of :meth:`akasha.retry.RetryPolicy.from_options`.
    """

    provider = "openai"
    example = "gpt-4o-mini"

    def __init__(self, rest: str, *, context_window: int | None = None, **options: Any) -> None:
        super().__init__(rest, options, OpenAIConnection, openai_fault)
        self._context_window = positive_int("openai: context_window", context_window, allow_none=True)
        self._counter: Any = None
        self._omit_temperature = False  # each set once the server refuses the setting (see _refused)
        self._omit_response_format = False

    @property
    def context_window(self) -> int | None:
        """The context one request may fill: ``context_window=`` when given, else what a self-hosted
        server reports (llama.cpp ``/props``, vLLM ``/v1/models``, probed once), else None."""
        if self._context_window is not None:
            return self._context_window
        return self.connection.server_context_window(self.model)

    def token_counter(self) -> Any:
        """The counter for this model's tokens (built once): a self-hosted server's ``POST /tokenize``, else
        tiktoken (exact for OpenAI model names, with the safety margin for other names and as the fallback)."""
        if self._counter is None:
            from akasha.model_tokens import ServerTokenCounter
            from akasha.tokens import TokenCounter, encoding_name_for, fallback_counter, is_openai_model_name

            root = self.connection.server_root()
            if root is None:
                self._counter = (TokenCounter(encoding_name_for(self.name)) if is_openai_model_name(self.model)
                                 else fallback_counter(self.name))
            else:
                self._counter = ServerTokenCounter(f"{root}/tokenize", self.model, fallback_counter(self.name),
                                                   headers=self.connection.server_headers(),
                                                   secrets=self.connection.secrets())
        return self._counter

    def _params(self, messages: list[Message], options: GenerationOptions | None, stream: bool) -> dict[str, Any]:
        options = options or GenerationOptions()
        params: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if options.temperature is not None and not self._omit_temperature:
            params["temperature"] = options.temperature
        if options.max_output_tokens is not None:
            key = "max_completion_tokens" if self.connection.is_official else "max_tokens"
            params[key] = options.max_output_tokens
        if options.json_schema is not None and not self._omit_response_format:
            params["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "akasha_reply", "schema": dict(options.json_schema), "strict": True}}
        if stream:
            params["stream"] = True
        return params

    def _text(self, completion: Any, options: GenerationOptions | None) -> str:
        choices = getattr(completion, "choices", None)
        if not choices:
            raise ProviderError(self.name, "the reply contained no choices")
        note_finish(self.name, options, getattr(choices[0], "finish_reason", None))
        message = choices[0].message
        if message.content is None:  # not an empty answer: the server sent no text at all
            refusal = getattr(message, "refusal", None)
            raise ProviderError(self.name, "the reply holds no text (\"content\": null"
                                + (f", refusal: {str(refusal)[:200]!r}" if refusal else "") + ")")
        return str(message.content)

    @contextlib.contextmanager
    def _json_reply(self) -> Iterator[None]:
        """A reply that is not JSON raised as a ProviderError naming the endpoint."""
        try:
            yield
        except json.JSONDecodeError as exc:
            where = self.connection.server_url() or "the endpoint"
            raise ProviderError(self.name, f"the reply is not valid JSON ({exc}); check that {where} is an "
                                           "OpenAI-compatible chat completions endpoint") from None

    def _refused(self, error: ProviderError, options: GenerationOptions | None) -> bool:
        """True (once per setting) when the server refused ``temperature`` (o-series/gpt-5 models take only
        the default) or ``response_format`` (structured output): later requests go without it."""
        text = str(error)
        if not self._omit_temperature and error.status == 400 and "temperature" in text:
            logger.info("%s does not accept a temperature setting; sending requests without it", self.name)
            self._omit_temperature = True
            return True
        if (not self._omit_response_format and options is not None and options.json_schema is not None
                and error.status in (400, 422, 501)
                and any(word in text.lower() for word in ("response_format", "json_schema", "schema", "structured"))):
            logger.info("%s does not accept response_format; asking for JSON in the prompt only", self.name)
            self._omit_response_format = True
            return True
        return False

    def _reader(self, options: GenerationOptions | None) -> Reader:
        """A streamed chunk as a ``(text, finished)`` piece (akasha asks for one choice), its finish reason noted."""

        def read(chunk: Any) -> Piece:
            text, finished = "", False
            for choice in chunk.choices or ():
                note_finish(self.name, options, choice.finish_reason)
                text += (choice.delta.content or "") if choice.delta else ""
                finished = finished or choice.finish_reason is not None
            return text, finished

        return read

    def generate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        """Return the whole answer (retries 429/5xx/timeouts; other 4xx raise ProviderError at once)."""
        client = self.connection.client()

        def create() -> Any:
            params = self._params(messages, options, stream=False)  # again after a refusal: without that setting
            with self._json_reply():
                return client.chat.completions.create(**params)

        completion = call_with_retry(create, reopen=lambda error: self._refused(error, options),
                                     **self._retry_kwargs())
        return self._text(completion, options)

    def stream(self, messages: list[Message], options: GenerationOptions | None = None) -> Iterator[str]:
        """Yield answer pieces; a broken stream raises StreamInterruptedError with the partial text."""

        def open_stream() -> Iterator[Any]:  # again after a refusal: without that setting
            return self.connection.client().chat.completions.create(**self._params(messages, options, stream=True))

        return retrying_stream(open_stream, self._reader(options), reopen=lambda error: self._refused(error, options),
                               **self._retry_kwargs())

    async def agenerate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        client = self.connection.async_client()

        async def create() -> Any:
            params = self._params(messages, options, stream=False)
            with self._json_reply():
                return await client.chat.completions.create(**params)

        completion = await acall_with_retry(create, reopen=lambda error: self._refused(error, options),
                                            **self._retry_kwargs())
        return self._text(completion, options)

    def astream(self, messages: list[Message], options: GenerationOptions | None = None) -> AsyncIterator[str]:
        async def open_stream() -> AsyncIterator[Any]:
            return await self.connection.async_client().chat.completions.create(
                **self._params(messages, options, stream=True))

        return aretrying_stream(open_stream, self._reader(options), reopen=lambda error: self._refused(error, options),
                                **self._retry_kwargs())


__all__ = ["OpenAIChat"]
