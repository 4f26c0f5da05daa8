"""``reranking.provider: cohere``: Cohere's HTTP rerank API (v2 ``/rerank``).

``POST {endpoint}/v2/rerank`` with ``{"model", "query", "documents", "top_n"}``;
the answer's ``results[].index`` / ``relevance_score`` become the hits' scores.
``api_key`` comes from the section, else ``CO_API_KEY`` / ``COHERE_API_KEY``;
without one, build raises :class:`~akasha.errors.MissingAPIKeyError`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from akasha.errors import MissingAPIKeyError, MissingExtraError, ProviderError
from akasha.rerank.cross_encoder import rescore
from akasha.types import Hit

DEFAULT_MODEL = "rerank-english-v3.0"
DEFAULT_ENDPOINT = "https://api.cohere.com"
KEY_VARIABLES = ("CO_API_KEY", "COHERE_API_KEY")


class CohereReranker:
    """Reranks through Cohere's API; every candidate is sent, ``top_n`` caps the answer."""

    def __init__(self, api_key: str, model: str = DEFAULT_MODEL, endpoint: str = DEFAULT_ENDPOINT, timeout: float = 60.0) -> None:
        self.name = f"cohere:{model}"
        self.model = model
        self.url = endpoint.rstrip("/") + "/v2/rerank"
        self._api_key = api_key
        self._timeout = timeout

    def rerank(self, query: str, hits: Sequence[Hit], top_k: int) -> list[Hit]:
        if not hits:
            return []
        try:
            import httpx
        except ImportError:
            raise MissingExtraError("httpx", "light", "reranking provider 'cohere'") from None
        body = {"model": self.model, "query": query, "documents": [h.chunk.text for h in hits], "top_n": min(top_k, len(hits))}
        headers = {"Authorization": f"Bearer {self._api_key}", "Content-Type": "application/json"}
        try:
            response = httpx.post(self.url, json=body, headers=headers, timeout=self._timeout)
        except httpx.HTTPError as exc:
            raise ProviderError("cohere", f"could not reach {self.url}: {exc}") from None
        if response.status_code >= 400:
            raise ProviderError("cohere", response.text[:300], response.status_code)
        results = response.json().get("results", [])
        # Candidates Cohere left out (beyond top_n) rank below every returned one.
        scores = [float("-inf")] * len(hits)
        for item in results:
            index = int(item["index"])
            if not 0 <= index < len(hits):
                raise ProviderError("cohere", f"rerank result index {index} is out of range for {len(hits)} documents")
            scores[index] = float(item["relevance_score"])
        kept = min(top_k, len(results))
        return rescore(hits, scores, kept)


def make_cohere_reranker(config: dict[str, Any], context: Any = None) -> CohereReranker:
    """Registry factory for ``reranking.provider: cohere`` (httpx and the key are checked here, at build)."""
    import importlib.util

    if importlib.util.find_spec("httpx") is None:
        raise MissingExtraError("httpx", "light", "reranking provider 'cohere'")
    key = config.get("api_key") or next((os.environ[v] for v in KEY_VARIABLES if os.environ.get(v)), None)
    if not key:
        raise MissingAPIKeyError("cohere", KEY_VARIABLES, "or set reranking.api_key in the spec")
    return CohereReranker(str(key), str(config.get("model") or DEFAULT_MODEL), str(config.get("endpoint") or DEFAULT_ENDPOINT))


__all__ = ["CohereReranker", "make_cohere_reranker", "DEFAULT_MODEL"]
