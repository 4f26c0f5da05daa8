"""RAGOptions or a RAGPipeline spec -> one :class:`~akasha.pipeline.Pipeline`: the single builder.

:func:`from_options` serves ``akasha.RAG`` (``search_type`` becomes an
:class:`~akasha.retrieval.patterns.IndexSearch` pattern), :func:`from_spec` a checked
``kind: RAGPipeline`` spec (every name resolved through :mod:`akasha.registry`); both build over a
:class:`~akasha.index.CorpusIndex`. :func:`spec_conflicts` refuses a facade option that contradicts
the spec. Built parts are cached in :class:`Components`: a second call with the same settings
re-embeds nothing."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from akasha import registry
from akasha.errors import AkashaError, ConfigError, MissingAPIKeyError, MissingExtraError, SpecError
from akasha.options import RAGOptions, positive_int
from akasha.pipeline import DataSource, Generation, Pipeline, close_all

if TYPE_CHECKING:
    from akasha.spec import PipelineSpec

logger = logging.getLogger(__name__)

#: Used when neither embeddings.dimension nor the embedder says how wide its vectors are.
FALLBACK_DIMENSION = 384
DEFAULTS = {
    "chunking.strategy": "recursive",
    "embeddings.provider": "ollama",
    "vector_store.backend": "faiss",
    "reranking.provider": "cross_encoder",
    "retrieval.pattern": "naive",
}
#: The reference's chunking defaults (characters).
DEFAULT_SPEC_CHUNK_SIZE = 500
DEFAULT_SPEC_OVERLAP = 50
OLLAMA_MODEL = "nomic-embed-text"
OLLAMA_ENDPOINT = "http://ollama:11434"
SENTENCE_TRANSFORMERS_MODEL = "all-MiniLM-L6-v2"


@dataclass
class BuildContext:
    """What registry factories get besides their own section: the spec, the embedder, its dimension, the llm."""

    spec: Any
    embedder: Any = None
    dimension: int = FALLBACK_DIMENSION
    llm: Any = None


# ============================================================ the facade's parts
def display_name(spec: Any) -> str:
    """A model, embedder or search type's name for messages and logs (a password in an ``@address`` as ``***``)."""
    if isinstance(spec, str):
        if "://" in spec:
            from akasha.stores.redact import redact_url

            return redact_url(spec)
        return spec
    return getattr(spec, "name", None) or getattr(spec, "__name__", None) or type(spec).__name__


