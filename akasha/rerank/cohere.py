"""``reranking.provider: cohere``: Cohere's HTTP rerank API (v2 ``/rerank``).

``POST {endpoint}/v2/rerank`` with every candidate (``top_n`` is their number), so the answer is a
complete ordering that :func:`akasha.rerank.rerank` validates before ``reranking.top_k`` trims it.
``api_key`` comes from the section, else ``CO_API_KEY`` / ``COHERE_API_KEY`` (only for Cohere's own
host). ``endpoint`` receives the key and every candidate's text: it must be ``https://``, or plain
``http://`` to a loopback address; anything else raises :class:`~akasha.errors.ConfigError` at build.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from akasha.errors import ConfigError, MissingAPIKeyError, MissingExtraError, ProviderError
from akasha.providers.bounded import bounded_request
from akasha.providers.credentials import split_credentials, with_credentials
from akasha.rerank import Ranking
from akasha.types import Hit

DEFAULT_MODEL = "rerank-english-v3.0"
DEFAULT_ENDPOINT = "https://api.cohere.com"
KEY_VARIABLES = ("CO_API_KEY", "COHERE_API_KEY")


def check_endpoint(endpoint: str) -> str:
    """``endpoint`` if it is https (or plain http to a loopback address), else ConfigError saying why."""
    try:
        parts = urlsplit(str(endpoint).strip())
        host, port = parts.hostname or "", parts.port
    except ValueError:
        raise ConfigError("reranking.endpoint is not a URL; use https://host[:port]") from None
    shown = f"{parts.scheme}://{host}" + (f":{port}" if port else "")  # never the user:password part
    if parts.scheme not in ("https", "http") or not host:
        raise ConfigError(f"reranking.endpoint {shown!r} must be an https:// URL with a host")
    if parts.scheme == "http":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host.lower() == "localhost"
        if not loopback:
            raise ConfigError(f"reranking.endpoint {shown!r} would send the API key and the document texts "
                              "unencrypted; use https:// (plain http:// is allowed only to a loopback address such "
                              "as http://127.0.0.1:8080)")
    return str(endpoint).strip()


class CohereReranker:
    """Reranks through Cohere's API: every candidate is sent and ranked."""

    def __init__(self, api_key: str, model: str = DEFAULT_MODEL, endpoint: str = DEFAULT_ENDPOINT,
                 timeout: float = 60.0) -> None:
        self.name = f"cohere:{model}"
        self.model = model
        # credentials in the endpoint go in a header, never in the URL (logs, messages); the key stays Bearer
        self.url, self._url_credentials = split_credentials(check_endpoint(endpoint).rstrip("/") + "/v2/rerank")
        self._api_key = api_key
        self._timeout = timeout

    def rank(self, query: str, hits: Sequence[Hit]) -> Ranking:
        if not hits:
            return Ranking([])
        try:
            import httpx
        except ImportError:
            raise MissingExtraError("httpx", "light", "reranking provider 'cohere'") from None
        body = {"model": self.model, "query": query, "documents": [h.chunk.text for h in hits], "top_n": len(hits)}
        headers = with_credentials({"Authorization": f"Bearer {self._api_key}", "Content-Type": "application/json"},
                                   self._url_credentials)
        try:
            response = bounded_request("POST", self.url, json=body, headers=headers, timeout=self._timeout)
        except httpx.HTTPError as exc:
            raise ProviderError("cohere", f"could not reach {self.url}: {exc}") from None
        if response.status_code >= 400:
            raise ProviderError("cohere", response.text[:300], response.status_code)
        try:
            results = response.json().get("results", [])
            order = [int(item["index"]) for item in results]
            by_index = {int(item["index"]): float(item["relevance_score"]) for item in results}
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ProviderError("cohere", f"unexpected rerank answer ({type(exc).__name__}: {exc})") from None
        scores = [by_index.get(i, float("-inf")) for i in range(len(hits))]
        return Ranking(order, scores)


def make_cohere_reranker(config: dict[str, Any], context: Any = None) -> CohereReranker:
    """Registry factory for ``reranking.provider: cohere`` (httpx and the key are checked here, at build)."""
    if importlib.util.find_spec("httpx") is None:
        raise MissingExtraError("httpx", "light", "reranking provider 'cohere'")
    endpoint = str(config.get("endpoint") or DEFAULT_ENDPOINT)
    key = config.get("api_key")
    if not key and _own_host(endpoint):  # a key from the environment goes to Cohere's own host only
        key = next((os.environ[v] for v in KEY_VARIABLES if os.environ.get(v)), None)
    if not key:
        where = "" if _own_host(endpoint) else (
            f" (reranking.endpoint names another host, {split_credentials(endpoint)[0]!r}: the environment's "
            "Cohere key is not sent there, name its key in the spec)")
        raise MissingAPIKeyError("cohere", KEY_VARIABLES, f"or set reranking.api_key in the spec{where}")
    return CohereReranker(str(key), str(config.get("model") or DEFAULT_MODEL), endpoint)


def _own_host(endpoint: str) -> bool:
    """True when ``endpoint`` is on Cohere's own host (where the environment's key belongs)."""
    try:
        host = urlsplit(split_credentials(endpoint)[0]).hostname or ""
    except ValueError:
        return False
    return host.lower() == urlsplit(DEFAULT_ENDPOINT).hostname


__all__ = ["CohereReranker", "make_cohere_reranker", "DEFAULT_MODEL"]
