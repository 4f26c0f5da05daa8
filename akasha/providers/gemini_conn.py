"""Lazily built ``google-genai`` clients shared by the Gemini chat model and embedder.

The key comes from ``api_key=``, else ``GEMINI_API_KEY``, else ``GOOGLE_API_KEY``, read at first
use. ``base_url=`` (or the library's own ``GOOGLE_GEMINI_BASE_URL``) points the client at a proxy
or a test server. The library's retries stay off: akasha retries in :mod:`akasha.retry`.
"""

from __future__ import annotations

from typing import Any

from akasha.errors import MissingExtraError
from akasha.providers.bounded import transports
from akasha.providers.clients import Connection
from akasha.providers.credentials import split_credentials, with_credentials
from akasha.providers.endpoints import endpoint_label, is_public_endpoint
from akasha.providers.env import env_value, require_api_key
from akasha.retry import DEFAULT_TIMEOUT
from akasha.stores.redact import redact_url

KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def _httpx_module() -> Any:
    """httpx2 when installed (google-genai's default backend), else httpx."""
    try:
        import httpx2
    except ImportError:
        import httpx

        return httpx
    return httpx2


def import_genai() -> tuple[Any, Any]:
    """``(google.genai, google.genai.types)`` or MissingExtraError."""
    try:
        from google import genai
        from google.genai import types
    except ImportError as exc:
        raise MissingExtraError("google-genai", "light", "gemini: models") from exc
    return genai, types


class GeminiConnection(Connection):
    """Resolves the key and builds the sync client and one async-capable client per event loop."""

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None, api_version: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, headers: dict[str, str] | None = None) -> None:
        self._api_key = api_key
        self.base_url = base_url
        self.api_version = api_version
        super().__init__(timeout)
        self.headers = dict(headers or {})

    def __repr__(self) -> str:
        shown = redact_url(self.base_url) if self.base_url else None
        return f"GeminiConnection(base_url={shown!r}, api_key={'***' if self._api_key else None})"

    def endpoint_identity(self) -> str | None:
        """``base_url`` (else ``GOOGLE_GEMINI_BASE_URL``, as the client reads it) as an embedder name carries it;
        None for Google's public endpoint."""
        base_url = self.base_url or env_value("GOOGLE_GEMINI_BASE_URL")
        return None if is_public_endpoint("gemini", base_url) else endpoint_label(base_url)

    def secrets(self) -> tuple[str, ...]:
        found = [self._api_key, *(env_value(name) for name in KEY_VARIABLES)]
        return tuple(s for s in found if s)

    def _new_client(self, asynchronous: bool) -> Any:
        """A ``genai.Client`` (async requests go through its ``aio`` side, one client per event loop)."""
        genai, types = import_genai()
        key = require_api_key("gemini", self._api_key, KEY_VARIABLES)
        options: dict[str, Any] = {"timeout": max(1, int(self.timeout * 1000))}  # milliseconds
        headers = dict(self.headers)
        if self.base_url:
            # user:password in the address goes as a header (the key travels as x-goog-api-key)
            options["base_url"], credentials = split_credentials(self.base_url)
            headers = with_credentials(headers, credentials)
        if self.api_version:
            options["api_version"] = self.api_version
        if headers:
            options["headers"] = headers
        sync_transport, async_transport = transports(_httpx_module())
        options["client_args"] = {"transport": sync_transport()}
        options["async_client_args"] = {"transport": async_transport()}
        return genai.Client(api_key=key, vertexai=False, http_options=types.HttpOptions(**options))

    def async_models(self) -> Any:
        """``client.aio.models`` of a client owned by the running event loop."""
        return self.async_client().aio.models


__all__ = ["KEY_VARIABLES", "GeminiConnection", "import_genai"]
