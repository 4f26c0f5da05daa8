"""The RAG facade: ``rag(data_source, prompt)`` -> an answer that names its sources.

One call runs: index (load, chunk, embed, content-keyed cache) -> retrieve ``k``
candidates -> optional rerank (complete ordering, validated, then ``rerank_top_k``)
-> pack under ``max_input_tokens`` -> generate. After the call ``rag.docs`` holds
the hits that reached the answer model, ``rag.trace`` one entry per stage and
``rag.response``/``rag.prompt``/token counts what was sent and received.

Construction only validates names and numbers. Embedders, chat models, rerankers
and indexes are built on first use and cached on the instance (indexes per
embedder, chunk settings and cache folder), so a second question over the same
folder reuses the in-memory index and re-embeds nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from akasha.errors import StageError
from akasha.llm.base import ChatModel, GenerationOptions, Message
from akasha.options import DEFAULT_EMBEDDINGS, DEFAULT_MODEL, DEFAULT_RERANKER_MODEL, RAGOptions
from akasha.packing import PackResult, pack
from akasha.prompts import mentions_sources, sources_line, system_message
from akasha.types import Hit, hits_to_html

logger = logging.getLogger(__name__)

DataSource = str | Path | Sequence[str | Path]


class DocList(list):
    """``rag.docs``: a plain list of :class:`~akasha.types.Hit` that renders as a table in notebooks."""

    def _repr_html_(self) -> str:
        return hits_to_html(list(self))


@dataclass
class _Run:
    """What one call produced, before it is published on the instance."""

    options: RAGOptions
    question: str
    trace: list[dict[str, Any]] = field(default_factory=list)
    docs: list[Hit] = field(default_factory=list)
    packed: PackResult | None = None
    started: float = field(default_factory=time.time)

    @contextmanager
    def stage(self, stage: str, name: str, n_in: Any) -> Iterator[dict[str, Any]]:
        """Time one stage and append its trace entry; failures become StageError naming it."""
        entry: dict[str, Any] = {"stage": stage, "name": name, "ms": 0.0, "in": n_in, "out": None}
        start = time.perf_counter()
        try:
            yield entry
        except StageError:
            raise
        except (ValueError, TypeError, ImportError, FileNotFoundError, KeyError) as exc:
            # Errors a user can act on keep their type (ValueError for orderings, budgets ...).
            entry["error"] = f"{type(exc).__name__}: {exc}"
            raise
        except Exception as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"
            if type(exc).__module__.startswith("akasha"):
                raise
            raise StageError(stage, name, exc) from exc
        finally:
            entry["ms"] = round((time.perf_counter() - start) * 1000, 3)
            self.trace.append(entry)
            logger.info("%s %s: %s -> %s in %.1f ms", stage, name, entry["in"], entry["out"], entry["ms"])


class _StreamRecorder:
    """Bookkeeping shared by the sync and async streams: the trace entry, ``rag.response``
    growing piece by piece, and the ``Sources:`` tail when the model cited nothing."""

    def __init__(self, rag: RAG, run: _Run, model_name: str) -> None:
        assert run.packed is not None
        self.rag = rag
        self.run = run
        self.pieces: list[str] = []
        self.entry: dict[str, Any] = {
            "stage": "generate", "name": model_name, "ms": 0.0, "in": run.packed.prompt_tokens, "out": 0,
        }
        rag.trace.append(self.entry)
        self.start = time.perf_counter()

    def add(self, piece: str) -> None:
        self.pieces.append(piece)
        self.rag.response = "".join(self.pieces)

    def sources_tail(self) -> str:
        """The text to append so the streamed answer names its sources ("" when it already does)."""
        answer = "".join(self.pieces)
        docs = self.run.docs
        tail = "" if not docs or mentions_sources(answer, docs) else f"\n\n{sources_line(docs)}"
        self.rag.response = answer + tail
        return tail

    def close(self) -> None:
        self.entry["ms"] = round((time.perf_counter() - self.start) * 1000, 3)
        self.entry["out"] = len(self.rag.response)


def _spec_key(spec: Any) -> Any:
    return spec if isinstance(spec, (str, type(None))) else ("object", id(spec))


def _spec_name(spec: Any) -> str:
    if isinstance(spec, str):
        return spec
    return getattr(spec, "name", None) or getattr(spec, "__name__", None) or type(spec).__name__


class RAG:
    """Question answering over your documents.

    >>> rag = RAG(embeddings="hash", model="extractive")          # doctest: +SKIP
    >>> print(rag("./docs", "What does the warranty cover?"))     # doctest: +SKIP

    Every constructor option (see :class:`akasha.options.RAGOptions`) can also be
    passed as a keyword to a single call; the instance keeps its own settings.
    """

    def __init__(
        self,
        model: Any = DEFAULT_MODEL,
        embeddings: Any = DEFAULT_EMBEDDINGS,
        chunk_size: int = 1000,
        search_type: Any = "auto",
        reranker: Any = None,
        reranker_model: Any = DEFAULT_RERANKER_MODEL,
        rerank_top_k: int = 5,
        max_input_tokens: int = 3000,
        use_chroma: bool = False,
        stream: bool = False,
        *,
        max_output_tokens: int | None = 1024,
        temperature: float = 0.0,
        system_prompt: str | None = None,
        language: str | None = "en",
        verbose: bool = False,
        keep_logs: bool = False,
        cache_dir: str | Path | None = None,
        chunk_overlap: int | None = None,
        k: int = 20,
        vector_store: str | None = None,
    ) -> None:
        self.options = RAGOptions(
            model=model, embeddings=embeddings, chunk_size=chunk_size, search_type=search_type,
            reranker=reranker, reranker_model=reranker_model, rerank_top_k=rerank_top_k,
            max_input_tokens=max_input_tokens, use_chroma=use_chroma, stream=stream,
            max_output_tokens=max_output_tokens, temperature=temperature, system_prompt=system_prompt,
            language=language, verbose=verbose, keep_logs=keep_logs, cache_dir=cache_dir,
            chunk_overlap=chunk_overlap, k=k, vector_store=vector_store,
        )
        self.docs: DocList = DocList()
        self.response: str = ""
        self.prompt: str = ""
        self.messages: list[Message] = []
        self.prompt_tokens = 0
        self.doc_tokens = 0
        self.response_tokens = 0
        self.trace: list[dict[str, Any]] = []
        self.logs: list[dict[str, Any]] = []
        self.followups: list[dict[str, Any]] = []
        self._embedders: dict[Any, Any] = {}
        self._indexes: dict[Any, Any] = {}
        self._models: dict[Any, ChatModel] = {}
        self._rerankers: dict[Any, Any] = {}
        self._keep: list[Any] = []  # keeps objects used as cache keys by id alive
        self._pipeline: Any = None  # a YAML-built retriever, set by from_spec()
        #: The index's report of the last sync: counts of indexed, unchanged, skipped, removed files.
        self.last_sync: Any = None
        if verbose:
            _enable_verbose_logging()

    @classmethod
    def from_options(cls, options: RAGOptions) -> RAG:
        """A RAG from a ready :class:`~akasha.options.RAGOptions` (the seam YAML specs build through)."""
        names = RAGOptions.names()
        return cls(**{name: getattr(options, name) for name in names})

    @classmethod
    def from_spec(cls, path_or_spec: Any, **options: Any) -> RAG:
        """A RAG whose retrieval is a ``kind: RAGPipeline`` YAML pipeline (file path or parsed dict).

        The YAML decides chunking, embeddings, vector store, retrieval pattern and
        reranking; ``options`` (``model=...``, ``max_input_tokens=...``) decide packing
        and answer generation, exactly as for a plain ``RAG``. ``model`` also serves as
        the LLM of ``multi_query`` and ``hyde`` patterns.
        """
        from akasha.spec import rag_from_spec

        kwargs = rag_from_spec(path_or_spec, **options)
        pipeline = kwargs.pop("retriever")
        rag = cls(**kwargs)
        object.__setattr__(rag, "_pipeline", pipeline)
        return rag

    # ------------------------------------------------------------------ options
    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: expose options as attributes (rag.model ...).
        options = self.__dict__.get("options")
        if options is not None and name in RAGOptions.names():
            return getattr(options, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in RAGOptions.names():
            # rag.model = "..." is validated like a constructor argument.
            object.__setattr__(self, "options", self.options.merged(**{name: value}))
            if name == "verbose" and value:
                _enable_verbose_logging()
            return
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        o = self.options
        return (
            f"RAG(model={_spec_name(o.model)!r}, embeddings={_spec_name(o.embeddings)!r}, "
            f"search_type={_spec_name(o.search_type)!r}, reranker={None if o.reranker is None else _spec_name(o.reranker)!r})"
        )

    # ------------------------------------------------------- lazily built parts
    def _remember(self, spec: Any) -> Any:
        if not isinstance(spec, (str, type(None))) and not any(spec is x for x in self._keep):
            self._keep.append(spec)
        return _spec_key(spec)

    def _embedder(self, options: RAGOptions) -> Any:
        key = self._remember(options.embeddings)
        if key not in self._embedders:
            from akasha.embeddings import resolve_embedder

            self._embedders[key] = resolve_embedder(options.embeddings)
        return self._embedders[key]

    def _index(self, options: RAGOptions) -> Any:
        """The CorpusIndex for these embeddings, chunk settings and cache folder (built once)."""
        embedder = self._embedder(options)
        cache = options.cache_dir if options.cache_dir in (None, ":memory:") else str(Path(options.cache_dir).expanduser())
        key = (embedder.name, self._remember(options.embeddings), options.chunk_size, options.chunk_overlap, cache,
               options.vector_store)
        if key not in self._indexes:
            from akasha.index import CorpusIndex

            self._indexes[key] = CorpusIndex(
                embedder, chunk_size=options.chunk_size, chunk_overlap=options.chunk_overlap, cache_dir=options.cache_dir,
                vector_store=options.vector_store,
            )
        return self._indexes[key]

    def _chat_model(self, spec: Any, options: RAGOptions) -> ChatModel:
        key = self._remember(spec)
        if key not in self._models:
            from akasha.llm import resolve_chat_model

            self._models[key] = resolve_chat_model(spec)
        return self._models[key]

    def _reranker(self, options: RAGOptions) -> Any:
        spec = options.reranker
        key = (self._remember(spec), self._remember(options.reranker_model) if spec == "llm" else None)
        if key not in self._rerankers:
            from akasha.rerank import resolve_reranker

            if isinstance(spec, str) and spec.strip().lower() == "llm":
                from akasha.rerank.llm import LLMReranker

                reranker = LLMReranker(options.reranker_model)
                # Share the chat-model cache so the reranker model is built at most once.
                reranker._model = self._models.get(_spec_key(options.reranker_model))
                self._rerankers[key] = reranker
            else:
                self._rerankers[key] = resolve_reranker(spec, reranker_model=options.reranker_model)
        return self._rerankers[key]

    # ------------------------------------------------------------ the stages
    def _retrieve(self, run: _Run, data_source: DataSource, question: str, *, sync: bool = True) -> list[Hit]:
        """Index (once per call) and search: the first-stage candidates."""
        options = run.options
        if self._pipeline is not None:
            return self._retrieve_with_pipeline(run, data_source, question, sync=sync)
        if options.use_chroma:
            store = self._chroma(options, data_source)
            with run.stage("retrieve", f"chroma:{_spec_name(options.search_type)}", options.k) as entry:
                hits = store.search(question, k=options.k, search_type=options.search_type)
                entry["out"] = len(hits)
            return hits
        index = self._index(options)
        if sync:
            with run.stage("index", f"CorpusIndex({index.embedder.name if hasattr(index, 'embedder') else _spec_name(options.embeddings)})", _describe_source(data_source)) as entry:
                report = index.sync(data_source, progress=None)  # bars only for long indexing
                entry["out"] = getattr(report, "chunks", None)
                entry["files"] = {"indexed": report.indexed, "unchanged": report.unchanged,
                                  "skipped": report.skipped, "removed": report.removed}
                self.last_sync = report
                # Skipped files are already warned about once, by the index (not again on every call).
        with run.stage("retrieve", _spec_name(options.search_type), options.k) as entry:
            hits = index.search(question, k=options.k, search_type=options.search_type)
            entry["out"] = len(hits)
        return hits

    def _retrieve_with_pipeline(self, run: _Run, data_source: DataSource, question: str, *, sync: bool) -> list[Hit]:
        """Retrieval through the YAML-built pipeline; its own stage entries join ``rag.trace``."""
        pipeline = self._pipeline
        if sync and data_source is not None:
            with run.stage("index", f"spec:{pipeline.name}", _describe_source(data_source)) as entry:
                counts = pipeline.ingest_source_sync(data_source)
                entry["out"] = counts.get("chunks")
        result = pipeline.query_sync(question, k=run.options.k)
        run.trace.extend(result.trace)
        return list(result.hits)

    def _rerank(self, run: _Run, question: str, hits: list[Hit]) -> list[Hit]:
        options = run.options
        if options.reranker is None or not hits:
            return hits
        from akasha.rerank import rerank

        reranker = self._reranker(options)
        with run.stage("rerank", getattr(reranker, "name", "reranker"), len(hits)) as entry:
            ranked = rerank(reranker, question, hits, options.rerank_top_k)
            entry["out"] = len(ranked)
        if getattr(reranker, "_model", None) is not None and options.reranker == "llm":
            self._models.setdefault(_spec_key(options.reranker_model), reranker._model)
        return ranked

    def _pack(self, run: _Run, question: str, hits: list[Hit], history: Sequence[object] | None) -> PackResult:
        from akasha.tokens import counter_for

        options = run.options
        with run.stage("pack", f"max_input_tokens={options.max_input_tokens}", len(hits)) as entry:
            packed = pack(
                system=system_message(options.system_prompt, options.language),
                question=question,
                hits=hits,
                max_input_tokens=options.max_input_tokens,
                counter=counter_for(options.model),
                history=history,
            )
            entry["out"] = len(packed.hits)
            entry["tokens"] = packed.prompt_tokens
        return packed

    def _generation_options(self, options: RAGOptions) -> GenerationOptions:
        return GenerationOptions(max_output_tokens=options.max_output_tokens, temperature=float(options.temperature))

    def _prepare(self, options: RAGOptions, data_source: DataSource, prompt: str, history: Sequence[object] | None) -> _Run:
        run = _Run(options, prompt)
        try:
            hits = self._retrieve(run, data_source, prompt)
            hits = self._rerank(run, prompt, hits)
            run.packed = self._pack(run, prompt, hits, history)
        except BaseException:
            self.trace = run.trace  # the stages that ran, the failing one carrying "error"
            raise
        run.docs = list(run.packed.hits)
        return run

    # -------------------------------------------------------------- publish
    def _publish(self, run: _Run) -> None:
        assert run.packed is not None
        self.docs = DocList(run.docs)
        self.prompt = run.question
        self.messages = run.packed.messages
        self.prompt_tokens = run.packed.prompt_tokens
        self.doc_tokens = run.packed.doc_tokens
        self.trace = run.trace
        self.response = ""
        self.response_tokens = 0

    def _finish(self, run: _Run, answer: str) -> str:
        from akasha.tokens import counter_for

        self.response = answer
        self.response_tokens = counter_for(run.options.model).count(answer)
        if run.options.keep_logs:
            self.logs.append(
                {
                    "time": run.started,
                    "prompt": run.question,
                    "response": answer,
                    "model": _spec_name(run.options.model),
                    "embeddings": _spec_name(run.options.embeddings),
                    "search_type": _spec_name(run.options.search_type),
                    "reranker": None if run.options.reranker is None else _spec_name(run.options.reranker),
                    "docs": [{"id": h.id, "source": h.path, "page": h.page, "score": h.score} for h in run.docs],
                    "prompt_tokens": self.prompt_tokens,
                    "doc_tokens": self.doc_tokens,
                    "response_tokens": self.response_tokens,
                    "trace": list(run.trace),
                    "followups": list(self.followups),
                }
            )
        return answer

    @staticmethod
    def _with_sources(answer: str, docs: Sequence[Hit]) -> str:
        """Append ``Sources: ...`` when the model did not name any of its documents."""
        if not docs or mentions_sources(answer, docs):
            return answer
        return f"{answer.rstrip()}\n\n{sources_line(docs)}"

    def _generate(self, run: _Run) -> str:
        assert run.packed is not None
        model = self._chat_model(run.options.model, run.options)
        with run.stage("generate", model.name, run.packed.prompt_tokens) as entry:
            answer = model.generate(run.packed.messages, self._generation_options(run.options))
            entry["out"] = len(answer)
        return self._with_sources(answer, run.docs)

    def _stream(self, run: _Run) -> Iterator[str]:
        assert run.packed is not None
        model = self._chat_model(run.options.model, run.options)
        recorder = _StreamRecorder(self, run, model.name)
        try:
            for piece in model.stream(run.packed.messages, self._generation_options(run.options)):
                if piece:
                    recorder.add(piece)
                    yield piece
            if tail := recorder.sources_tail():
                yield tail
        finally:
            recorder.close()
        self._finish(run, self.response)

    # ------------------------------------------------------------ public API
    def _call_options(self, prompt: object, overrides: dict[str, Any]) -> RAGOptions:
        """This call's options (instance settings + overrides), after checking the prompt."""
        options = self.options.merged(**overrides)
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError("prompt must be a non-empty string")
        return options

    def __call__(
        self,
        data_source: DataSource,
        prompt: str,
        history_messages: Sequence[object] | None = None,
        **overrides: Any,
    ) -> str | Iterator[str]:
        """Answer ``prompt`` from ``data_source`` (a folder, a file, or a list of them).

        Keyword ``overrides`` (any option, e.g. ``reranker="llm", rerank_top_k=3``)
        apply to this call only. Returns the answer, or a generator of answer
        pieces when ``stream=True`` (``rag.response`` fills as it is consumed).
        """
        options = self._call_options(prompt, overrides)
        self.followups = []
        run = self._prepare(options, data_source, prompt, history_messages)
        self._publish(run)
        if options.stream:
            return self._stream(run)
        return self._finish(run, self._generate(run))

    def selfask_RAG(  # noqa: N802 - the seed library's public name
        self,
        data_source: DataSource,
        prompt: str,
        history_messages: Sequence[object] | None = None,
        **overrides: Any,
    ) -> str | Iterator[str]:
        """Answer by decomposing ``prompt`` into follow-up questions first (see :mod:`akasha.selfask`).

        ``rag.docs`` holds the union of documents used; ``rag.followups`` the
        follow-up questions and their answers. Malformed decomposition output
        falls back to a plain :meth:`__call__`.
        """
        from akasha.selfask import run_selfask

        options = self._call_options(prompt, overrides)
        return run_selfask(self, options, data_source, prompt, history_messages)

    # ------------------------------------------------------------- async API
    async def acall(
        self,
        data_source: DataSource,
        prompt: str,
        history_messages: Sequence[object] | None = None,
        **overrides: Any,
    ) -> str | AsyncIterator[str]:
        """Async twin of :meth:`__call__` for notebooks and servers.

        Indexing, retrieval, reranking and packing run in a worker thread (they are
        CPU and disk bound), generation uses the provider's async client where it
        has one (``agenerate``/``astream``), else the sync client in a thread.
        With ``stream=True`` it returns an async iterator of answer pieces.
        """
        options = self._call_options(prompt, overrides)
        self.followups = []
        run = await asyncio.to_thread(self._prepare, options, data_source, prompt, history_messages)
        self._publish(run)
        if options.stream:
            return self._astream(run)
        return self._finish(run, await self._agenerate(run))

    async def astream(
        self,
        data_source: DataSource,
        prompt: str,
        history_messages: Sequence[object] | None = None,
        **overrides: Any,
    ) -> AsyncIterator[str]:
        """``async for piece in rag.astream(folder, question)``: the streamed async call."""
        pieces = await self.acall(data_source, prompt, history_messages, **{**overrides, "stream": True})
        assert not isinstance(pieces, str)
        async for piece in pieces:
            yield piece

    async def _agenerate(self, run: _Run) -> str:
        assert run.packed is not None
        model = self._chat_model(run.options.model, run.options)
        options = self._generation_options(run.options)
        with run.stage("generate", model.name, run.packed.prompt_tokens) as entry:
            if hasattr(model, "agenerate"):
                answer = await model.agenerate(run.packed.messages, options)
            else:
                answer = await asyncio.to_thread(model.generate, run.packed.messages, options)
            entry["out"] = len(answer)
        return self._with_sources(answer, run.docs)

    async def _astream(self, run: _Run) -> AsyncIterator[str]:
        assert run.packed is not None
        model = self._chat_model(run.options.model, run.options)
        recorder = _StreamRecorder(self, run, model.name)
        try:
            async for piece in _async_pieces(model, run.packed.messages, self._generation_options(run.options)):
                if piece:
                    recorder.add(piece)
                    yield piece
            if tail := recorder.sources_tail():
                yield tail
        finally:
            recorder.close()
        self._finish(run, self.response)

    def search(self, data_source: DataSource, question: str, k: int = 5, search_type: Any = None) -> list[Hit]:
        """First-stage retrieval only (no language model): the ``k`` best chunks for ``question``."""
        overrides: dict[str, Any] = {"k": k}
        if search_type is not None:
            overrides["search_type"] = search_type
        options = self.options.merged(**overrides)
        run = _Run(options, question)
        hits = self._retrieve(run, data_source, question)
        self.trace = run.trace
        return DocList(hits)

    def index(self, data_source: DataSource, *, progress: bool = False, **overrides: Any) -> Any:
        """Bring the index for ``data_source`` up to date and return the index's sync report."""
        options = self.options.merged(**overrides)
        return self._index(options).sync(data_source, progress=progress)

    def prune(self, *, vacuum: bool = True, **overrides: Any) -> Any:
        """Drop index history that no indexed corpus needs and return what was removed.

        The index keeps every file version's chunks and vectors so undoing an edit
        costs nothing; over many edits the cache grows. See
        :meth:`akasha.index.CorpusIndex.prune` for what is kept.
        """
        options = self.options.merged(**overrides)
        return self._index(options).prune(vacuum=vacuum)

    @property
    def model_name(self) -> str:
        """The answer model's display name."""
        return _spec_name(self.options.model)

    # -------------------------------------------------------------- chroma
    def _chroma(self, options: RAGOptions, data_source: DataSource) -> Any:
        """Existing Chroma-backed stores named by ``data_source`` (each opened once and cached).

        Each path is a Chroma directory, or an akasha cache folder built with
        ``store="chroma"`` (its ``chroma/`` subfolder is used). A store built with
        another embedding model raises IndexMismatchError.
        """
        from akasha.index.chroma import open_chroma_index

        embedder = self._embedder(options)
        paths = [data_source] if isinstance(data_source, (str, Path)) else list(data_source)
        stores = []
        for path in paths:
            where = Path(path).expanduser()
            if (where / "chroma").is_dir() and not (where / "chroma.sqlite3").exists():
                where = where / "chroma"
            key = ("chroma", embedder.name, str(where.resolve()))
            if key not in self._indexes:
                self._indexes[key] = open_chroma_index(where, embedder)
            stores.append(self._indexes[key])
        return stores[0] if len(stores) == 1 else _MergedStores(stores)


