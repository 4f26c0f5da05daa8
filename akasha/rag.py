"""The RAG facade: ``rag(data_source, prompt)`` -> an answer that names its sources.

The engine is the pipeline :mod:`akasha.assemble` builds; this module holds the calls and the
publishing of each call's :class:`~akasha.pipeline.Answer`. Results (``rag.docs``, ``rag.trace`` ...)
are published per thread and per asyncio task, so each sees its own last call; a failed call
publishes its trace (with the error) and empty docs and response, never the previous call's.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from akasha.assemble import Components, display_name, from_options, generation_for
from akasha.options import DEFAULT_EMBEDDINGS, DEFAULT_MODEL, DEFAULT_RERANKER_MODEL, RAGOptions
from akasha.pipeline import Answer, DataSource, Pipeline
from akasha.types import Hit, hits_to_html

logger = logging.getLogger(__name__)

__all__ = ["RAG", "DocList", "DataSource"]

T = TypeVar("T")


class DocList(list):
    """``rag.docs``: a plain list of :class:`~akasha.types.Hit` that renders as a table in notebooks."""

    def _repr_html_(self) -> str:
        return hits_to_html(list(self))


class _Published(threading.local):
    """One thread's view of the calls it made: its last call, and the last call of each asyncio task."""

    def __init__(self) -> None:
        self.last: Answer | None = None
        self.tasks: weakref.WeakKeyDictionary[Any, Answer] = weakref.WeakKeyDictionary()


def _current_task() -> Any:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no event loop running in this thread
        return None


class _LastCall(Generic[T]):
    """A read-only ``RAG`` attribute: what ``read`` takes from :attr:`RAG.last_result` (an empty Answer before
    any call)."""

    def __init__(self, read: Callable[[Answer], T], doc: str) -> None:
        self._read = read
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, rag: None, owner: type) -> _LastCall[T]: ...

    @overload
    def __get__(self, rag: RAG, owner: type) -> T: ...

    def __get__(self, rag: RAG | None, owner: type) -> T | _LastCall[T]:
        if rag is None:
            return self
        result = rag.last_result
        return self._read(result if result is not None else Answer(question=""))

    def __set__(self, rag: RAG, value: object) -> None:
        raise AttributeError(f"rag.{self._name} is read-only: it shows the last call's result")


