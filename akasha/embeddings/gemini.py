"""``gemini:<model>`` embeddings through ``google-genai``'s ``embed_content``.

The client sends ``:batchEmbedContents``; the API accepts at most 100 texts per
call, so inputs go out in batches of 100 (``batch_size`` may lower it). Documents
are embedded with task type ``RETRIEVAL_DOCUMENT`` and questions with
``RETRIEVAL_QUERY`` (set ``task_types=False`` for servers that reject it). A batch
that still fails after retries raises and nothing is returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from akasha.embeddings.base import as_matrix
from akasha.errors import ConfigError, ProviderError
from akasha.providers.batching import plan_batches
from akasha.providers.faults import genai_fault
from akasha.providers.gemini_conn import GeminiConnection, import_genai
from akasha.providers.remote import RemoteEmbedder
from akasha.retry import DEFAULT_TIMEOUT, acall_with_retry, call_with_retry

#: ``batchEmbedContents`` accepts at most this many requests.
MAX_BATCH = 100
KNOWN_DIMENSIONS = {"text-embedding-004": 768, "embedding-001": 768, "gemini-embedding-001": 3072}


class GeminiEmbedder(RemoteEmbedder):
    """Embedder over Gemini ``embed_content``; normalised float32 rows.

    Options: ``output_dimensionality``, ``batch_size`` (<= 100), ``task_types`` (bool),
    plus ``api_key``, ``base_url``, ``api_version``, ``timeout`` (plus ``timeout_per_text``
    seconds per text in a request, default 0.25) and the retry options.
    """

    def __init__(
        self,
        rest: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        api_version: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        headers: dict[str, str] | None = None,
        output_dimensionality: int | None = None,
        batch_size: int = MAX_BATCH,
        task_types: bool = True,
        **options: Any,
    ) -> None:
        self.model = rest.strip()
        if not self.model:
            raise ConfigError("gemini embeddings need a model name, e.g. 'gemini:gemini-embedding-001'")
        if not 0 < int(batch_size) <= MAX_BATCH:
            raise ConfigError(f"gemini embeddings batch_size must be 1..{MAX_BATCH}, got {batch_size}")
        self.output_dimensionality = int(output_dimensionality) if output_dimensionality else None
        suffix = f"@{self.output_dimensionality}" if self.output_dimensionality else ""
        self.base_name = f"gemini:{self.model}{suffix}"
        self.dimension: int | None = self.output_dimensionality or KNOWN_DIMENSIONS.get(self.model)
        self.batch_size = int(batch_size)
        self.task_types = task_types
        connection = GeminiConnection(
            api_key=api_key, base_url=base_url, api_version=api_version, timeout=timeout, headers=headers
        )
        self._setup_calls(connection, genai_fault, timeout, options)

    def __repr__(self) -> str:
        return f"GeminiEmbedder(name={self.name!r}, connection={self.connection!r})"

    def _request(self, texts: Sequence[str], task: str) -> dict[str, Any]:
        _, types = import_genai()
        # google-genai takes the per-request timeout in milliseconds
        limit_ms = max(1, int(self.request_timeout(len(texts)) * 1000))
        config: dict[str, Any] = {"http_options": types.HttpOptions(timeout=limit_ms)}
        if self.output_dimensionality:
            config["output_dimensionality"] = self.output_dimensionality
        if self.task_types:
            config["task_type"] = task
        return {"model": self.model, "contents": list(texts), "config": types.EmbedContentConfig(**config)}

    def _rows(self, response: Any, expected: int) -> np.ndarray:
        embeddings = getattr(response, "embeddings", None) or []
        if len(embeddings) != expected:
            raise ProviderError(self.name, f"returned {len(embeddings)} embeddings for {expected} inputs")
        return as_matrix([e.values for e in embeddings], expected, self.name)

    def _embed(self, texts: Sequence[str], task: str) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return self._finish([])
        client = self.connection.client()
        parts = []
        for start, end in plan_batches(texts, self.batch_size):
            request = self._request(texts[start:end], task)
            response = call_with_retry(lambda: client.models.embed_content(**request),
                                       **self._retry_kwargs(self.request_timeout(end - start)))
            parts.append(self._rows(response, end - start))
        return self._finish(parts)

    async def _aembed(self, texts: Sequence[str], task: str) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return self._finish([])
        models = self.connection.async_models()
        parts = []
        for start, end in plan_batches(texts, self.batch_size):
            request = self._request(texts[start:end], task)
            response = await acall_with_retry(lambda: models.embed_content(**request),
                                              **self._retry_kwargs(self.request_timeout(end - start)))
            parts.append(self._rows(response, end - start))
        return self._finish(parts)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed all texts in batches of ``batch_size``; any failed batch raises, nothing partial returned."""
        return self._embed(texts, "RETRIEVAL_DOCUMENT")

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], "RETRIEVAL_QUERY")[0]

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return await self._aembed(texts, "RETRIEVAL_DOCUMENT")

    async def aembed_query(self, text: str) -> np.ndarray:
        return (await self._aembed([text], "RETRIEVAL_QUERY"))[0]


__all__ = ["GeminiEmbedder", "MAX_BATCH"]
