"""Name -> factory for every pluggable component kind of a RAGPipeline.

Kinds are ``splitter``, ``embedder``, ``index`` (a :class:`akasha.stores.base.Store`),
``reranker`` and ``pattern``. A factory is called as ``factory(config, context)``: ``config`` is
the kind's YAML section as a dict, ``context`` the :class:`akasha.assemble.BuildContext`. Add
your own with :func:`register`, or ship them as entry points in a per-kind group
(:data:`KINDS`) or in ``akasha.plugins`` as ``<kind>.<name>`` (docs/yaml.md, "Your own
components"). Built-ins are ``"module:attribute"`` strings, so a lookup imports only what it needs.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from importlib import metadata
from typing import Any

logger = logging.getLogger(__name__)

Factory = Callable[..., Any]

#: The component kinds and the entry-point group of each.
KINDS: dict[str, str] = {
    "splitter": "akasha.splitters",
    "embedder": "akasha.embedders",
    "index": "akasha.indexes",
    "reranker": "akasha.rerankers",
    "pattern": "akasha.patterns",
}
#: Shared entry-point group; entry names are ``<kind>.<name>``.
PLUGIN_GROUP = "akasha.plugins"

_BUILTINS: dict[str, dict[str, str]] = {
    "splitter": {
        "fixed": "akasha.chunking.fixed:make_fixed_splitter",
        "recursive": "akasha.chunking.fixed:make_recursive_splitter",
        "sentence": "akasha.chunking.sentence:make_sentence_splitter",
        "semantic": "akasha.chunking.semantic:make_semantic_splitter",
    },
    "embedder": {
        "ollama": "akasha.assemble:make_ollama_embedder",
        "hf": "akasha.embeddings.hf_api:make_hf_api_embedder",
        "hf_api": "akasha.embeddings.hf_api:make_hf_api_embedder",
        "sentence_transformers": "akasha.assemble:make_sentence_transformers_embedder",
        "sentence_transformer": "akasha.assemble:make_sentence_transformers_embedder",
        "hash": "akasha.assemble:make_hash_embedder",
    },
    "index": {
        "memory": "akasha.stores.memory:make_memory_store",
        "faiss": "akasha.stores.faiss:make_faiss_store",
        "chroma": "akasha.stores.chroma:make_chroma_store",
        "qdrant": "akasha.stores.qdrant:make_qdrant_store",
        "pgvector": "akasha.stores.pgvector:make_pgvector_store",
    },
    "reranker": {
        "cross_encoder": "akasha.rerank.cross_encoder:make_cross_encoder_reranker",
        "cohere": "akasha.rerank.cohere:make_cohere_reranker",
    },
    "pattern": {
        "naive": "akasha.retrieval.patterns:make_naive",
        "hybrid": "akasha.retrieval.patterns:make_hybrid",
        "multi_query": "akasha.retrieval.patterns:make_multi_query",
        "hyde": "akasha.retrieval.patterns:make_hyde",
    },
}

_registered: dict[str, dict[str, Factory | str]] = {kind: {} for kind in KINDS}


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown component kind {kind!r}; known kinds: {', '.join(KINDS)}")


def register(kind: str, name: str, factory: Factory | str, *, replace: bool = False) -> None:
    """Make ``name`` usable in a spec for ``kind``; ``factory(config, context)`` (or a ``"module:attribute"``
    string, imported on first use) builds it. Registering a name twice raises ``ValueError`` unless
    ``replace=True``; a registered name shadows a built-in or entry-point one."""
    _check_kind(kind)
    if not isinstance(name, str) or not name:
        raise ValueError(f"component name must be a non-empty string, got {name!r}")
    if not (callable(factory) or (isinstance(factory, str) and ":" in factory)):
        raise TypeError(f"factory for {kind} {name!r} must be callable or 'module:attribute', got {factory!r}")
    if name in _registered[kind] and not replace:
        raise ValueError(f"{kind} {name!r} is already registered; pass replace=True to override it")
    _registered[kind][name] = factory


def unregister(kind: str, name: str) -> None:
    """Forget a name registered with :func:`register` (built-ins stay)."""
    _check_kind(kind)
    _registered[kind].pop(name, None)


def _entry_points(kind: str) -> dict[str, metadata.EntryPoint]:
    found: dict[str, metadata.EntryPoint] = {}
    try:
        for ep in metadata.entry_points(group=PLUGIN_GROUP):
            prefix, _, name = ep.name.partition(".")
            if prefix == kind and name:
                found.setdefault(name, ep)
        for ep in metadata.entry_points(group=KINDS[kind]):
            found[ep.name] = ep
    except Exception as exc:  # a broken installed distribution must not break akasha
        logger.warning("could not read akasha entry points: %s", exc)
    return found


def names(kind: str) -> list[str]:
    """Every name ``kind`` accepts: built-in, entry points and registered, sorted."""
    _check_kind(kind)
    return sorted(set(_BUILTINS[kind]) | set(_entry_points(kind)) | set(_registered[kind]))


def _load(target: Factory | str) -> Factory:
    if isinstance(target, str):
        module_name, _, attribute = target.partition(":")
        return getattr(importlib.import_module(module_name), attribute)
    return target


def get(kind: str, name: str) -> Factory:
    """The factory for ``name`` (:func:`register`, then entry points, then built-ins); KeyError listing the
    known names if there is none."""
    _check_kind(kind)
    if name in _registered[kind]:
        return _load(_registered[kind][name])
    eps = _entry_points(kind)
    if name in eps:
        return eps[name].load()
    if name in _BUILTINS[kind]:
        return _load(_BUILTINS[kind][name])
    raise KeyError(f"unknown {kind} {name!r}; known: {', '.join(names(kind))}")


__all__ = ["KINDS", "PLUGIN_GROUP", "register", "unregister", "names", "get"]
