"""``kind: RAGPipeline`` documents: load, validate, build.

:func:`load_spec` (or :func:`load_spec_file`) checks the shape and nothing else;
:func:`build` resolves every name through :mod:`akasha.registry` and returns an
:class:`akasha.pipeline.Pipeline`. Both raise :class:`~akasha.errors.SpecError`
for the problems the reference lists, so nothing waits for the first query to
fail. Unknown keys are ignored on purpose (provider sections carry their own
keys, and files written by other tools must keep loading).

>>> spec = load_spec({"kind": "RAGPipeline", "metadata": {"name": "demo"},
...                   "spec": {"embeddings": {"provider": "hash"}, "vector_store": {"backend": "memory"}}})
>>> pipeline = build(spec)
>>> pipeline.ingest_sync(["Akasha answers questions over your documents."])
1
"""

from __future__ import annotations

import copy
import importlib.util
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from akasha import registry
from akasha.errors import AkashaError, MissingExtraError, SpecError
from akasha.pipeline import Pipeline

logger = logging.getLogger(__name__)

SECTIONS = ("chunking", "embeddings", "vector_store", "reranking", "retrieval")
#: Used when neither embeddings.dimension nor the embedder says how wide its vectors are.
FALLBACK_DIMENSION = 384
DEFAULTS = {
    "chunking.strategy": "recursive",
    "embeddings.provider": "ollama",
    "vector_store.backend": "faiss",
    "reranking.provider": "cross_encoder",
    "retrieval.pattern": "naive",
}
OLLAMA_MODEL = "nomic-embed-text"
OLLAMA_ENDPOINT = "http://ollama:11434"
SENTENCE_TRANSFORMERS_MODEL = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class PipelineSpec:
    """A shape-checked RAGPipeline document; each section is a plain dict (empty when absent)."""

    name: str
    chunking: dict[str, Any] = field(default_factory=dict)
    embeddings: dict[str, Any] = field(default_factory=dict)
    vector_store: dict[str, Any] = field(default_factory=dict)
    reranking: dict[str, Any] = field(default_factory=dict)
    retrieval: dict[str, Any] = field(default_factory=dict)
    api_version: str | None = None
    source: str | None = None  # the file it came from, for messages
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class BuildContext:
    """What component factories may need besides their own section."""

    spec: PipelineSpec
    embedder: Any = None
    dimension: int = FALLBACK_DIMENSION
    llm: Any = None


def _where(source: str | None) -> str:
    return f"{source}: " if source else ""


def load_spec(body: Any, *, source: str | None = None) -> PipelineSpec:
    """Check the shape of an already-parsed RAGPipeline body (no names are resolved here).

    Raises SpecError when the body is not a mapping, ``kind`` is not RAGPipeline,
    ``metadata.name`` is missing, or ``spec`` or one of its sections is not a mapping.
    """
    if isinstance(body, PipelineSpec):
        return body
    at = _where(source)
    if not isinstance(body, Mapping):
        raise SpecError(f"{at}a RAGPipeline document must be a mapping, got {type(body).__name__}")
    kind = body.get("kind")
    if kind != "RAGPipeline":
        raise SpecError(f"{at}kind must be 'RAGPipeline', got {kind!r}")
    metadata = body.get("metadata")
    if not isinstance(metadata, Mapping):
        raise SpecError(f"{at}metadata must be a mapping with a name, got {type(metadata).__name__}")
    name = metadata.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SpecError(f"{at}metadata.name is missing: every RAGPipeline needs a name")
    spec = body.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise SpecError(f"{at}spec must be a mapping, got {type(spec).__name__}")
    sections: dict[str, dict[str, Any]] = {}
    for section in SECTIONS:
        value = spec.get(section)
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise SpecError(f"{at}spec.{section} must be a mapping, got {type(value).__name__}")
        sections[section] = copy.deepcopy(dict(value))
    api_version = body.get("apiVersion")  # recorded, deliberately not checked
    return PipelineSpec(
        name=name,
        api_version=None if api_version is None else str(api_version),
        source=source,
        raw=copy.deepcopy(dict(body)),
        **sections,
    )


