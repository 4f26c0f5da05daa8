"""``provider: hf`` embeddings over HTTP: the Hugging Face Inference API or a TEI server.

Both take ``POST {"inputs": [texts]}`` and answer one vector per text; token-level answers are
mean-pooled. ``endpoint`` defaults to the Inference API URL of ``model``; one with no path
(``http://tei:8080``) is a TEI server and gets ``/embed`` appended; any other URL is used as given.
``api_key`` is sent as a bearer token, never in names or errors. ``name`` is ``hf-api:<model>``
for the Inference API, else ``hf-api:<model>@<endpoint>``, so two servers never share a cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from akasha.embeddings.base import as_matrix
from akasha.errors import MissingExtraError, ProviderError
from akasha.providers.bounded import bounded_request
from akasha.providers.credentials import split_credentials, with_credentials
from akasha.providers.endpoints import endpoint_label, identity_suffix

DEFAULT_MODEL = "BAAI/bge-small-en-v1.5"
INFERENCE_API = "https://router.huggingface.co/hf-inference/models/{model}/pipeline/feature-extraction"


def endpoint_url(model: str, endpoint: str | None) -> str:
    """The URL embeddings are POSTed to (see the module docstring)."""
    if not endpoint:
        return INFERENCE_API.format(model=model)
    parts = urlsplit(endpoint)
    if parts.path in ("", "/"):
        return endpoint.rstrip("/") + "/embed"
    return endpoint


class HFInferenceEmbedder:
    """Embeds through a Hugging Face feature-extraction endpoint (Inference API or TEI)."""

    batch_size = 32

    def __init__(self, model: str = DEFAULT_MODEL, endpoint: str | None = None, api_key: str | None = None,
                 dimension: int | None = None, timeout: float = 60.0) -> None:
        self.model = model
        # credentials in the endpoint are sent as a header, never kept in the URL (logs, messages)
        self.url, self._url_credentials = split_credentials(endpoint_url(model, endpoint))
        # another endpoint than the Inference API decides the vectors: part of the identity
        default = self.url == INFERENCE_API.format(model=model)
        self.name = f"hf-api:{model}" + ("" if default else identity_suffix(endpoint_label(self.url)))
        self.dimension = dimension
        self._api_key = api_key
        self._timeout = timeout

    def _post(self, texts: list[str]) -> Any:
        try:
            import httpx
        except ImportError:
            raise MissingExtraError("httpx", "light", "the hf embeddings provider") from None
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        headers = with_credentials(headers, self._url_credentials)
        try:
            response = bounded_request("POST", self.url, json={"inputs": texts}, headers=headers, timeout=self._timeout)
        except httpx.HTTPError as exc:
            raise ProviderError("hf", f"could not reach {self.url}: {exc}") from None
        if response.status_code >= 400:
            raise ProviderError("hf", f"{self.url} answered {response.text[:300]!r}", response.status_code)
        return response.json()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        rows: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            data = self._post(batch)
            if isinstance(data, dict):  # some servers wrap the vectors
                data = data.get("embeddings", data.get("data", data))
            array = np.asarray(data, dtype=np.float32)
            if array.ndim == 3:  # token-level features: mean-pool per text
                array = array.mean(axis=1)
            rows.append(as_matrix(array, len(batch), self.name))
        matrix = np.concatenate(rows, axis=0)
        self.dimension = int(matrix.shape[1])
        return matrix

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def __repr__(self) -> str:
        return f"HFInferenceEmbedder(model={self.model!r}, url={self.url!r})"


def make_hf_api_embedder(config: dict[str, Any], context: Any = None) -> HFInferenceEmbedder:
    """Registry factory for ``embeddings.provider: hf`` (checks httpx now, so build fails, not the first query)."""
    import importlib.util

    if importlib.util.find_spec("httpx") is None:
        raise MissingExtraError("httpx", "light", "the hf embeddings provider")
    dimension = config.get("dimension")
    return HFInferenceEmbedder(
        model=str(config.get("model") or DEFAULT_MODEL),
        endpoint=config.get("endpoint"),
        api_key=config.get("api_key"),
        dimension=dimension if isinstance(dimension, int) else None,
    )


def make_hf_api_from_string(rest: str = "", **options: Any) -> HFInferenceEmbedder:
    """``embeddings="hf_api:<model>"`` in the facade: the same embedder as ``provider: hf`` in a RAGPipeline."""
    return HFInferenceEmbedder(rest.strip() or DEFAULT_MODEL, **options)


__all__ = ["HFInferenceEmbedder", "endpoint_url", "make_hf_api_embedder", "make_hf_api_from_string", "INFERENCE_API"]
