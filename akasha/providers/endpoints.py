"""Endpoint labels for embedder identities: where vectors come from, without secrets.

An embedder's ``name`` keys the vector cache, so two servers answering for one model name must
not share vectors: remote embedders add the address they talk to (:func:`endpoint_label`: no
credentials, query or fragment) to their name; the provider's own public endpoint adds nothing,
so older indexes stay valid.

The same ``@<address>`` (``http://`` or ``https://`` only) names an endpoint in a model string
(``"openai:qwen2.5-7b@http://127.0.0.1:8080/v1"``): :func:`endpoint_options` turns it into the
provider's own option, which wins over ``OPENAI_BASE_URL``/``OLLAMA_HOST``/...
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from akasha.errors import ConfigError

#: Hosts of the providers' own public endpoints; an address on one of these adds nothing to a name.
PUBLIC_HOSTS = {"openai": frozenset({"api.openai.com"}), "gemini": frozenset({"generativelanguage.googleapis.com"})}
#: Ollama's default hosts: this machine, and ``ollama`` (the RAGPipeline format's Docker default).
_OLLAMA_DEFAULT_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "ollama"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: Model-string prefix -> the provider option an ``@<address>`` suffix sets.
ENDPOINT_OPTIONS = {"openai": "base_url", "gemini": "base_url", "ollama": "base_url", "hf_api": "endpoint"}
_ENDPOINT_SUFFIX = re.compile(r"@(https?://\S+)$", re.IGNORECASE)


def split_endpoint(rest: str) -> tuple[str, str | None]:
    """``"model@http://host:8080/v1"`` -> ``("model", "http://host:8080/v1")``; no address -> ``(rest, None)``."""
    match = _ENDPOINT_SUFFIX.search(rest)
    if match is None:
        return rest, None
    return rest[: match.start()].strip(), match.group(1).rstrip("/")


def endpoint_options(prefix: str, rest: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The model part of ``rest`` and ``options`` plus the provider option an ``@<address>`` sets; ConfigError
    when ``prefix`` talks to no address, or when that option is also given (two addresses for one model)."""
    model, address = split_endpoint(rest)
    if address is None:
        return rest, options
    where = f"{prefix}:{model}@{endpoint_label(address)}"  # no user name or password in messages
    option = ENDPOINT_OPTIONS.get(prefix)
    if option is None:
        served = ", ".join(f"{p}:" for p in ENDPOINT_OPTIONS)
        raise ConfigError(f"{where!r}: an @<address> is only for models served over HTTP ({served}); "
                          f"{prefix} models run on this machine. Remove the '@...' part")
    if options.get(option) or (prefix == "ollama" and options.get("host")):
        raise ConfigError(f"{where!r} names an address and {option}= is given too; keep one of them")
    return model, {**options, option: address}


def endpoint_label(url: str | None) -> str | None:
    """``url`` reduced to ``scheme://host[:port][/path]`` (a default port, case and a trailing slash dropped)
    with no credentials or query; None when empty. ``gpu-box:8080`` is read as ``http://``; a value that
    cannot be parsed comes back stripped, with anything after ``?`` or ``#`` cut."""
    value = (url or "").strip()
    if not value:
        return None
    if "://" not in value:
        value = "http://" + value
    try:
        parts = urlsplit(value)
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return value.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    scheme = parts.scheme.lower()
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None or _DEFAULT_PORTS.get(scheme) == port else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


def host_of(label: str | None) -> str | None:
    """The lower-case host name of an address (brackets removed), or None."""
    if not label:
        return None
    try:
        return urlsplit(label if "://" in label else "http://" + label).hostname
    except ValueError:
        return None


def is_public_endpoint(provider: str, url: str | None) -> bool:
    """True when ``url`` is empty or on ``provider``'s own public host (so it adds nothing to a name)."""
    return not (url or "").strip() or host_of(url) in PUBLIC_HOSTS.get(provider, frozenset())


def is_default_ollama(url: str | None, default_port: int = 11434) -> bool:
    """True for Ollama's default addresses: port 11434 on this machine (``localhost``, ``127.0.0.1``,
    ``::1``) or on ``ollama``, the RAGPipeline format's default endpoint ``http://ollama:11434``."""
    if not (url or "").strip():
        return True
    try:
        parts = urlsplit(url if "://" in str(url) else "http://" + str(url))
        return parts.hostname in _OLLAMA_DEFAULT_HOSTS and parts.port == default_port and not parts.path.strip("/")
    except ValueError:
        return False


def identity_suffix(label: str | None) -> str:
    """``"@<label>"`` to append to an embedder name, or ``""`` when there is no label."""
    return f"@{label}" if label else ""


__all__ = ["ENDPOINT_OPTIONS", "PUBLIC_HOSTS", "endpoint_label", "endpoint_options", "host_of", "identity_suffix",
           "is_default_ollama", "is_public_endpoint", "split_endpoint"]
