"""``openai:<model>`` embeddings through the official ``openai`` client.

Inputs go out in requests of at most 2048 texts (the API's limit) and at most
``max_batch_chars`` characters (keeps a request under the per-request token cap).
Each request is retried like any provider call; if one still fails, the whole call
raises and returns nothing, so the index never stores a half-embedded document.
Works with any OpenAI-compatible embeddings server (TEI, vLLM, Ollama /v1) via
``base_url``. The embedder's ``name`` carries that server
(``openai:<model>@http://host:port/v1``; api.openai.com adds nothing), so two servers
answering for one model name never share cached vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from akasha.embeddings.base import as_matrix
from akasha.errors import ConfigError, ProviderError
from akasha.providers.batching import plan_batches
from akasha.providers.faults import openai_fault
from akasha.providers.openai_conn import OpenAIConnection
from akasha.providers.remote import RemoteEmbedder
from akasha.retry import DEFAULT_TIMEOUT, acall_with_retry, call_with_retry

#: The embeddings endpoint accepts at most this many inputs per request.
MAX_INPUTS = 2048
#: Known output sizes, so ``dimension`` is available before the first request.
KNOWN_DIMENSIONS = {"text-embedding-ada-002": 1536, "text-embedding-3-small": 1536, "text-embedding-3-large": 3072}


class OpenAIEmbedder(RemoteEmbedder):
    """Embedder over ``/v1/embeddings``; normalised float32 rows.

    Options: ``dimensions`` (text-embedding-3 shortening), ``batch_size`` (<= 2048),
    ``max_batch_chars`` (default 250 000), ``timeout_per_text`` (seconds added to
    ``timeout`` per text in a request, default 0.25), plus the connection and retry
    options of :class:`akasha.llm.openai.OpenAIChat`.
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
        dimensions: int | None = None,
        batch_size: int = MAX_INPUTS,
        max_batch_chars: int | None = 250_000,
        **options: Any,
    ) -> None:
        self.model = rest.strip()
        if not self.model:
            raise ConfigError("openai embeddings need a model name, e.g. 'openai:text-embedding-3-small'")
        if not 0 < int(batch_size) <= MAX_INPUTS:
            raise ConfigError(f"openai embeddings batch_size must be 1..{MAX_INPUTS}, got {batch_size}")
        self.dimensions = int(dimensions) if dimensions else None
        self.base_name = f"openai:{self.model}" + (f"@{self.dimensions}" if self.dimensions else "")
        self.dimension: int | None = self.dimensions or KNOWN_DIMENSIONS.get(self.model)
        self.batch_size = int(batch_size)
        self.max_batch_chars = max_batch_chars
        connection = OpenAIConnection(
            api_key=api_key, base_url=base_url, timeout=timeout, azure=azure, azure_endpoint=azure_endpoint,
            api_version=api_version, organization=organization, default_headers=default_headers,
        )
        self._setup_calls(connection, openai_fault, timeout, options)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(name={self.name!r}, connection={self.connection!r})"

    def _params(self, texts: Sequence[str]) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "input": list(texts), "encoding_format": "float",
                                  "timeout": self.request_timeout(len(texts))}
        if self.dimensions:
            params["dimensions"] = self.dimensions
        return params

    def _rows(self, response: Any, expected: int) -> np.ndarray:
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != expected:
            raise ProviderError(self.name, f"returned {len(data)} embeddings for {expected} inputs")
        return as_matrix([item.embedding for item in data], expected, self.name)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed all texts; raises ProviderError (and returns nothing) if any batch fails."""
        texts = list(texts)
        if not texts:
            return self._finish([])
        client = self.connection.client()
        parts = []
        for start, end in plan_batches(texts, self.batch_size, self.max_batch_chars):
            params = self._params(texts[start:end])
            response = call_with_retry(lambda: client.embeddings.create(**params),
                                       **self._retry_kwargs(params["timeout"]))
            parts.append(self._rows(response, end - start))
        return self._finish(parts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of :meth:`embed_documents` (batches sent one after another)."""
        texts = list(texts)
        if not texts:
            return self._finish([])
        client = self.connection.async_client()
        parts = []
        for start, end in plan_batches(texts, self.batch_size, self.max_batch_chars):
            params = self._params(texts[start:end])
            response = await acall_with_retry(lambda: client.embeddings.create(**params),
                                              **self._retry_kwargs(params["timeout"]))
            parts.append(self._rows(response, end - start))
        return self._finish(parts)

    async def aembed_query(self, text: str) -> np.ndarray:
        return (await self.aembed_documents([text]))[0]


__all__ = ["OpenAIEmbedder", "MAX_INPUTS"]
