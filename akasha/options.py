"""The RAG option set: names, defaults, validation and per-call overrides.

:class:`RAGOptions` is frozen, so a per-call override builds a new, validated copy
(:meth:`RAGOptions.merged`) and can never leak into the instance. Validation only checks names
and numbers: it imports no provider, loads no model and creates no client.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from akasha.checks import positive_int
from akasha.errors import ConfigError

DEFAULT_MODEL = "openai:gpt-3.5-turbo"
DEFAULT_EMBEDDINGS = "openai:text-embedding-ada-002"
DEFAULT_RERANKER_MODEL = "gemini:gemini-2.5-flash"


@dataclass(frozen=True)
class RAGOptions:
    """Every setting of :class:`akasha.RAG`; each can also be overridden for one call."""

    #: Chat model that writes the final answer: "provider:model", "extractive",
    #: "llama-cpp:smollm2", a callable ``prompt -> str`` or a chat model object.
    model: Any = DEFAULT_MODEL
    #: Embedding model for documents and questions ("hf:all-MiniLM-L6-v2", "hash", a callable ...).
    embeddings: Any = DEFAULT_EMBEDDINGS
    #: Approximate chunk size in characters.
    chunk_size: int = 1000
    #: Characters shared by neighbouring chunks (None: the chunker's default for chunk_size).
    chunk_overlap: int | None = None
    #: First-stage retrieval: "auto" (hybrid BM25 + dense), "knn", "bm25", "mmr", "hybrid" or a callable.
    search_type: Any = "auto"
    #: How many first-stage candidates are retrieved: the reranker's pool, larger than what fits the prompt.
    k: int = 20
    #: Second-stage reranker: None, "llm", "local"/"bge", "local:<model>"/"bge:<model>" or a callable.
    reranker: Any = None
    #: Chat model used by reranker="llm" (built only when reranking runs).
    reranker_model: Any = DEFAULT_RERANKER_MODEL
    #: Documents kept after reranking (no effect when reranker is None).
    rerank_top_k: int = 5
    #: Budget for system prompt + history + question + documents, in the model's tokens.
    max_input_tokens: int = 3000
    #: Longest answer requested from the model (None: the provider's default).
    max_output_tokens: int | None = 1024
    #: Sampling temperature for the answer model.
    temperature: float = 0.0
    #: Replaces the default system prompt (the answer-language instruction is still added).
    system_prompt: str | None = None
    #: Answer language: "en" (default), "ch" (Traditional Chinese), "zh", "ja", "auto" (the question's),
    #: a language name, or None.
    language: str | None = "en"
    #: data_source names existing Chroma-backed stores instead of files.
    use_chroma: bool = False
    #: Return a generator of answer pieces instead of a str.
    stream: bool = False
    #: Log each stage at INFO level to stderr (adds a handler to the "akasha" logger if it has none).
    verbose: bool = False
    #: Keep one record per call in ``rag.logs``.
    keep_logs: bool = False
    #: Index cache folder (None: the index's default cache dir; ":memory:": in memory only).
    cache_dir: str | Path | None = None
    #: Where the index keeps its chunk records and vectors besides its local cache: a URL
    #: ("chroma://host:port/collection", "postgresql://user:pass@host/db?table=name", "qdrant://host:port/name")
    #: or a Store object from akasha.stores (memory, faiss, chroma, qdrant, pgvector).
    vector_store: Any = None
    #: Options of the vector_store: ``corpus`` (a name for this folder's records, so several folders can share
    #: one store), and per URL kind ``token``, ``retry``, ``connect_timeout``, ``ef_search``, ``hnsw_m``,
    #: ``ef_construction`` (see docs/servers.md). Unknown keys raise ConfigError naming them.
    vector_store_options: dict[str, Any] | None = None
    #: Where local models run (hf:/sentence_transformers: embeddings, "local"/"bge" rerankers, hf: chat
    #: models): "auto" (AKASHA_DEVICE, else CUDA, then Apple MPS, then CPU), "cpu", "cuda", "cuda:<n>", "mps".
    #: An index keeps the embedder it was built with; the device never changes an embedder's name.
    device: str = "auto"

    def __post_init__(self) -> None:
        validate_options(self)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def merged(self, **overrides: Any) -> RAGOptions:
        """A validated copy with ``overrides`` applied; unknown names raise TypeError listing the known ones."""
        unknown = sorted(set(overrides) - set(self.names()))
        if unknown:
            raise TypeError(f"unknown RAG option(s) {', '.join(unknown)}; known options: {', '.join(self.names())}")
        return dataclasses.replace(self, **overrides) if overrides else self


def validate_options(options: RAGOptions) -> None:
    """Raise ConfigError (a ValueError) naming the first bad option; no imports of providers, no I/O."""
    from akasha.chunking import default_overlap, validate_chunking
    from akasha.embeddings import validate_embeddings
    from akasha.llm import validate_model
    from akasha.rerank import validate_reranker, validate_top_k
    from akasha.retrieval.search import validate_search_type

    validate_model(options.model)
    validate_embeddings(options.embeddings)
    validate_search_type(options.search_type)
    validate_reranker(options.reranker)
    validate_model(options.reranker_model)
    validate_top_k(options.rerank_top_k)
    positive_int("chunk_size", options.chunk_size)
    overlap = options.chunk_overlap
    if overlap is not None and (isinstance(overlap, bool) or not isinstance(overlap, int)):
        raise ConfigError(f"chunk_overlap must be an integer or None, got {options.chunk_overlap!r}")
    try:
        validate_chunking(options.chunk_size, default_overlap(options.chunk_size) if overlap is None else overlap)
    except ConfigError:
        raise
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    positive_int("k", options.k)
    positive_int("max_input_tokens", options.max_input_tokens)
    positive_int("max_output_tokens", options.max_output_tokens, allow_none=True)
    temperature = options.temperature
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0.0 <= temperature <= 2.0:
        raise ConfigError(f"temperature must be a number between 0 and 2, got {options.temperature!r}")
    if options.cache_dir is not None:
        if isinstance(options.cache_dir, bool) or not isinstance(options.cache_dir, (str, os.PathLike)):
            raise ConfigError(f"cache_dir must be a folder path, ':memory:' or None (the default cache folder), "
                              f"got {type(options.cache_dir).__name__} {options.cache_dir!r}")
        if not str(os.fspath(options.cache_dir)).strip():
            raise ConfigError("cache_dir is an empty path: give a folder, ':memory:' (nothing on disk) or None "
                              "(the default cache folder, $AKASHA_CACHE_DIR or ~/.cache/akasha)")
    if options.language is not None and not isinstance(options.language, str):
        raise ConfigError(f"language must be a string such as 'en', 'ch', 'ja', or None, got {options.language!r}")
    if options.system_prompt is not None and not isinstance(options.system_prompt, str):
        raise ConfigError(f"system_prompt must be a string or None, got {type(options.system_prompt).__name__}")
    if isinstance(options.vector_store, str):
        from akasha.stores.urls import parse_vector_store

        parse_vector_store(options.vector_store)  # ConfigError for a bad URL; no I/O
    elif options.vector_store is not None and not all(
            hasattr(options.vector_store, method) for method in ("upsert", "remove", "fetch", "nearest", "load_state")):
        raise ConfigError(
            f"vector_store must be a URL (chroma://host:port/collection, postgresql://user:pass@host/db?table=name, "
            f"qdrant://host:port/collection) or a Store from akasha.stores, got {type(options.vector_store).__name__}")
    from akasha.stores.urls import check_store_options

    check_store_options(options.vector_store, options.vector_store_options)
    from akasha.device import requested_device, validate_device

    validate_device(options.device)
    requested_device(options.device)  # AKASHA_DEVICE is checked now, whether a local model uses it or not
    for flag in ("use_chroma", "stream", "verbose", "keep_logs"):
        if not isinstance(getattr(options, flag), bool):
            raise ConfigError(f"{flag} must be True or False, got {getattr(options, flag)!r}")


__all__ = ["DEFAULT_EMBEDDINGS", "DEFAULT_MODEL", "DEFAULT_RERANKER_MODEL", "RAGOptions", "positive_int",
           "validate_options"]