class Components:
    """The parts a ``RAG`` instance built, by their settings, shared by its calls (thread-safe); each is built
    on first use, so a call without reranking never builds the reranker's model."""

    def __init__(self) -> None:
        self.embedders: dict[Any, Any] = {}
        self.indexes: dict[Any, Any] = {}
        self.models: dict[Any, Any] = {}
        self.rerankers: dict[Any, Any] = {}
        self._keep: list[Any] = []  # objects used as cache keys by id stay alive
        self._lock = threading.RLock()

    def _remember(self, spec: Any) -> Any:
        """The cache key of ``spec``: itself for a string or None, else its id (the object is kept alive)."""
        if isinstance(spec, (str, type(None))):
            return spec
        if not any(spec is x for x in self._keep):
            self._keep.append(spec)
        return ("object", id(spec))

    def _built(self, cache: dict[Any, Any], option: str, spec: Any, device: str, build: Callable[..., Any]) -> Any:
        """``build(spec)`` once per spec; a local model (``option``: "embeddings" or "model") is built
        with ``device=`` and once per device."""
        from akasha.device import device_options

        with self._lock:
            key = self._remember(spec)
            local = device_options(option, spec, device)
            if local:
                key = (key, local["device"])
            if key not in cache:
                cache[key] = build(spec, **local)
            return cache[key]

    def embedder(self, spec: Any, device: str = "auto") -> Any:
        """The embedder for ``spec`` (an embedder object is used as it is); a local model loads on ``device``."""
        from akasha.embeddings import resolve_embedder

        return self._built(self.embedders, "embeddings", spec, device, resolve_embedder)

    def index(self, options: RAGOptions) -> Any:
        """The CorpusIndex for these embeddings, chunk settings, cache folder and server (built once)."""
        with self._lock:
            cache = options.cache_dir if options.cache_dir in (None, ":memory:") else str(
                Path(options.cache_dir).expanduser())
            store_options = dict(options.vector_store_options or {})
            key = (self._remember(options.embeddings), options.device, options.chunk_size, options.chunk_overlap,
                   cache, self._remember(options.vector_store), repr(sorted(store_options.items())))
            if key not in self.indexes:
                from akasha.index import CorpusIndex

                embedder: Any
                if isinstance(options.embeddings, str) and options.vector_store is None:
                    # built on first use: a bm25 search never builds it (nor imports its provider)
                    from akasha.embeddings.deferred import DeferredEmbedder

                    spec, device = options.embeddings, options.device
                    embedder = DeferredEmbedder(lambda: self.embedder(spec, device), spec)
                else:
                    embedder = self.embedder(options.embeddings, options.device)
                self.indexes[key] = CorpusIndex(
                    embedder, chunk_size=options.chunk_size, chunk_overlap=options.chunk_overlap,
                    cache_dir=options.cache_dir, vector_store=options.vector_store, vector_store_options=store_options)
            return self.indexes[key]

    def chat_model(self, spec: Any, device: str = "auto") -> Any:
        """The chat model for ``spec`` (answer model, reranker model), built once; a local one loads on ``device``."""
        from akasha.llm import resolve_chat_model

        return self._built(self.models, "model", spec, device, resolve_chat_model)

    def answer_model(self, spec: Any, options: RAGOptions) -> Any:
        """The answer model of a call with ``options``: :meth:`chat_model`, except the offline ``"extractive"``,
        which ranks sentences with the packaged MiniLM (the index's own when the call embeds with it) and keeps
        their vectors in the call's cache folder, so a re-ask in a new process embeds only the question."""
        if not (isinstance(spec, str) and spec.partition(":")[0].strip().lower() == "extractive"):
            return self.chat_model(spec, options.device)
        from akasha.index.paths import MEMORY, default_cache_dir
        from akasha.llm.extractive import ExtractiveAnswerer

        with self._lock:
            embedder = self._answer_embedder(options)
            folder = None if str(options.cache_dir) == MEMORY else str(
                Path(options.cache_dir).expanduser() if options.cache_dir is not None else default_cache_dir())
            key = ("extractive", spec.strip().lower(), id(embedder) if embedder else embedder, folder)
            if key not in self.models:
                self.models[key] = ExtractiveAnswerer(spec.partition(":")[2], embedder=embedder, cache_dir=folder)
            return self.models[key]

    def _answer_embedder(self, options: RAGOptions) -> Any:
        """The packaged MiniLM for the extractive answerer (one this instance built is reused), or False when it
        is not installed (BM25 alone). An embedder object the user gave is used too, except the toy hash
        embedder; never the call's own model string (a hosted model would need its key)."""
        from akasha.embeddings.hash import HashEmbedder
        from akasha.embeddings.local import packaged_model_dir
        from akasha.llm.extractive import DEFAULT_EMBEDDINGS

        if not isinstance(options.embeddings, (str, HashEmbedder)):
            return self.embedder(options.embeddings, options.device)
        folder = packaged_model_dir()
        if folder is None:
            return False  # as the answerer does by itself without the package
        built = [e for e in self.embedders.values() if getattr(e, "location", None) == str(folder)]
        return built[0] if built else self.embedder(DEFAULT_EMBEDDINGS, options.device)

    def reranker(self, spec: Any, reranker_model: Any, device: str = "auto") -> Any:
        """The reranker for ``spec``; ``"llm"`` (any case) orders with ``reranker_model`` (built through the model
        cache, budgeted by its own context window); a local one (``"local"``, ``"bge"``) loads on ``device``."""
        if spec is None:
            return None
        from akasha.device import device_options
        from akasha.rerank import is_llm, resolve_reranker

        with self._lock:
            llm = is_llm(spec)
            local = {} if llm else device_options("reranker", spec, device)
            key = ("llm", self._remember(reranker_model)) if llm else (self._remember(spec), local.get("device"))
            if key not in self.rerankers:
                self.rerankers[key] = (_SharedModelLLMReranker(reranker_model, self) if llm
                                       else resolve_reranker(spec, reranker_model=reranker_model, **local))
            return self.rerankers[key]

    def close(self) -> None:
        """Close every index and extractive answerer built here (reopened on next use); failures are logged."""
        with self._lock:
            indexes, self.indexes = list(self.indexes.values()), {}
            answerers = [m for key, m in self.models.items() if isinstance(key, tuple) and key[:1] == ("extractive",)]
        close_all([*indexes, *answerers])

    def chroma(self, options: RAGOptions, data_source: DataSource) -> Any:
        """Existing Chroma-backed stores named by ``data_source`` (``use_chroma=True``), each opened once: Chroma
        directories, akasha cache folders built with ``store="chroma"``, or ``chroma://`` URLs."""
        from akasha.index.chroma import chroma_folder_of, is_chroma_url, open_chroma_index

        with self._lock:
            embedder = self.embedder(options.embeddings, options.device)
            paths = [data_source] if isinstance(data_source, (str, Path)) else list(data_source)
            stores = []
            for path in paths:
                where: Any = path if is_chroma_url(path) else chroma_folder_of(path)
                key = ("chroma", embedder.name, where if is_chroma_url(where) else str(where.resolve()))
                if key not in self.indexes:
                    self.indexes[key] = open_chroma_index(where, embedder)
                stores.append(self.indexes[key])
            return stores[0] if len(stores) == 1 else MergedStores(stores)


