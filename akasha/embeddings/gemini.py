"""``gemini:<model>`` embeddings through ``google-genai``'s ``embed_content``.

Batches of at most :data:`MAX_BATCH` texts. Documents get task type ``RETRIEVAL_DOCUMENT``, questions
``RETRIEVAL_QUERY``. A batch that still fails after retries raises and nothing is returned.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from akasha.providers.faults import genai_fault
from akasha.providers.gemini_conn import GeminiConnection, import_genai
from akasha.providers.remote import RemoteEmbedder

#: ``batchEmbedContents`` accepts at most this many requests.
MAX_BATCH = 100
KNOWN_DIMENSIONS = {"text-embedding-004": 768, "embedding-001": 768, "gemini-embedding-001": 3072}


class GeminiEmbedder(RemoteEmbedder):
    """Embedder over Gemini ``embed_content``; normalised float32 rows.

    Options: ``output_dimensionality``, ``batch_size`` (<= 100), ``task_types`` (False: none sent), ``api_key``,
    ``base_url``, ``api_version``, ``timeout`` (plus ``timeout_per_text`` s per text, default 0.25), ``headers``,
    retry options.
    """

    provider = "gemini"
    example = "gemini-embedding-001"

    def __init__(self, rest: str, *, output_dimensionality: int | None = None, batch_size: int = MAX_BATCH,
                 task_types: bool = True, **options: Any) -> None:
        super().__init__(rest, options, GeminiConnection, genai_fault)
        self.batch_size = self._batch_size(batch_size, MAX_BATCH)
        self.output_dimensionality = self._output_size(output_dimensionality, KNOWN_DIMENSIONS)
        self.task_types = task_types

    def _params(self, texts: list[str], task: str, timeout: float) -> dict[str, Any]:
        _, types = import_genai()
        # google-genai takes the per-request timeout in milliseconds
        config: dict[str, Any] = {"http_options": types.HttpOptions(timeout=max(1, int(timeout * 1000)))}
        if self.output_dimensionality:
            config["output_dimensionality"] = self.output_dimensionality
        if self.task_types:
            config["task_type"] = task
        return {"model": self.model, "contents": texts, "config": types.EmbedContentConfig(**config)}

    def _request(self, texts: list[str], task: str, timeout: float) -> Callable[[], Any]:
        embed, params = self.connection.client().models.embed_content, self._params(texts, task, timeout)
        return lambda: embed(**params)

    def _arequest(self, texts: list[str], task: str, timeout: float) -> Callable[[], Awaitable[Any]]:
        embed, params = self.connection.async_models().embed_content, self._params(texts, task, timeout)
        return lambda: embed(**params)

    def _vectors(self, reply: Any) -> Sequence[Any]:
        return [e.values for e in getattr(reply, "embeddings", None) or []]


__all__ = ["GeminiEmbedder", "MAX_BATCH"]
