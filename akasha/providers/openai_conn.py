"""Lazily built ``openai`` clients shared by the OpenAI chat model and embedder.

Settings are read at first use: an explicit ``api_key`` / ``base_url`` wins; otherwise
``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``; otherwise, when ``AZURE_OPENAI_ENDPOINT`` and
``AZURE_OPENAI_API_KEY`` are set, an ``openai.AzureOpenAI`` client (``api_version`` or
``OPENAI_API_VERSION``; the model name is the deployment). A custom ``base_url`` (vLLM, Ollama,
LM Studio, llama.cpp server, TEI) works without a key. The clients' own retries are off
(``max_retries=0``): akasha retries in :mod:`akasha.retry`, the same for every provider.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from akasha.errors import MissingAPIKeyError, MissingExtraError
from akasha.providers.bounded import bounded_request, transports
from akasha.providers.clients import Connection
from akasha.providers.credentials import basic_value, split_credentials, with_credentials
from akasha.providers.endpoints import endpoint_label, is_public_endpoint
from akasha.providers.env import env_value
from akasha.retry import DEFAULT_TIMEOUT
from akasha.stores.redact import redact_url

logger = logging.getLogger("akasha.providers")

DEFAULT_AZURE_API_VERSION = "2024-10-21"
#: Placeholder sent to OpenAI-compatible servers that need no key.
NO_KEY = "not-needed"


def _httpx_of(openai: Any) -> Any:
    """The httpx-like package ``openai.DefaultHttpxClient`` extends (httpx2 in openai 3, else httpx)."""
    import importlib

    base = next((c for c in openai.DefaultHttpxClient.__mro__ if c.__name__ == "Client"), None)
    return importlib.import_module(base.__module__.split(".")[0] if base is not None else "httpx")


class OpenAIConnection(Connection):
    """Resolves settings and builds (once) the sync and per-event-loop async clients."""

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 azure: bool | None = None, azure_endpoint: str | None = None, api_version: str | None = None,
                 organization: str | None = None, default_headers: dict[str, str] | None = None) -> None:
        self._api_key = api_key
        self.base_url = base_url
        super().__init__(timeout)
        self.azure = azure
        self.azure_endpoint = azure_endpoint
        self.api_version = api_version
        self.organization = organization
        self.default_headers = dict(default_headers or {})
        self._resolved: dict[str, Any] | None = None
        self._lock = threading.Lock()
        #: what a self-hosted server said about itself (``"context"``), probed once
        self._probed: dict[str, Any] = {}

    def __repr__(self) -> str:
        target = redact_url(self.base_url or self.azure_endpoint or "") or "(from environment)"
        return f"OpenAIConnection(base_url={target!r}, api_key={'***' if self._api_key else None})"

    def target(self) -> tuple[bool, str | None, str | None, tuple[str, str] | None]:
        """Where requests go, from explicit settings and the environment (needs no key, never raises):
        ``(use_azure, base_url, azure_endpoint, credentials)``, a ``user:password@`` in the base URL taken
        out into ``credentials`` (sent as a header, never logged)."""
        base_url = self.base_url or (None if self.azure else env_value("OPENAI_BASE_URL"))
        credentials = None
        if base_url:
            base_url, credentials = split_credentials(base_url)
        endpoint = self.azure_endpoint or env_value("AZURE_OPENAI_ENDPOINT")
        use_azure = self.azure
        if use_azure is None:  # auto: Azure settings present and no OpenAI-compatible base URL
            use_azure = bool(not base_url and endpoint and (self._api_key or env_value("AZURE_OPENAI_API_KEY")))
        return bool(use_azure), base_url, endpoint, credentials

    def endpoint_identity(self) -> str | None:
        """The address requests go to (Azure's ``azure_endpoint``), as an embedder name carries it; None for
        api.openai.com. The resolved settings once a client exists; needs no key and never raises."""
        if self._resolved is not None:
            settings = self._resolved
            use_azure = settings["kind"] == "azure"
            base_url, endpoint = settings.get("base_url"), settings.get("azure_endpoint")
        else:
            use_azure, base_url, endpoint, _ = self.target()
        if use_azure:
            return endpoint_label(endpoint)
        return None if is_public_endpoint("openai", base_url) else endpoint_label(base_url)

    def resolve(self) -> dict[str, Any]:
        """Read explicit settings and the environment; raise MissingAPIKeyError if no key."""
        if self._resolved is not None:
            return self._resolved
        use_azure, base_url, endpoint, credentials = self.target()
        if use_azure:
            if not endpoint:
                raise MissingAPIKeyError("azure openai", ["AZURE_OPENAI_ENDPOINT"], "or pass azure_endpoint=...")
            key = self._api_key or env_value("AZURE_OPENAI_API_KEY")
            if not key:
                raise MissingAPIKeyError("azure openai", ["AZURE_OPENAI_API_KEY"])
            version = self.api_version or env_value("OPENAI_API_VERSION", default=DEFAULT_AZURE_API_VERSION)
            settings: dict[str, Any] = {"kind": "azure", "api_key": key, "azure_endpoint": endpoint,
                                        "api_version": version}
        else:
            key = self._api_key or env_value("OPENAI_API_KEY")
            if not key:
                if base_url and "api.openai.com" not in base_url:
                    key = NO_KEY  # local OpenAI-compatible servers usually need no key
                else:
                    raise MissingAPIKeyError("openai", ["OPENAI_API_KEY"])
            settings = {"kind": "openai", "api_key": key, "base_url": base_url, "credentials": credentials}
        self._resolved = settings
        logger.debug("openai connection: %s endpoint %s", settings["kind"],
                     settings.get("base_url") or settings.get("azure_endpoint") or "api.openai.com")
        return settings

    def server_url(self) -> str | None:
        """The base URL of a self-hosted OpenAI-compatible server; None for api.openai.com and Azure."""
        use_azure, base_url, _, _ = self.target()
        if use_azure or not base_url or is_public_endpoint("openai", base_url):
            return None
        return base_url.rstrip("/")

    def server_root(self) -> str | None:
        """:meth:`server_url` without a trailing ``/v1``, where llama.cpp and vLLM serve ``/tokenize``, ``/props``."""
        url = self.server_url()
        return None if url is None else url.removesuffix("/v1")

    def server_headers(self) -> dict[str, str]:
        """Headers for the server's own endpoints: the key as a Bearer token when one is set, and default_headers."""
        headers = dict(self.default_headers)
        key = self._api_key or env_value("OPENAI_API_KEY")
        if key and key != NO_KEY:
            headers["Authorization"] = f"Bearer {key}"
        _, _, _, credentials = self.target()
        return with_credentials(headers, credentials)

    def server_context_window(self, model: str, timeout: float = 5.0) -> int | None:
        """The context a self-hosted server gives one request, or None when it does not say (probed once).

        llama.cpp: ``GET /props`` -> ``default_generation_settings.n_ctx`` (per slot), else ``GET
        /v1/models`` -> ``meta.n_ctx``; vLLM: ``max_model_len`` there. Failures are logged at DEBUG.
        """
        with self._lock:
            if "context" in self._probed:
                return self._probed["context"]
        value = self._probe_context(model, timeout)
        with self._lock:
            self._probed["context"] = value
        if value is not None:
            logger.info("%s serves %s with a %d-token context per request", self.server_url(), model, value)
        return value

    def _probe_context(self, model: str, timeout: float) -> int | None:
        root, url = self.server_root(), self.server_url()
        if root is None or url is None:
            return None
        try:
            import httpx
        except ImportError:
            return None

        def get(address: str) -> Any:
            try:
                response = bounded_request("GET", address, timeout=timeout, headers=self.server_headers())
                return response.json() if response.status_code == 200 else None
            except (httpx.HTTPError, ValueError) as exc:
                logger.debug("no context size from %s: %s", address, exc)
                return None

        props = get(f"{root}/props")
        if isinstance(props, dict):
            n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
            if isinstance(n_ctx, int) and n_ctx > 0:
                return n_ctx
        models = get(f"{url}/models")
        entries = models.get("data") if isinstance(models, dict) else None
        if not isinstance(entries, list) or not entries:
            return None
        chosen = [e for e in entries if isinstance(e, dict) and e.get("id") == model] or (
            entries if len(entries) == 1 else [])
        for entry in chosen:
            for value in ((entry.get("meta") or {}).get("n_ctx"), entry.get("max_model_len")):
                if isinstance(value, int) and value > 0:
                    return value
        return None

    @property
    def is_official(self) -> bool:
        """True when talking to api.openai.com or Azure (which accept ``max_completion_tokens``)."""
        settings = self.resolve()
        return settings["kind"] == "azure" or not settings.get("base_url") or "api.openai.com" in settings["base_url"]

    def secrets(self) -> tuple[str, ...]:
        """Values to redact from anything we emit (explicit and resolved keys)."""
        found = [self._api_key, (self._resolved or {}).get("api_key"), env_value("OPENAI_API_KEY"),
                 env_value("AZURE_OPENAI_API_KEY")]
        return tuple(s for s in found if s and s != NO_KEY)

    def _new_client(self, asynchronous: bool) -> Any:
        """An ``openai.(Async)OpenAI`` or ``openai.(Async)AzureOpenAI`` client on akasha's bounded transport."""
        try:
            import openai
        except ImportError as exc:
            raise MissingExtraError("openai", "light", "openai: models") from exc
        settings = self.resolve()
        kwargs: dict[str, Any] = {"api_key": settings["api_key"], "timeout": self.timeout, "max_retries": 0}
        if self.organization:
            kwargs["organization"] = self.organization
        headers = dict(self.default_headers)
        credentials = settings.get("credentials")
        if credentials is not None:
            # the client sends the key as its Bearer Authorization; the address's user:password goes beside it
            # (as Authorization when the server needs no key, else Proxy-Authorization)
            real_key = settings["api_key"] != NO_KEY
            headers["Proxy-Authorization" if real_key else "Authorization"] = basic_value(credentials)
        if headers:
            kwargs["default_headers"] = headers
        azure = settings["kind"] == "azure"
        if azure:
            kwargs.update(azure_endpoint=settings["azure_endpoint"], api_version=settings["api_version"])
        elif settings["base_url"]:
            kwargs["base_url"] = settings["base_url"]
        transport = transports(_httpx_of(openai))[1 if asynchronous else 0]()
        kwargs["http_client"] = (openai.DefaultAsyncHttpxClient if asynchronous else openai.DefaultHttpxClient)(
            transport=transport)
        kinds = ((openai.OpenAI, openai.AzureOpenAI), (openai.AsyncOpenAI, openai.AsyncAzureOpenAI))
        return kinds[asynchronous][azure](**kwargs)


__all__ = ["OpenAIConnection"]