class _SharedModelLLMReranker:
    """The ``"llm"`` reranker, building its chat model through the instance's model cache."""

    def __init__(self, model: Any, components: Components) -> None:
        from akasha.rerank.llm import LLMReranker

        self._inner = LLMReranker(model)
        self._components = components
        self.name = self._inner.name

    @property
    def last_requests(self) -> int:
        """How many model requests the last ranking made (more than 1: the candidates were split)."""
        return self._inner.last_requests

    def rank(self, query: str, hits: Any) -> Any:
        try:  # the key of the reranker's model is checked when it is built or first called
            if self._inner._model is None:
                self._inner._model = self._components.chat_model(self._inner.model_spec)
            return self._inner.rank(query, hits)
        except MissingAPIKeyError as exc:
            raise _reranker_key_error(exc, self._inner.model_spec) from None


def _reranker_key_error(exc: MissingAPIKeyError, spec: Any) -> MissingAPIKeyError:
    """The missing key of ``reranker_model``, said as such: it is independent of ``model`` (akasha-rag.md)."""
    from akasha.options import DEFAULT_RERANKER_MODEL

    which = ("its default" if spec == DEFAULT_RERANKER_MODEL else "set to") + f" {display_name(spec)!r}"
    return MissingAPIKeyError(
        exc.provider, exc.variables,
        f"because reranker=\"llm\" orders the candidates with reranker_model ({which}; it does not follow "
        "model=): set that key, or pass reranker_model=... naming a model you have a key for (e.g. the same as "
        "model=), or use reranker=\"local\" / a callable")


class MergedStores:
    """Several searchable stores as one: each store's hits merged by score, best first."""

    def __init__(self, stores: list[Any]) -> None:
        self.stores = stores
        self.embedder = getattr(stores[0], "embedder", None) if stores else None

    def search(self, query: str, k: int = 5, search_type: Any = "auto") -> list[Any]:
        merged = [hit for store in self.stores for hit in store.search(query, k=k, search_type=search_type)]
        return sorted(merged, key=lambda h: -h.score)[:k]


def generation_for(options: RAGOptions, components: Components) -> Generation:
    """The answer settings of ``options`` (the model is built on first use)."""
    return Generation(
        model=options.model, resolve=functools.partial(components.answer_model, options=options),
        max_input_tokens=options.max_input_tokens,
        system_prompt=options.system_prompt, language=options.language,
        max_output_tokens=options.max_output_tokens, temperature=float(options.temperature),
    )