def load_spec_file(path: str | Path) -> PipelineSpec:
    """Read a YAML (or JSON) RAGPipeline file and check its shape with :func:`load_spec`."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: no such RAGPipeline file") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the file: {exc}") from None
    try:
        body = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML: {exc}") from None
    return load_spec(body, source=str(path))


# ---------------------------------------------------------------- embedders
def make_ollama_embedder(config: dict[str, Any], context: BuildContext) -> Any:
    """Registry factory for ``embeddings.provider: ollama`` (POST {endpoint}/api/embed)."""
    if importlib.util.find_spec("httpx") is None:
        raise MissingExtraError("httpx", "light", "embeddings provider 'ollama'")
    from akasha.embeddings.ollama import OllamaEmbedder

    model = str(config.get("model") or OLLAMA_MODEL)
    endpoint = str(config.get("endpoint") or OLLAMA_ENDPOINT)
    return OllamaEmbedder(model, base_url=endpoint)


def make_sentence_transformers_embedder(config: dict[str, Any], context: BuildContext) -> Any:
    """Registry factory for ``sentence_transformers`` / ``sentence_transformer`` (packaged weights offline)."""
    if importlib.util.find_spec("sentence_transformers") is None:
        raise MissingExtraError("sentence-transformers", "full", "embeddings provider 'sentence_transformers'")
    from akasha.embeddings.local import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(str(config.get("model") or SENTENCE_TRANSFORMERS_MODEL))


def make_hash_embedder(config: dict[str, Any], context: BuildContext) -> Any:
    """Registry factory for ``hash``: :class:`akasha.testing.HashEmbedder` (64 dimensions unless ``dimension``)."""
    from akasha.testing import HashEmbedder

    dimension = config.get("dimension", 64)
    return HashEmbedder(dimension if isinstance(dimension, int) and dimension > 0 else 64)


# -------------------------------------------------------------------- build
def _component(kind: str, section: str, key: str, config: dict[str, Any], context: BuildContext, spec: PipelineSpec) -> Any:
    name = config.get(key, DEFAULTS[f"{section}.{key}"])
    if not isinstance(name, str) or not name:
        raise SpecError(f"{_where(spec.source)}{section}.{key} must be a name, got {name!r}")
    try:
        factory = registry.get(kind, name)
    except KeyError:
        raise SpecError(
            f"{_where(spec.source)}unknown {section}.{key} {name!r}; known: {', '.join(registry.names(kind))}"
        ) from None
    try:
        return factory(config, context)
    except AkashaError:
        raise
    except ImportError as exc:
        raise MissingExtraError(getattr(exc, "name", None) or str(exc), "full", f"{section}.{key} {name!r}") from exc
    except Exception as exc:
        raise SpecError(f"{_where(spec.source)}could not build {section}.{key} {name!r}: {type(exc).__name__}: {exc}") from exc


def _positive_int(value: Any, where: str, spec: PipelineSpec) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise SpecError(f"{_where(spec.source)}{where} must be a positive integer, got {value!r}")
    return value


def _as_embedder(obj: Any) -> Any:
    from akasha.embeddings import resolve_embedder

    return resolve_embedder(obj)


def _as_splitter(obj: Any, strategy: str) -> Any:
    if hasattr(obj, "split_documents"):
        return obj
    from akasha.chunking.fixed import PieceSplitter

    split = getattr(obj, "split_text", None) or (obj if callable(obj) else None)
    if split is None:
        raise SpecError(f"splitter {strategy!r} must have split_documents(docs) or split_text(text), or be callable")
    return PieceSplitter(strategy, lambda text: list(split(text)))


def _as_llm(llm: Any) -> Any:
    if llm is None or hasattr(llm, "generate") or hasattr(llm, "agenerate"):
        return llm
    from akasha.llm import resolve_chat_model

    return resolve_chat_model(llm)


def build(spec: Any, llm: Any = None) -> Pipeline:
    """Resolve every component named in ``spec`` and return a ready :class:`~akasha.pipeline.Pipeline`.

    ``spec`` is what :func:`load_spec` returns (a mapping or a path is loaded first).
    ``llm`` (a chat model, model string or callable) is required by the
    ``multi_query`` and ``hyde`` patterns. Raises SpecError for unknown names,
    bad chunking windows, a bad pgvector table name, or a missing ``llm``;
    MissingExtraError for a component whose package is not installed.
    """
    if isinstance(spec, (str, Path)):
        spec = load_spec_file(spec)
    spec = load_spec(spec)
    at = _where(spec.source)
    llm = _as_llm(llm)
    context = BuildContext(spec=spec, llm=llm)

    # embeddings first: the dimension and the semantic splitter depend on it
    embedder = _component("embedder", "embeddings", "provider", spec.embeddings, context, spec)
    if not (hasattr(embedder, "embed_documents") and hasattr(embedder, "embed_query") and hasattr(embedder, "name")):
        embedder = _as_embedder(embedder)
    declared = spec.embeddings.get("dimension")
    if declared is not None:
        dimension = _positive_int(declared, "embeddings.dimension", spec)
    else:
        reported = getattr(embedder, "dimension", None)
        dimension = int(reported) if isinstance(reported, int) and reported > 0 else FALLBACK_DIMENSION
    context.embedder, context.dimension = embedder, dimension

    strategy = spec.chunking.get("strategy", DEFAULTS["chunking.strategy"])
    splitter = _as_splitter(_component("splitter", "chunking", "strategy", spec.chunking, context, spec), str(strategy))
    store = _component("index", "vector_store", "backend", spec.vector_store, context, spec)

    retrieval = spec.retrieval
    pattern = _component("pattern", "retrieval", "pattern", retrieval, context, spec)
    if getattr(pattern, "needs_llm", False) and llm is None:
        raise SpecError(f"{at}retrieval.pattern {pattern.name!r} needs a language model: call build(spec, llm=...)")
    top_k = _positive_int(retrieval.get("top_k", 5), "retrieval.top_k", spec)
    candidates = retrieval.get("candidates")
    if candidates is not None:
        candidates = _positive_int(candidates, "retrieval.candidates", spec)
    threshold = retrieval.get("similarity_threshold")
    if threshold is not None and (not isinstance(threshold, (int, float)) or isinstance(threshold, bool)):
        raise SpecError(f"{at}retrieval.similarity_threshold must be a number, got {threshold!r}")

    bm25 = None
    bm25_path = None
    if "bm25" in getattr(pattern, "retrievers", ()):
        bm25, bm25_path = _load_bm25(retrieval.get("bm25_path"), spec)

    reranker = None
    rerank_top_k = None
    reranking = spec.reranking
    if reranking.get("enabled", False):
        reranker = _component("reranker", "reranking", "provider", reranking, context, spec)
        if reranking.get("top_k") is not None:
            rerank_top_k = _positive_int(reranking["top_k"], "reranking.top_k", spec)

    return Pipeline(
        name=spec.name,
        splitter=splitter,
        embedder=embedder,
        store=store,
        pattern=pattern,
        reranker=reranker,
        rerank_top_k=rerank_top_k,
        top_k=top_k,
        candidates=candidates,
        similarity_threshold=None if threshold is None else float(threshold),
        bm25=bm25,
        bm25_path=bm25_path,
        llm=llm,
        dimension=dimension,
    )


def _load_bm25(path_value: Any, spec: PipelineSpec) -> tuple[Any, Path | None]:
    from akasha.retrieval.bm25 import BM25Index

    if path_value is None:
        return BM25Index(), None
    if not isinstance(path_value, str) or not path_value:
        raise SpecError(f"{_where(spec.source)}retrieval.bm25_path must be a file path, got {path_value!r}")
    path = Path(path_value).expanduser()
    if not path.is_absolute() and spec.source:
        # Relative paths are relative to the working directory, as a CLI user expects.
        path = Path.cwd() / path
    if path.exists():
        try:
            return BM25Index.from_json(json.loads(path.read_text(encoding="utf-8"))), path
        except (ValueError, KeyError, TypeError, AkashaError) as exc:
            raise SpecError(f"{path}: not a BM25 index written by akasha ({exc}); delete it to start afresh") from None
    return BM25Index(), path


def rag_from_spec(path_or_spec: Any, **rag_options: Any) -> dict[str, Any]:
    """What ``akasha.RAG.from_spec`` needs to serve a YAML-built pipeline.

    Returns ``{"retriever": pipeline, "embeddings": pipeline.embedder, **rag_options}``.
    The facade pops ``retriever``, builds ``RAG(**rest)`` and retrieves through
    ``pipeline.retrieve(data_source, question, k)`` (files loaded and ingested when
    they changed, then :meth:`~akasha.pipeline.Pipeline.query`) instead of its own
    index. ``rag_options["model"]`` doubles as the ``llm`` of multi_query/hyde patterns.
    """
    spec = load_spec_file(path_or_spec) if isinstance(path_or_spec, (str, Path)) else load_spec(path_or_spec)
    needs_llm = spec.retrieval.get("pattern") in ("multi_query", "hyde")
    pipeline = build(spec, llm=rag_options.get("model") if needs_llm else None)
    return {"retriever": pipeline, "embeddings": pipeline.embedder, **rag_options}


__all__ = ["PipelineSpec", "BuildContext", "load_spec", "load_spec_file", "build", "rag_from_spec", "FALLBACK_DIMENSION"]
