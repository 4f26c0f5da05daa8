"""``openai:<model>``: chat completions through the official ``openai`` client.

Reaches api.openai.com, Azure OpenAI (when its environment variables are set) or
any OpenAI-compatible server via ``base_url=`` / ``OPENAI_BASE_URL`` (vLLM,
Ollama's /v1, LM Studio, llama.cpp server). See
:mod:`akasha.providers.openai_conn` for how settings are resolved. No client is
built and no key is read until the first request.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

from akasha.errors import ConfigError, ProviderError, StreamInterruptedError
from akasha.llm.base import GenerationOptions, Message
from akasha.providers.faults import openai_fault
from akasha.providers.openai_conn import OpenAIConnection
from akasha.providers.remote import RemoteProvider
from akasha.providers.retry import DEFAULT_TIMEOUT, acall_with_retry, call_with_retry
from akasha.providers.streaming import aretrying_stream, retrying_stream

logger = logging.getLogger(__name__)


class OpenAIChat(RemoteProvider):
    """Chat model over the OpenAI chat-completions API (sync and async, whole or streamed).

    Options: ``api_key``, ``base_url``, ``timeout`` (seconds, default 60), ``azure``
    (True/False/None=auto), ``azure_endpoint``, ``api_version``, ``organization``,
    ``default_headers``, and the retry options of
    :meth:`akasha.providers.retry.RetryPolicy.from_options` (``max_retries``,
    ``retry_initial_delay``, ``retry_max_delay``, ``retry_jitter``, ``retry_max_wait``).
    """

    def __init__(
        self,
        rest: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        azure: bool | None = None,
        azure_endpoint: str | None = None,
        api_version: str | None = None,
        organization: str | None = None,
        default_headers: dict[str, str] | None = None,
        **options: Any,
    ) -> None:
        self.model = rest.strip()
        if not self.model:
            raise ConfigError("openai: needs a model name, for example 'openai:gpt-4o-mini'")
        self.name = f"openai:{self.model}"
        connection = OpenAIConnection(
            api_key=api_key, base_url=base_url, timeout=timeout, azure=azure, azure_endpoint=azure_endpoint,
            api_version=api_version, organization=organization, default_headers=default_headers,
        )
        self._setup_calls(connection, openai_fault, timeout, options)
        #: set once a server refuses ``temperature`` (reasoning models accept only the default)
        self._omit_temperature = False
        #: set once a server refuses ``response_format`` (structured output)
        self._omit_response_format = False

    def __repr__(self) -> str:
        return f"OpenAIChat(name={self.name!r}, connection={self.connection!r})"

    def _params(self, messages: list[Message], options: GenerationOptions | None, stream: bool) -> dict[str, Any]:
        options = options or GenerationOptions()
        params: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if options.temperature is not None and not self._omit_temperature:
            params["temperature"] = options.temperature
        if options.max_output_tokens is not None:
            key = "max_completion_tokens" if self.connection.is_official else "max_tokens"
            params[key] = options.max_output_tokens
        if options.json_schema is not None and not self._omit_response_format:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "akasha_reply", "schema": dict(options.json_schema), "strict": True},
            }
        if stream:
            params["stream"] = True
        return params

    def _refused_response_format(self, error: ProviderError, options: GenerationOptions | None) -> bool:
        """True (once) when a server rejected ``response_format``: later requests go without it."""
        if self._omit_response_format or options is None or options.json_schema is None:
            return False
        text = str(error).lower()
        if error.status not in (400, 422, 501) or not any(
                word in text for word in ("response_format", "json_schema", "schema", "structured")):
            return False
        logger.info("%s does not accept response_format; asking for JSON in the prompt only", self.name)
        self._omit_response_format = True
        return True

    def _text(self, completion: Any) -> str:
        choices = getattr(completion, "choices", None)
        if not choices:
            raise ProviderError(self.name, "the reply contained no choices")
        return choices[0].message.content or ""

    def _refused_temperature(self, error: ProviderError) -> bool:
        """True (once) when the server rejected ``temperature``: o-series/gpt-5 models only take the default."""
        if self._omit_temperature or error.status != 400 or "temperature" not in str(error):
            return False
        logger.info("%s does not accept a temperature setting; sending requests without it", self.name)
        self._omit_temperature = True
        return True

    # -- sync -----------------------------------------------------------------
    def generate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        """Return the whole answer (retries 429/5xx/timeouts; other 4xx raise ProviderError at once)."""
        client = self.connection.client()
        try:
            params = self._params(messages, options, stream=False)
            completion = call_with_retry(lambda: client.chat.completions.create(**params), **self._retry_kwargs())
        except ProviderError as error:
            if not (self._refused_temperature(error) or self._refused_response_format(error, options)):
                raise
            params = self._params(messages, options, stream=False)
            completion = call_with_retry(lambda: client.chat.completions.create(**params), **self._retry_kwargs())
        return self._text(completion)

    def stream(self, messages: list[Message], options: GenerationOptions | None = None) -> Iterator[str]:
        """Yield answer pieces; a broken stream raises StreamInterruptedError with the partial text."""

        def open_stream() -> Iterator[tuple[str, bool]]:
            client = self.connection.client()
            return _pieces(client.chat.completions.create(**self._params(messages, options, stream=True)))

        started = False
        try:
            for piece in retrying_stream(open_stream, **self._retry_kwargs()):
                started = True
                yield piece
        except ProviderError as error:
            if started or isinstance(error, StreamInterruptedError) or not self._refused_temperature(error):
                raise
            yield from retrying_stream(open_stream, **self._retry_kwargs())

    # -- async ----------------------------------------------------------------
    async def agenerate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        client = self.connection.async_client()
        try:
            params = self._params(messages, options, stream=False)
            completion = await acall_with_retry(lambda: client.chat.completions.create(**params),
                                                **self._retry_kwargs())
        except ProviderError as error:
            if not (self._refused_temperature(error) or self._refused_response_format(error, options)):
                raise
            params = self._params(messages, options, stream=False)
            completion = await acall_with_retry(lambda: client.chat.completions.create(**params),
                                                **self._retry_kwargs())
        return self._text(completion)

    async def astream(self, messages: list[Message], options: GenerationOptions | None = None) -> AsyncIterator[str]:
        async def open_stream() -> AsyncIterator[tuple[str, bool]]:
            client = self.connection.async_client()
            stream = await client.chat.completions.create(**self._params(messages, options, stream=True))
            return _apieces(stream)

        started = False
        try:
            async for piece in aretrying_stream(open_stream, **self._retry_kwargs()):
                started = True
                yield piece
        except ProviderError as error:
            if started or isinstance(error, StreamInterruptedError) or not self._refused_temperature(error):
                raise
            async for piece in aretrying_stream(open_stream, **self._retry_kwargs()):
                yield piece


def _pieces(stream: Any) -> Iterator[tuple[str, bool]]:
    try:
        for chunk in stream:
            for choice in chunk.choices or ():
                yield (choice.delta.content or "") if choice.delta else "", choice.finish_reason is not None
    finally:
        stream.close()


async def _apieces(stream: Any) -> AsyncIterator[tuple[str, bool]]:
    try:
        async for chunk in stream:
            for choice in chunk.choices or ():
                yield (choice.delta.content or "") if choice.delta else "", choice.finish_reason is not None
    finally:
        await stream.close()


__all__ = ["OpenAIChat"]