def from_options(options: RAGOptions, components: Components, *, data_source: DataSource | None = None) -> Pipeline:
    """The pipeline for one ``RAG`` call: index (or ``use_chroma`` stores), search type, reranker, answer settings.
    ``k`` candidates are retrieved; a reranker keeps ``rerank_top_k``; packing fits what it can."""
    from akasha.retrieval.patterns import search_type_pattern

    if options.use_chroma:
        if data_source is None:
            raise ConfigError("use_chroma=True needs data_source: the Chroma folder(s) to search")
        index = components.chroma(options, data_source)
    else:
        index = components.index(options)
    return Pipeline(
        index, name="rag", pattern=search_type_pattern(options.search_type),
        reranker=components.reranker(options.reranker, options.reranker_model, options.device),
        rerank_top_k=options.rerank_top_k, top_k=options.k, candidates=options.k,
        generation=generation_for(options, components), syncs_source=not options.use_chroma,
    )


# ================================================================= the YAML door
def _where(source: str | None) -> str:
    return f"{source}: " if source else ""


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


def _component(kind: str, section: str, key: str, config: dict[str, Any], context: BuildContext, spec: Any) -> Any:
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
        raise SpecError(f"{_where(spec.source)}could not build {section}.{key} {name!r}: "
                        f"{type(exc).__name__}: {exc}") from exc


def _positive_int(value: Any, where: str, spec: Any, *, optional: bool = False) -> Any:
    """``value`` as a positive integer (None stays None when ``optional``); else SpecError naming the file."""
    try:
        return positive_int(where, value, allow_none=optional)
    except ConfigError as exc:
        raise SpecError(f"{_where(spec.source)}{exc}") from None


def _as_embedder(obj: Any) -> Any:
    if hasattr(obj, "embed_documents") and hasattr(obj, "embed_query") and hasattr(obj, "name"):
        return obj
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


def as_llm(llm: Any) -> Any:
    """A chat model for ``llm`` (a model object, a model string or a callable ``prompt -> str``)."""
    if llm is None or hasattr(llm, "generate") or hasattr(llm, "agenerate"):
        return llm
    from akasha.llm import resolve_chat_model

    return resolve_chat_model(llm)


class SpecChunker:
    """A spec's splitter as the index's chunker: ``split_documents`` plus the settings key chunks are cached under
    (a hash of the chunking section and a ``semantic`` splitter's embedder: a changed section re-chunks)."""

    def __init__(self, splitter: Any, chunking: Mapping[str, Any], strategy: str, embedder_name: str | None) -> None:
        self.splitter = splitter
        settings = json.dumps({"strategy": strategy, "chunking": dict(chunking), "embedder": embedder_name},
                              sort_keys=True, default=str)
        self.settings_key = f"spec-v1:{strategy}:{hashlib.sha256(settings.encode()).hexdigest()[:16]}"

    def split_documents(self, documents: Any) -> list[Any]:
        return list(self.splitter.split_documents(documents))

    def embed_with(self, embed: Any) -> None:
        """Let a splitter that embeds (``semantic``) embed through ``embed(texts) -> vectors``, the index's
        content-keyed embeddings cache, so no text is embedded twice."""
        if hasattr(self.splitter, "embed"):
            self.splitter.embed = embed


def _is_store(obj: Any) -> bool:
    from akasha.stores.base import Store

    return isinstance(obj, Store)


def _bm25_file(spec: Any) -> Path | None:
    """``retrieval.bm25_path`` as a path (relative to the working directory), or None."""
    bm25_path = spec.retrieval.get("bm25_path")
    if bm25_path is None:
        return None
    if not isinstance(bm25_path, str) or not bm25_path:
        raise SpecError(f"{_where(spec.source)}retrieval.bm25_path must be a file path, got {bm25_path!r}")
    path = Path(bm25_path).expanduser()
    if not path.is_absolute():
        path = Path.cwd() / path  # relative to the working directory, as a CLI user expects
    if path.exists() and not path.is_file():  # a folder, /dev/zero, /dev/stdin ...: never a place for the index
        raise SpecError(f"{_where(spec.source)}retrieval.bm25_path {bm25_path!r} is a folder or a device, not a "
                        "file; name a JSON file such as ./bm25.json")
    return path


