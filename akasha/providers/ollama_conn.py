"""HTTP plumbing for Ollama's native API (``/api/chat``, ``/api/embed``) over ``httpx``.

The address is ``host=`` (or ``base_url=``), else ``OLLAMA_HOST`` (``0.0.0.0``, ``myhost:8080``,
``https://proxy/ollama``...), else ``http://localhost:11434``. An optional ``api_key`` (or
``OLLAMA_API_KEY``, for ollama.com or a proxy) is sent as a Bearer token and redacted everywhere.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, Generator
from typing import Any
from urllib.parse import urlsplit

from akasha.errors import MissingExtraError
from akasha.providers.bounded import transports
from akasha.providers.clients import Connection
from akasha.providers.credentials import split_credentials, with_credentials
from akasha.providers.endpoints import endpoint_label, is_default_ollama
from akasha.providers.env import env_value
from akasha.providers.faults import HTTPFault, StreamErrorEvent
from akasha.retry import DEFAULT_TIMEOUT
from akasha.stores.redact import redact_url

DEFAULT_HOST = "http://localhost:11434"


def normalize_host(raw: str | None) -> str:
    """Turn an ``OLLAMA_HOST``-style value into a base URL with scheme and port."""
    value = (raw or "").strip()
    if not value:
        return DEFAULT_HOST
    if "://" not in value:
        value = "http://" + value
    parts = urlsplit(value)
    host = parts.hostname or "localhost"
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    port = parts.port or (443 if parts.scheme == "https" else 11434 if not parts.path.strip("/") else None)
    netloc = f"{host}:{port}" if port else host
    return f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}"


def _import_httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:
        raise MissingExtraError("httpx", "light", "ollama: models") from exc
    return httpx


def _fault(response: Any, body: bytes) -> HTTPFault:
    """The HTTPFault for an error reply (status >= 400) whose body is ``body`` (Ollama's ``{"error": ...}``)."""
    message = body.decode("utf-8", "replace").strip() or f"HTTP {response.status_code}"
    with contextlib.suppress(ValueError):
        data = json.loads(body)
        if isinstance(data, dict) and data.get("error"):
            message = str(data["error"])
    return HTTPFault(response.status_code, message, dict(response.headers))


def _json(response: Any) -> dict[str, Any]:
    """The JSON reply; an error status raises HTTPFault."""
    if response.status_code >= 400:
        raise _fault(response, response.content)
    return response.json()


def _event(line: str) -> dict[str, Any] | None:
    """One NDJSON line as an object (None for a blank line); an ``{"error": ...}`` line raises StreamErrorEvent."""
    if not line.strip():
        return None
    obj = json.loads(line)
    if obj.get("error"):
        raise StreamErrorEvent(str(obj["error"]))
    return obj


class OllamaConnection(Connection):
    """Builds httpx clients lazily (sync once, async per event loop) and speaks Ollama's JSON."""

    def __init__(self, *, host: str | None = None, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self._host = host or base_url  # base_url: the name the other providers use for the address
        self._api_key = api_key
        super().__init__(timeout)

    def __repr__(self) -> str:
        return f"OllamaConnection(host={redact_url(self._host) if self._host else '(OLLAMA_HOST or default)'!r})"

    @property
    def base_url(self) -> str:
        """The resolved address (reads ``OLLAMA_HOST`` when no host was given)."""
        return normalize_host(self._host or env_value("OLLAMA_HOST"))

    def endpoint_identity(self) -> str | None:
        """The resolved address as an embedder name carries it; None for Ollama's default
        (``localhost:11434``), so indexes built against a local Ollama keep their name."""
        url = self.base_url
        return None if is_default_ollama(url) else endpoint_label(url)

    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self._api_key, env_value("OLLAMA_API_KEY")) if s)

    def _new_client(self, asynchronous: bool) -> Any:
        httpx = _import_httpx()
        headers = {"Accept": "application/json"}
        key = self._api_key or env_value("OLLAMA_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        # user:password in the address is sent as Basic auth, and never left in the URL httpx logs
        raw = (self._host or env_value("OLLAMA_HOST") or "").strip()
        _, credentials = split_credentials(raw if "://" in raw else f"http://{raw}")
        kind = httpx.AsyncClient if asynchronous else httpx.Client
        return kind(transport=transports(httpx)[1 if asynchronous else 0](), base_url=self.base_url,
                    headers=with_credentials(headers, credentials), timeout=httpx.Timeout(self.timeout))

    def _timeout(self, seconds: float | None) -> Any:
        return _import_httpx().Timeout(self.timeout if seconds is None else float(seconds))

    def post(self, path: str, payload: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """POST JSON and return the JSON reply (``timeout``: this request's own limit, a large embedding batch's)."""
        return _json(self.client().post(path, json=payload, timeout=self._timeout(timeout)))

    async def apost(self, path: str, payload: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        return _json(await self.async_client().post(path, json=payload, timeout=self._timeout(timeout)))

    def stream_lines(self, path: str, payload: dict[str, Any]) -> Generator[dict[str, Any], None, None]:
        """POST and yield each NDJSON object; an ``{"error": ...}`` line raises StreamErrorEvent."""
        with self.client().stream("POST", path, json=payload) as response:
            if response.status_code >= 400:
                raise _fault(response, response.read())
            for line in response.iter_lines():
                event = _event(line)
                if event is not None:
                    yield event

    async def astream_lines(self, path: str, payload: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        async with self.async_client().stream("POST", path, json=payload) as response:
            if response.status_code >= 400:
                raise _fault(response, await response.aread())
            async for line in response.aiter_lines():
                event = _event(line)
                if event is not None:
                    yield event


__all__ = ["DEFAULT_HOST", "OllamaConnection", "normalize_host"]