class RAG:
    """Question answering over your documents.

    >>> rag = RAG(embeddings="hash", model="extractive")          # doctest: +SKIP
    >>> print(rag("./docs", "What does the warranty cover?"))     # doctest: +SKIP

    Every constructor option (see :class:`akasha.options.RAGOptions`) can also be passed as a keyword to a
    single call; the instance keeps its own settings.
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
        vector_store_options: dict[str, Any] | None = None,
        device: str = "auto",
    ) -> None:
        self.options = RAGOptions(  # every parameter is the option of the same name
            model=model, embeddings=embeddings, chunk_size=chunk_size, search_type=search_type, reranker=reranker,
            reranker_model=reranker_model, rerank_top_k=rerank_top_k, max_input_tokens=max_input_tokens,
            use_chroma=use_chroma, stream=stream, max_output_tokens=max_output_tokens, temperature=temperature,
            system_prompt=system_prompt, language=language, verbose=verbose, keep_logs=keep_logs,
            cache_dir=cache_dir, chunk_overlap=chunk_overlap, k=k, vector_store=vector_store,
            vector_store_options=vector_store_options, device=device)
        #: One record per finished call when ``keep_logs=True``.
        self.logs: list[dict[str, Any]] = []
        #: The parts built for this instance (embedders, indexes, models, rerankers), shared by its calls.
        self.components = Components()
        self._spec: Any = None  # the checked RAGPipeline spec, set by from_spec()
        self._spec_pipeline: Pipeline | None = None
        self._published = _Published()
        self._latest: Answer | None = None
        self._publish_lock = threading.Lock()

    @classmethod
    def from_options(cls, options: RAGOptions) -> RAG:
        """A RAG from a ready :class:`~akasha.options.RAGOptions`."""
        return cls(**{name: getattr(options, name) for name in RAGOptions.names()})

    @classmethod
    def from_spec(cls, path_or_spec: Any, **options: Any) -> RAG:
        """A RAG whose retrieval and indexing are a ``kind: RAGPipeline`` YAML pipeline (a file path or parsed dict).

        The spec decides chunking, embeddings, store, retrieval and reranking; ``options`` decide packing and
        generation (``model`` is also the LLM of ``multi_query`` and ``hyde``). A facade option that contradicts
        the spec raises ConfigError naming both, here or in a call.
        """
        from akasha.assemble import from_spec, spec_conflicts
        from akasha.index.paths import default_cache_dir
        from akasha.spec import load_spec, load_spec_file

        spec = load_spec_file(path_or_spec) if isinstance(path_or_spec, (str, Path)) else load_spec(path_or_spec)
        spec_conflicts(spec, options)
        rag = cls(**options)
        needs_llm = spec.retrieval.get("pattern") in ("multi_query", "hyde")
        cache_dir = rag.options.cache_dir if rag.options.cache_dir is not None else default_cache_dir()
        llm = rag.components.chat_model(rag.options.model, rag.options.device) if needs_llm else None
        rag._spec = spec
        rag._spec_pipeline = from_spec(spec, llm=llm, cache_dir=cache_dir)
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
            if self.__dict__.get("_spec") is not None:
                from akasha.assemble import spec_conflicts

                spec_conflicts(self._spec, {name: value})
            object.__setattr__(self, "options", self.options.merged(**{name: value}))
            return
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        o = self.options
        spec = f", spec={self._spec.name!r}" if self._spec is not None else ""
        return (
            f"RAG(model={display_name(o.model)!r}, embeddings={display_name(o.embeddings)!r}, "
            f"search_type={display_name(o.search_type)!r}, "
            f"reranker={None if o.reranker is None else display_name(o.reranker)!r}{spec})"
        )

    # ---------------------------------------------------------- published results
    @property
    def last_result(self) -> Answer | None:
        """The :class:`~akasha.pipeline.Answer` of this thread's or asyncio task's last call, else the instance's
        most recent call (None before any). ``rag.docs``, ``rag.trace`` ... read from it."""
        task, published = _current_task(), self._published
        if task is not None and task in published.tasks:
            return published.tasks[task]
        return published.last if published.last is not None else self._latest

    docs = _LastCall(lambda a: DocList(a.docs),
                     "The hits that reached the answer model in the last call, in order, with source/page/scores.")
    trace = _LastCall(lambda a: a.trace,
                      "One entry per stage of the last call: stage, name, ms, in, out (and error when it failed).")
    response = _LastCall(lambda a: a.response, "The last call's answer (it grows while a stream is consumed).")
    sources = _LastCall(lambda a: a.sources, "The last call's citations, ``Sources: a.md; b.pdf, page 2`` (each "
                                             "of :attr:`docs` once, in order); ``rag(...)`` returns the model's text.")
    prompt = _LastCall(lambda a: a.question, "The last call's question.")
    messages = _LastCall(lambda a: a.messages, "The chat messages the last call sent to the answer model.")
    prompt_tokens = _LastCall(lambda a: a.prompt_tokens, "Tokens of the last call's prompt.")
    doc_tokens = _LastCall(lambda a: a.doc_tokens, "Tokens of the documents in the last call's prompt.")
    response_tokens = _LastCall(lambda a: a.response_tokens, "Tokens of the last call's answer.")
    followups = _LastCall(lambda a: a.followups,
                          'Self-ask\'s follow-up questions of the last call: ``{"question", "answer", "docs"}``.')
    last_sync = _LastCall(lambda a: a.sync, "The index's report of the last call's sync: counts of indexed, "
                                            "unchanged, skipped, removed files (None when it synced nothing).")

    def _publish(self, answer: Answer) -> Answer:
        """Make ``answer`` this thread's (and task's) last call, and the instance's most recent one."""
        task = _current_task()
        if task is not None:
            self._published.tasks[task] = answer
        self._published.last = answer
        with self._publish_lock:
            self._latest = answer
        return answer

    def _log(self, options: RAGOptions, answer: Answer) -> None:
        if options.verbose:
            report_trace(answer.trace)
        if not options.keep_logs:
            return
        record = {
            "time": answer.started,
            "prompt": answer.question,
            "response": answer.response,
            "model": display_name(options.model),
            "embeddings": display_name(options.embeddings),
            "search_type": display_name(options.search_type) if self._spec is None else f"spec:{self._spec.name}",
            "reranker": None if options.reranker is None else display_name(options.reranker),
            "docs": [{"id": h.id, "source": h.path, "page": h.page, "score": h.score} for h in answer.docs],
            "prompt_tokens": answer.prompt_tokens,
            "doc_tokens": answer.doc_tokens,
            "response_tokens": answer.response_tokens,
            "trace": list(answer.trace),
            "followups": list(answer.followups),
        }
        with self._publish_lock:
            self.logs.append(record)

    # ------------------------------------------------------------- the pipeline
    def _merged(self, overrides: Mapping[str, Any]) -> RAGOptions:
        """The instance's options with one call's ``overrides`` (ConfigError for one the spec decides)."""
        if self._spec is not None:
            from akasha.assemble import spec_conflicts

            spec_conflicts(self._spec, overrides)
        return self.options.merged(**overrides)

    def pipeline(self, options: RAGOptions | None = None, data_source: DataSource | None = None) -> Pipeline:
        """The pipeline one call with ``options`` runs (built by :mod:`akasha.assemble`; parts are cached)."""
        options = self.options if options is None else options
        if self._spec_pipeline is None:
            return from_options(options, self.components, data_source=data_source)
        changes: dict[str, Any] = {"generation": generation_for(options, self.components)}
        if self._spec_pipeline.reranker is None and options.reranker is not None:
            # The spec does not rerank: the facade's reranker may (never on top of the spec's own).
            changes["reranker"] = self.components.reranker(options.reranker, options.reranker_model, options.device)
            changes["rerank_top_k"] = options.rerank_top_k
        return self._spec_pipeline.derive(**changes)

    @contextmanager
    def _published_if_failing(self, answer: Answer) -> Iterator[None]:
        """A failure inside the block publishes the call (its trace so far, no docs or response), then propagates."""
        try:
            yield
        except BaseException as exc:
            self._publish(Answer(answer.question, trace=answer.trace, error=exc, sync=answer.sync))
            if self.options.verbose:
                report_trace(answer.trace)
            raise

    def _answer(self, options: RAGOptions, data_source: DataSource, prompt: str,
                history: Sequence[object] | None, selfask: bool) -> str | Iterator[str]:
        answer = Answer(prompt)
        with self._published_if_failing(answer):
            pipeline = self._prepare(options, data_source, history, selfask, answer)
        self._publish(answer)
        if options.stream:
            return self._stream(pipeline, options, answer)
        with self._published_if_failing(answer):
            pipeline.generate(answer)
        self._log(options, answer)
        return answer.response

    def _prepare(self, options: RAGOptions, data_source: DataSource, history: Sequence[object] | None,
                 selfask: bool, answer: Answer) -> Pipeline:
        """The call's pipeline, after it prepared ``answer`` (retrieved, reranked, packed)."""
        pipeline = self.pipeline(options, data_source)
        if selfask:
            from akasha.selfask import prepare

            prepare(pipeline, answer.question, data_source=data_source, history=history, answer=answer)
        else:
            pipeline.prepare(answer.question, data_source=data_source, history=history, answer=answer)
        return pipeline

    def _stream(self, pipeline: Pipeline, options: RAGOptions, answer: Answer) -> Iterator[str]:
        with _records_error(answer):
            yield from pipeline.stream(answer)
        self._log(options, answer)

    async def _astream(self, pipeline: Pipeline, options: RAGOptions, answer: Answer) -> AsyncIterator[str]:
        with _records_error(answer):
            async for piece in pipeline.astream(answer):
                yield piece
        self._log(options, answer)

    # ------------------------------------------------------------ public API
    def __call__(self, data_source: DataSource, prompt: str, history_messages: Sequence[object] | None = None,
                 **overrides: Any) -> str | Iterator[str]:
        """Answer ``prompt`` from ``data_source`` (a folder, a file, or a list of them).

        Keyword ``overrides`` (any option, e.g. ``reranker="llm", rerank_top_k=3``) apply to this call only.
        Returns the answer, or a generator of pieces when ``stream=True`` (``rag.response`` fills as it is consumed).
        """
        options = self._checked(prompt, overrides)
        return self._answer(options, data_source, prompt, history_messages, selfask=False)

    def selfask_RAG(self, data_source: DataSource, prompt: str, history_messages: Sequence[object] | None = None,
                    **overrides: Any) -> str | Iterator[str]:  # not snake_case: the seed library's public name
        """Answer by decomposing ``prompt`` into follow-up questions first (see :mod:`akasha.selfask`); ``rag.docs``
        holds the union of documents used, ``rag.followups`` the follow-ups and answers."""
        options = self._checked(prompt, overrides)
        return self._answer(options, data_source, prompt, history_messages, selfask=True)

    def _checked(self, prompt: object, overrides: Mapping[str, Any]) -> RAGOptions:
        """This call's options (instance settings + overrides), after checking them and the prompt."""
        with self._published_if_failing(Answer(prompt if isinstance(prompt, str) else "")):
            options = self._merged(overrides)
            if not isinstance(prompt, str) or not prompt.strip():
                raise ValueError("prompt must be a non-empty string")
            return options

    # ------------------------------------------------------------- async API
    async def acall(self, data_source: DataSource, prompt: str, history_messages: Sequence[object] | None = None,
                    **overrides: Any) -> str | AsyncIterator[str]:
        """Async twin of :meth:`__call__`: everything before generation runs in a worker thread, generation
        uses the provider's async client where it has one. ``stream=True`` returns an async iterator."""
        options = self._checked(prompt, overrides)
        answer = Answer(prompt)
        with self._published_if_failing(answer):
            pipeline = await asyncio.to_thread(self._prepare, options, data_source, history_messages, False, answer)
        self._publish(answer)
        if options.stream:
            return self._astream(pipeline, options, answer)
        with self._published_if_failing(answer):
            await pipeline.agenerate(answer)
        self._log(options, answer)
        return answer.response

    async def astream(self, data_source: DataSource, prompt: str, history_messages: Sequence[object] | None = None,
                      **overrides: Any) -> AsyncIterator[str]:
        """``async for piece in rag.astream(folder, question)``: the streamed async call."""
        pieces = await self.acall(data_source, prompt, history_messages, **{**overrides, "stream": True})
        assert not isinstance(pieces, str)
        async for piece in pieces:
            yield piece

    # ------------------------------------------------------- retrieval only
    def search(self, data_source: DataSource, question: str, k: int = 5, search_type: Any = None) -> list[Hit]:
        """First-stage retrieval only (no reranking, no language model): the ``k`` best chunks for ``question``."""
        overrides: dict[str, Any] = {} if search_type is None else {"search_type": search_type}
        if self._spec is None:
            overrides["k"] = k
        options = self._checked(question, overrides)
        answer = Answer(question)
        with self._published_if_failing(answer):
            pipeline = self.pipeline(options, data_source)
            hits = pipeline.first_stage(question, k, data_source=data_source, trace=answer.trace, answer=answer)[:k]
        answer.docs = DocList(hits)
        self._publish(answer)
        if options.verbose:
            report_trace(answer.trace)
        return DocList(hits)

    def as_langchain_retriever(self, data_source: DataSource, k: int = 4, **overrides: Any) -> Any:
        """This RAG's retrieval (and reranker) over ``data_source`` as a langchain-core ``BaseRetriever``
        returning the ``k`` best chunks; ``overrides`` are checked now. See :mod:`akasha.adapters.langchain`."""
        from akasha.adapters.langchain import langchain_retriever

        self._merged(overrides)  # an unknown or conflicting option fails here, not in a chain
        return langchain_retriever(self, data_source, k=k, overrides=overrides)

    def as_llamaindex_retriever(self, data_source: DataSource, k: int = 4, **overrides: Any) -> Any:
        """This RAG's retrieval (and reranker) over ``data_source`` as a llama-index-core ``BaseRetriever``
        returning the ``k`` best chunks; ``overrides`` are checked now. See :mod:`akasha.adapters.llamaindex`."""
        from akasha.adapters.llamaindex import llamaindex_retriever

        self._merged(overrides)  # an unknown or conflicting option fails here, not in an engine
        return llamaindex_retriever(self, data_source, k=k, overrides=overrides)

    def index(self, data_source: DataSource, *, progress: bool = False, **overrides: Any) -> Any:
        """Bring the index for ``data_source`` up to date and return the index's sync report."""
        return self.pipeline(self._merged(overrides)).sync(data_source, progress=progress)

    def prune(self, *, vacuum: bool = True, **overrides: Any) -> Any:
        """Drop index history that no indexed corpus needs (see :meth:`akasha.index.CorpusIndex.prune`);
        returns what was removed."""
        pipeline = self.pipeline(self._merged(overrides))
        with pipeline.locked():
            return pipeline.index.prune(vacuum=vacuum)

    def close(self) -> None:
        """Release every index this instance opened (the next call opens what it needs again)."""
        if self._spec_pipeline is not None:
            self._spec_pipeline.close()
        self.components.close()