def from_spec(spec: PipelineSpec, *, llm: Any = None, cache_dir: Any = None) -> Pipeline:
    """Resolve every component named in a checked ``spec`` and return its :class:`Pipeline`.
    Arguments and errors as :func:`akasha.spec.build`; ``cache_dir`` None keeps the index in memory."""
    at = _where(spec.source)
    llm = as_llm(llm)
    context = BuildContext(spec=spec, llm=llm)

    # embeddings first: the dimension and the semantic splitter depend on it
    embedder = _as_embedder(_component("embedder", "embeddings", "provider", spec.embeddings, context, spec))
    dimension = _positive_int(spec.embeddings.get("dimension"), "embeddings.dimension", spec, optional=True)
    if dimension is None:
        reported = getattr(embedder, "dimension", None)
        dimension = int(reported) if isinstance(reported, int) and reported > 0 else FALLBACK_DIMENSION
    context.embedder, context.dimension = embedder, dimension

    strategy = str(spec.chunking.get("strategy", DEFAULTS["chunking.strategy"]))
    splitter = _as_splitter(_component("splitter", "chunking", "strategy", spec.chunking, context, spec), strategy)
    store = _component("index", "vector_store", "backend", spec.vector_store, context, spec)

    retrieval = spec.retrieval
    pattern = _component("pattern", "retrieval", "pattern", retrieval, context, spec)
    if getattr(pattern, "needs_llm", False) and llm is None:
        raise SpecError(f"{at}retrieval.pattern {pattern.name!r} needs a language model: call build(spec, llm=...)")
    top_k = _positive_int(retrieval.get("top_k", 5), "retrieval.top_k", spec)
    candidates = _positive_int(retrieval.get("candidates"), "retrieval.candidates", spec, optional=True)
    threshold = retrieval.get("similarity_threshold")
    if threshold is not None and (not isinstance(threshold, (int, float)) or isinstance(threshold, bool)
                                  or threshold != threshold or threshold in (float("inf"), float("-inf"))):
        raise SpecError(f"{at}retrieval.similarity_threshold must be a finite number, got {threshold!r}")

    reranker = rerank_top_k = None
    reranking = spec.reranking
    enabled = reranking.get("enabled", False)
    if not isinstance(enabled, bool):  # YAML "false" (quoted) is a string, and a truthy one
        raise SpecError(f"{at}reranking.enabled must be true or false (unquoted), got {enabled!r}")
    if enabled:
        from akasha.rerank import as_reranker

        reranker = as_reranker(_component("reranker", "reranking", "provider", reranking, context, spec))
        rerank_top_k = _positive_int(reranking.get("top_k"), "reranking.top_k", spec, optional=True)

    from akasha.index import CorpusIndex

    embedder_name = getattr(embedder, "name", None) if getattr(splitter, "embedder", None) is not None else None
    chunker = SpecChunker(splitter, spec.chunking, strategy, embedder_name)
    backend = spec.vector_store.get("backend", DEFAULTS["vector_store.backend"])
    if not _is_store(store):
        logger.warning(
            "%svector_store.backend %r built %s, which lacks akasha's Store contract (upsert, remove, fetch, "
            "nearest, vectors_for, load_state ...); the index keeps its chunks and vectors in its own cache only",
            at, backend, type(store).__name__)
    corpus = spec.vector_store.get("corpus")
    if corpus is not None:
        from akasha.stores.urls import check_corpus_name

        try:
            check_corpus_name(corpus)
        except ConfigError as exc:
            raise SpecError(f"{at}vector_store.corpus: {exc}") from None
    bm25_file = _bm25_file(spec)
    if bm25_file is not None:
        from akasha.index.legacy_bm25 import migrate_index_folder

        migrate_index_folder(bm25_file, chunker.settings_key)
    index = CorpusIndex(embedder, chunker=chunker, cache_dir=cache_dir if cache_dir is not None else ":memory:",
                        store=store if _is_store(store) else "sqlite",
                        vector_store_options={"corpus": corpus} if corpus else None, bm25_file=bm25_file)
    return Pipeline(
        index, stage_errors=True, name=spec.name, pattern=pattern, reranker=reranker, rerank_top_k=rerank_top_k,
        top_k=top_k, candidates=candidates, similarity_threshold=None if threshold is None else float(threshold),
        llm=llm, store=store, splitter=splitter, dimension=dimension,
    )


