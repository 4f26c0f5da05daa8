"""Which models a server offers: ``GET /models`` (OpenAI-compatible) or ``GET /api/tags`` (Ollama).

The command line uses this to fill in the models the user did not name when ``OPENAI_BASE_URL``,
``OLLAMA_HOST`` or ``--base-url`` points at a server of their own. Standard library only, so it
works without the extras; failures raise :class:`~akasha.errors.ProviderError` with the address
and the reason.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass

from akasha.errors import ProviderError
from akasha.providers.endpoints import endpoint_label
from akasha.providers.env import env_value

#: Names that mark an embedding model in a server's list.
_EMBEDDING_NAME = re.compile(r"embed|bge|(^|[^a-z])e5|gte|minilm|mpnet|nomic|arctic-embed|jina", re.IGNORECASE)
_RERANKER_NAME = re.compile(r"rerank", re.IGNORECASE)


@dataclass(frozen=True)
class ServedModel:
    """One entry of a server's model list."""

    name: str
    #: True when the name (or Ollama's model family) says it is an embedding model.
    embedding: bool


def list_models(provider: str, url: str, *, timeout: float = 5.0, api_key: str | None = None) -> list[ServedModel]:
    """The models the ``provider`` server at ``url`` lists (``"openai"``: ``{url}/models``, ``"ollama"``:
    ``{url}/api/tags``), in its order; ``api_key`` (default ``OPENAI_API_KEY`` / ``OLLAMA_API_KEY``) is
    sent as a Bearer token when set."""
    if provider not in ("openai", "ollama"):
        raise ValueError(f"list_models knows 'openai' and 'ollama' servers, not {provider!r}")
    base = url.rstrip("/")
    target = f"{base}/models" if provider == "openai" else f"{base}/api/tags"
    key = api_key or env_value("OPENAI_API_KEY" if provider == "openai" else "OLLAMA_API_KEY")
    request = urllib.request.Request(target, headers={"Accept": "application/json"})
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    shown = endpoint_label(target)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # the user's own server
            body = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise ProviderError(provider, f"{shown} answered {exc.reason}", exc.code) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ProviderError(provider, f"{shown} did not answer ({reason})") from None
    except ValueError as exc:
        raise ProviderError(provider, f"{shown} did not answer with JSON ({exc})") from None
    entries = body.get("data") if provider == "openai" and isinstance(body, dict) else \
        body.get("models") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        raise ProviderError(provider, f"{shown} answered without a model list")
    models = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("id") or entry.get("name") or entry.get("model") or "").strip()
        if not name:
            continue
        if provider == "ollama":
            name = name.removesuffix(":latest")
        details = entry["details"] if isinstance(entry.get("details"), dict) else {}
        family = " ".join(str(f) for f in [details.get("family", "")] + list(details.get("families") or []))
        embedding = bool(_EMBEDDING_NAME.search(name) or "bert" in family.lower()) and not _RERANKER_NAME.search(name)
        models.append(ServedModel(name, embedding))
    return models


def chat_model_of(models: list[ServedModel]) -> str | None:
    """The first listed model that is not an embedding model (or a reranker), else None."""
    return next((m.name for m in models if not m.embedding and not _RERANKER_NAME.search(m.name)), None)


def embedding_model_of(models: list[ServedModel], *, only_model_counts: bool = False) -> str | None:
    """The first listed embedding model; with ``only_model_counts``, a server's single model too
    (a server started only to embed, such as ``llama-server --embeddings``), else None."""
    found = next((m.name for m in models if m.embedding), None)
    if found is None and only_model_counts and len(models) == 1:
        return models[0].name
    return found


__all__ = ["ServedModel", "chat_model_of", "embedding_model_of", "list_models"]