@contextmanager
def _records_error(answer: Answer) -> Iterator[None]:
    """A stream's failure is kept as ``answer.error`` (a consumer closing the stream early is none)."""
    try:
        yield
    except BaseException as exc:
        if not isinstance(exc, GeneratorExit):
            answer.error = exc
        raise


class _StderrHandler(logging.Handler):
    """Writes to the ``sys.stderr`` of the moment (a notebook or a test may replace it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # pragma: no cover - logging must never break a call
            self.handleError(record)


#: The stage lines of ``verbose=True`` instances, and only theirs: a logger of its own, so one instance's
#: ``verbose`` never changes the ``akasha`` loggers the application configures.
VERBOSE_LOGGER = logging.getLogger("akasha.verbose")


def report_trace(trace: Sequence[dict[str, Any]]) -> None:
    """Write one call's stage lines (``stage name: in -> out in ms``) on stderr, for a ``verbose=True`` RAG."""
    if not VERBOSE_LOGGER.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("akasha: %(message)s"))
        VERBOSE_LOGGER.addHandler(handler)
        VERBOSE_LOGGER.setLevel(logging.INFO)
        VERBOSE_LOGGER.propagate = False
    for entry in trace:
        error = f" ({entry['error']})" if entry.get("error") else ""
        VERBOSE_LOGGER.info("%s %s: %s -> %s in %.1f ms%s", entry["stage"], entry["name"], entry["in"], entry["out"],
                            entry["ms"], error)