# ================================================================= spec vs facade
_ANY = object()  # "any explicit value contradicts the spec"


def spec_values(spec: PipelineSpec) -> dict[str, tuple[Any, str]]:
    """Facade option the spec decides -> (the value it implies, where the spec says so); ``_ANY`` when no facade
    value can agree."""
    retrieval, chunking, reranking = spec.retrieval, spec.chunking, spec.reranking
    pattern = retrieval.get("pattern", DEFAULTS["retrieval.pattern"])
    fusion = retrieval.get("fusion") or (retrieval.get("hybrid") or {}).get("fusion") or "rrf"
    equivalent = {"naive": "knn", "hybrid": "auto" if fusion in ("rrf", "adaptive") else "hybrid"}.get(pattern, _ANY)
    backend = spec.vector_store.get("backend", DEFAULTS["vector_store.backend"])
    embedder = spec.embeddings.get("provider", DEFAULTS["embeddings.provider"])
    values: dict[str, tuple[Any, str]] = {
        "search_type": (equivalent, f"retrieval.pattern: {pattern}"),
        "chunk_size": (chunking.get("chunk_size", DEFAULT_SPEC_CHUNK_SIZE),
                       f"chunking.chunk_size: {chunking.get('chunk_size', DEFAULT_SPEC_CHUNK_SIZE)}"),
        "chunk_overlap": (chunking.get("overlap", DEFAULT_SPEC_OVERLAP),
                          f"chunking.overlap: {chunking.get('overlap', DEFAULT_SPEC_OVERLAP)}"),
        "vector_store": (_ANY, f"vector_store.backend: {backend}"),
        "vector_store_options": (_ANY, "vector_store (the spec's own keys configure its store)"),
        "use_chroma": (False, f"vector_store.backend: {backend}"),
        "embeddings": (_ANY, f"embeddings.provider: {embedder}"),
        "k": (retrieval.get("top_k", 5), f"retrieval.top_k: {retrieval.get('top_k', 5)}"),
    }
    if reranking.get("enabled", False) is True:
        provider = reranking.get("provider", DEFAULTS["reranking.provider"])
        values["reranker"] = (_ANY, f"reranking.provider: {provider}")
        values["reranker_model"] = (_ANY, f"reranking.provider: {provider}")
        top = reranking.get("top_k", retrieval.get("top_k", 5))
        values["rerank_top_k"] = (top, f"reranking.top_k: {top}")
    return values


def spec_conflicts(spec: PipelineSpec, given: Mapping[str, Any]) -> None:
    """Raise ConfigError naming both sides when an explicitly ``given`` facade option contradicts ``spec``
    (:func:`spec_values`); a value equal to the spec's (``k=3`` with ``retrieval.top_k: 3``) is accepted."""
    where = spec.source or f"the RAGPipeline {spec.name!r}"
    for name, (implied, says) in spec_values(spec).items():
        if name not in given:
            continue
        value = given[name]
        if name == "use_chroma" and not value:
            continue
        if name in ("vector_store", "vector_store_options", "reranker", "reranker_model") and value is None:
            continue
        if implied is not _ANY and (value == implied or (
                name == "search_type" and isinstance(value, str) and value.strip().lower() == implied)):
            continue
        raise ConfigError(
            f"{name}={display_name(value)!r} conflicts with {says} in {where}: the spec decides retrieval and "
            f"indexing; drop {name}= or change the spec"
        )


__all__ = ["BuildContext", "Components", "FALLBACK_DIMENSION", "MergedStores", "as_llm", "display_name", "from_options",
           "from_spec", "generation_for", "make_hash_embedder", "make_ollama_embedder",
           "make_sentence_transformers_embedder", "spec_conflicts", "spec_values"]