class _MergedStores:
    """Several Chroma stores searched as one: each store's hits merged by score, best first."""

    def __init__(self, stores: list[Any]) -> None:
        self.stores = stores

    def search(self, query: str, k: int = 5, search_type: Any = "auto") -> list[Hit]:
        merged = [hit for store in self.stores for hit in store.search(query, k=k, search_type=search_type)]
        return sorted(merged, key=lambda h: -h.score)[:k]


async def _async_pieces(model: ChatModel, messages: list[Message], options: GenerationOptions) -> AsyncIterator[str]:
    """The model's async stream, or its sync stream driven from a worker thread."""
    if hasattr(model, "astream"):
        async for piece in model.astream(messages, options):
            yield piece
        return
    iterator = iter(model.stream(messages, options))
    done = object()
    while True:
        piece = await asyncio.to_thread(next, iterator, done)
        if piece is done:
            return
        yield piece


def _describe_source(data_source: DataSource) -> str:
    if isinstance(data_source, (str, Path)):
        return str(data_source)
    items = list(data_source)
    return f"{len(items)} paths"


_verbose_handler: logging.Handler | None = None


def _enable_verbose_logging() -> None:
    """verbose=True: stage logs at INFO on stderr, unless the app already configured the 'akasha' logger."""
    global _verbose_handler
    root = logging.getLogger("akasha")
    if _verbose_handler is None and not any(not isinstance(h, logging.NullHandler) for h in root.handlers):
        _verbose_handler = logging.StreamHandler()
        _verbose_handler.setFormatter(logging.Formatter("akasha: %(message)s"))
        root.addHandler(_verbose_handler)
    if root.level == logging.NOTSET or root.level > logging.INFO:
        root.setLevel(logging.INFO)


__all__ = ["RAG", "DocList"]
