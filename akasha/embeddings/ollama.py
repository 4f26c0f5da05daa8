"""``ollama:<model>`` embeddings through Ollama's ``/api/embed`` (many inputs per request).

``batch_size`` (default 64) sets how many texts go in one request; a batch that
still fails after retries raises and nothing is returned. Reusable outside the
model-string form: ``OllamaEmbedder("nomic-embed-text", host="http://gpu-box:11434")``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from akasha.embeddings.base import as_matrix
from akasha.errors import ConfigError, ProviderError
from akasha.providers.batching import plan_batches
from akasha.providers.faults import http_fault
from akasha.providers.ollama_conn import OllamaConnection
from akasha.providers.remote import RemoteEmbedder
from akasha.retry import DEFAULT_TIMEOUT, acall_with_retry, call_with_retry


class OllamaEmbedder(RemoteEmbedder):
    """Embedder over Ollama ``/api/embed``; normalised float32 rows.

    Options: ``host`` (alias ``base_url``), ``api_key``, ``timeout`` (plus ``timeout_per_text``
    seconds per text in a request, default 0.25), ``batch_size``,
    ``truncate`` (default True, Ollama's own default), ``keep_alive``, and the retry options.
    """

    def __init__(
        self,
        rest: str,
        *,
        host: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        batch_size: int = 64,
        truncate: bool = True,
        keep_alive: str | int | None = None,
        **options: Any,
    ) -> None:
        self.model = rest.strip()
        if not self.model:
            raise ConfigError("ollama embeddings need a model name, e.g. 'ollama:nomic-embed-text'")
        if int(batch_size) <= 0:
            raise ConfigError(f"ollama embeddings batch_size must be positive, got {batch_size}")
        self.base_name = f"ollama:{self.model}"
        self.dimension: int | None = None
        self.batch_size = int(batch_size)
        self.truncate = truncate
        self.keep_alive = keep_alive
        connection = OllamaConnection(host=host or base_url, api_key=api_key, timeout=timeout)
        self._setup_calls(connection, http_fault, timeout, options)

    def __repr__(self) -> str:
        return f"OllamaEmbedder(name={self.name!r}, connection={self.connection!r})"

    def _payload(self, texts: Sequence[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if not self.truncate:
            payload["truncate"] = False
        if self.keep_alive is not None:
            payload["keep_alive"] = self.keep_alive
        return payload

    def _rows(self, reply: dict[str, Any], expected: int) -> np.ndarray:
        vectors = reply.get("embeddings") or []
        if len(vectors) != expected:
            raise ProviderError(self.name, f"returned {len(vectors)} embeddings for {expected} inputs")
        return as_matrix(vectors, expected, self.name)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed all texts, ``batch_size`` per request; any failed batch raises, nothing partial returned."""
        texts = list(texts)
        parts = []
        for start, end in plan_batches(texts, self.batch_size):
            payload = self._payload(texts[start:end])
            limit = self.request_timeout(end - start)
            reply = call_with_retry(lambda: self.connection.post("/api/embed", payload, timeout=limit),
                                    **self._retry_kwargs(limit))
            parts.append(self._rows(reply, end - start))
        return self._finish(parts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        parts = []
        for start, end in plan_batches(texts, self.batch_size):
            payload = self._payload(texts[start:end])
            limit = self.request_timeout(end - start)
            reply = await acall_with_retry(lambda: self.connection.apost("/api/embed", payload, timeout=limit),
                                           **self._retry_kwargs(limit))
            parts.append(self._rows(reply, end - start))
        return self._finish(parts)

    async def aembed_query(self, text: str) -> np.ndarray:
        return (await self.aembed_documents([text]))[0]


__all__ = ["OllamaEmbedder"]
