"""``openai:<model>`` embeddings through the official ``openai`` client.

Requests carry at most 2048 texts (the API's limit) and ``max_batch_chars`` characters (under the
per-request token cap), each retried like any provider call; if one still fails the whole call
raises, so the index never stores a half-embedded document. Any OpenAI-compatible server (TEI,
vLLM, Ollama /v1) works via ``base_url``, which ``name`` carries (``openai:<model>@http://host:port/v1``;
api.openai.com adds nothing), so two servers never share cached vectors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from akasha.providers.faults import openai_fault
from akasha.providers.openai_conn import OpenAIConnection
from akasha.providers.remote import RemoteEmbedder

#: The embeddings endpoint accepts at most this many inputs per request.
MAX_INPUTS = 2048
#: Known output sizes, so ``dimension`` is available before the first request.
KNOWN_DIMENSIONS = {"text-embedding-ada-002": 1536, "text-embedding-3-small": 1536, "text-embedding-3-large": 3072}


class OpenAIEmbedder(RemoteEmbedder):
    """Embedder over ``/v1/embeddings``; normalised float32 rows.

    Options: ``dimensions`` (text-embedding-3 shortening), ``batch_size`` (<= 2048), ``max_batch_chars``
    (default 250 000), ``timeout_per_text`` (seconds added to ``timeout`` per text, default 0.25), the
    connection options of :class:`~akasha.providers.openai_conn.OpenAIConnection` (``api_key``, ``base_url``,
    ``timeout``, ``azure``...) and the retry options, as for :class:`akasha.llm.openai.OpenAIChat`.
    """

    provider = "openai"
    example = "text-embedding-3-small"

    def __init__(self, rest: str, *, dimensions: int | None = None, batch_size: int = MAX_INPUTS,
                 max_batch_chars: int | None = 250_000, **options: Any) -> None:
        super().__init__(rest, options, OpenAIConnection, openai_fault)
        self.batch_size = self._batch_size(batch_size, MAX_INPUTS)
        self.dimensions = self._output_size(dimensions, KNOWN_DIMENSIONS)
        self.max_batch_chars = max_batch_chars

    def _params(self, texts: list[str], timeout: float) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float", "timeout": timeout}
        if self.dimensions:
            params["dimensions"] = self.dimensions
        return params

    def _request(self, texts: list[str], task: str, timeout: float) -> Callable[[], Any]:
        create, params = self.connection.client().embeddings.create, self._params(texts, timeout)
        return lambda: create(**params)

    def _arequest(self, texts: list[str], task: str, timeout: float) -> Callable[[], Awaitable[Any]]:
        create, params = self.connection.async_client().embeddings.create, self._params(texts, timeout)
        return lambda: create(**params)

    def _vectors(self, reply: Any) -> Sequence[Any]:
        return [item.embedding for item in sorted(reply.data, key=lambda item: item.index)]


__all__ = ["OpenAIEmbedder", "MAX_INPUTS"]
