"""``ollama:<model>`` embeddings through Ollama's ``/api/embed`` (many inputs per request).

A batch that still fails after retries raises and nothing is returned. Also usable directly:
``OllamaEmbedder("nomic-embed-text", host="http://gpu-box:11434")``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from akasha.providers.faults import http_fault
from akasha.providers.ollama_conn import OllamaConnection
from akasha.providers.remote import RemoteEmbedder


class OllamaEmbedder(RemoteEmbedder):
    """Embedder over Ollama ``/api/embed``; normalised float32 rows.

    Options: ``host`` (alias ``base_url``), ``api_key``, ``timeout`` (plus ``timeout_per_text`` s per text,
    default 0.25), ``batch_size``, ``truncate`` (default True, as Ollama's), ``keep_alive``, retry options.
    """

    provider = "ollama"
    example = "nomic-embed-text"

    def __init__(self, rest: str, *, batch_size: int = 64, truncate: bool = True,
                 keep_alive: str | int | None = None, **options: Any) -> None:
        super().__init__(rest, options, OllamaConnection, http_fault)
        self.batch_size = self._batch_size(batch_size)
        self.truncate = truncate
        self.keep_alive = keep_alive

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "input": texts}
        if not self.truncate:
            payload["truncate"] = False
        if self.keep_alive is not None:
            payload["keep_alive"] = self.keep_alive
        return payload

    def _request(self, texts: list[str], task: str, timeout: float) -> Callable[[], Any]:
        return lambda: self.connection.post("/api/embed", self._payload(texts), timeout=timeout)

    def _arequest(self, texts: list[str], task: str, timeout: float) -> Callable[[], Awaitable[Any]]:
        return lambda: self.connection.apost("/api/embed", self._payload(texts), timeout=timeout)

    def _vectors(self, reply: Any) -> Sequence[Any]:
        return reply.get("embeddings") or []


__all__ = ["OllamaEmbedder"]
