"""Embedding model strings -> :class:`~akasha.embeddings.base.Embedder` objects.

``"openai:<model>"``, ``"gemini:<model>"``, ``"ollama:<model>"``, ``"hf:<name-or-path>"`` or
``"sentence_transformers:<name-or-path>"`` (local), ``"hf_api:<model>"`` (Hugging Face Inference API,
``provider: hf`` in a RAGPipeline file), ``"prefixed:e5:<embeddings>"`` (:mod:`akasha.embeddings.prefixed`),
``"hash"``/``"hash:<dim>"`` (deterministic, for tests), a callable ``list[str] -> vectors``, or any
object with ``embed_documents``/``embed_query`` (LangChain embeddings included).
A served model may name its server: ``"openai:<model>@http://host:port/v1"`` (also
``gemini:``, ``ollama:``, ``hf_api:``; see :mod:`akasha.providers.endpoints`).

Provider modules are imported only when an embedder is built, so validating a name loads nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from akasha.embeddings.base import Embedder
from akasha.errors import ConfigError

#: prefix -> "module:factory"; each factory takes the part after the colon ("" if none).
EMBEDDING_PROVIDERS: dict[str, str] = {
    "openai": "akasha.embeddings.openai:OpenAIEmbedder",
    "gemini": "akasha.embeddings.gemini:GeminiEmbedder",
    "ollama": "akasha.embeddings.ollama:OllamaEmbedder",
    "hf": "akasha.embeddings.local:SentenceTransformerEmbedder",
    # RAGPipeline files' names: local sentence-transformers, and the Inference API (or a TEI server)
    "sentence_transformers": "akasha.embeddings.local:SentenceTransformerEmbedder",
    "hf_api": "akasha.embeddings.hf_api:make_hf_api_from_string",
    "hash": "akasha.embeddings.hash:make_hash_embedder",
    "prefixed": "akasha.embeddings.prefixed:make_prefixed_from_string",
}
#: Prefixes whose rest is another embeddings string (checked as one), not a model name.
WRAPPER_PREFIXES = frozenset({"prefixed"})


def split_model_string(
    spec: str, known: dict[str, str], kind: str, example: str = "hf:all-MiniLM-L6-v2"
) -> tuple[str, str]:
    """Split ``"prefix:rest"`` and check the prefix, raising ConfigError listing known ones."""
    prefix, _, rest = spec.partition(":")
    prefix = prefix.strip().lower()
    if prefix not in known:
        raise ConfigError(
            f"unknown {kind} {spec!r}: the prefix must be one of "
            f"{', '.join(sorted(known))} (for example {example!r}), "
            "or pass a callable"
        )
    if prefix in WRAPPER_PREFIXES:  # "prefixed:e5:<embeddings>": the inner string is checked the same way
        from akasha.embeddings.prefixed import split_family

        split_model_string(split_family(rest.strip())[1], known, kind, example)
    elif "@" in rest:  # "openai:<model>@http://host:port/v1": refused now for a model that runs here
        from akasha.providers.endpoints import endpoint_options

        endpoint_options(prefix, rest.strip(), {})
    return prefix, rest.strip()


def validate_embeddings(spec: object) -> None:
    """Raise ConfigError now if ``spec`` can never become an embedder (no import, no I/O)."""
    if isinstance(spec, str):
        split_model_string(spec, EMBEDDING_PROVIDERS, "embeddings")
    elif not (callable(spec) or hasattr(spec, "embed_documents")):
        raise ConfigError(
            f"embeddings must be a model string, a callable or an embeddings object, got {spec!r}"
        )


def resolve_embedder(spec: str | Callable[..., Any] | Any, **options: Any) -> Embedder:
    """Build the embedder named by ``spec`` (see the module docstring for the forms)."""
    if isinstance(spec, str):
        prefix, rest = split_model_string(spec, EMBEDDING_PROVIDERS, "embeddings")
        from akasha.providers.endpoints import endpoint_options

        if prefix not in WRAPPER_PREFIXES:  # "<model>@<address>" -> base_url=/endpoint=
            rest, options = endpoint_options(prefix, rest, options)
        module_name, factory_name = EMBEDDING_PROVIDERS[prefix].split(":")
        factory = getattr(importlib.import_module(module_name), factory_name)
        return factory(rest, **options)
    if hasattr(spec, "embed_documents") and hasattr(spec, "embed_query"):
        if isinstance(spec, Embedder):
            return spec
        from akasha.embeddings.wrappers import ObjectEmbedder

        return ObjectEmbedder(spec)
    if callable(spec):
        from akasha.embeddings.wrappers import CallableEmbedder

        return CallableEmbedder(spec)
    raise ConfigError(f"embeddings must be a model string, a callable or an embeddings object, got {spec!r}")


__all__ = ["EMBEDDING_PROVIDERS", "Embedder", "resolve_embedder", "validate_embeddings", "split_model_string"]
