"""One pipeline of stages over the content-keyed index: what every door runs.

``akasha.RAG``, a ``kind: RAGPipeline`` file, ``akasha ask`` and ``akasha eval`` all get a
:class:`Pipeline` from :mod:`akasha.assemble`; what must be embedded is the
:class:`~akasha.index.CorpusIndex`'s business. A question runs the stages, each one trace entry::

    [index] -> transform -> retrieve -> fuse -> rerank -> (context | pack -> generate)

The core is synchronous (the ``async`` methods run it in a worker thread); one re-entrant lock per
index (:func:`index_lock`) serialises its reads and writes, so no call sees another's corpus half-way.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from pathlib import Path
from typing import Any

from akasha.errors import (
    BudgetError,
    ConfigError,
    EmptySourceError,
    OrderingError,
    StageError,
    StreamInterruptedError,
    stage_error,
)
from akasha.llm.base import ChatModel, GenerationOptions, GenerationReport, Message
from akasha.options import positive_int
from akasha.packing import TEMPLATE_RESERVE, PackResult, pack
from akasha.prompts import sources_line, system_message
from akasha.retrieval.fusion import rrf, weighted
from akasha.retrieval.patterns import IndexSearch, Pattern
from akasha.trace import Timer, Trace, describe, keeps_type
from akasha.types import Chunk, Document, Hit, QueryResult

logger = logging.getLogger(__name__)

Filters = Mapping[str, Any]
DataSource = str | Path | Sequence[str | Path]

_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def index_lock(index: Any) -> threading.RLock:
    """The re-entrant lock that serialises reads and writes of ``index`` in this process."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(index, threading.RLock())


def as_document(item: Any) -> Document:
    """Accept a Document, a string, a dict (text/content, metadata, id/doc_id) or a LangChain document."""
    if isinstance(item, Document):
        return item
    if isinstance(item, str):
        return Document(text=item)
    if isinstance(item, Mapping):
        text = item.get("text", item.get("content", item.get("page_content")))
        if not isinstance(text, str):
            raise TypeError(f"document dict needs a 'text' (or 'content') string, got keys {sorted(item)}")
        doc_id = item.get("id", item.get("doc_id"))
        return Document(text=text, metadata=dict(item.get("metadata") or {}),
                        id=None if doc_id is None else str(doc_id))
    text = getattr(item, "page_content", None)
    if isinstance(text, str):
        return Document(text=text, metadata=dict(getattr(item, "metadata", None) or {}), id=getattr(item, "id", None))
    raise TypeError(f"cannot ingest {type(item).__name__}: pass Document objects, strings or dicts with 'text'")


def describe_source(data_source: DataSource) -> str:
    """A short description of a data source for trace entries and messages."""
    if isinstance(data_source, (str, Path)):
        return str(data_source)
    try:
        return f"{len(list(data_source))} paths"
    except TypeError:  # not a path at all: discover() raises the ConfigError that says so
        return type(data_source).__name__


# ----------------------------------------------------------------- answering
@dataclass
class Generation:
    """How the answer is written: the chat model (built by ``resolve(model)`` on first use, so a pipeline that
    only retrieves never builds one) and the prompt budget."""

    model: Any
    resolve: Callable[[Any], ChatModel]
    max_input_tokens: int = 3000
    system_prompt: str | None = None
    language: str | None = "en"
    max_output_tokens: int | None = 1024
    temperature: float = 0.0

    @property
    def chat_model(self) -> ChatModel:
        """The answer model (built on first use through ``resolve``)."""
        return self.resolve(self.model)

    def request_options(self) -> tuple[GenerationOptions, GenerationReport]:
        """The options of one request, with a fresh report the provider fills with its finish reason."""
        report = GenerationReport()
        return GenerationOptions(max_output_tokens=self.max_output_tokens, temperature=float(self.temperature),
                                 report=report), report

    def counter(self) -> Any:
        """The answer model's token counter: its own tokenizer where akasha can have it (see
        :func:`akasha.tokens.counter_for`)."""
        from akasha.tokens import counter_for

        return counter_for(self.chat_model if not isinstance(self.model, str) or ":" in self.model else self.model)

    def prompt_budget(self) -> tuple[int, int | None]:
        """``(budget, context)``: the prompt may take ``min(max_input_tokens, context - max_output_tokens -
        TEMPLATE_RESERVE)`` tokens when the model's context size is known, else ``max_input_tokens``."""
        from akasha.llm.base import context_window

        context = context_window(self.chat_model) if not isinstance(self.model, str) or ":" in self.model else None
        if context is None:
            return self.max_input_tokens, None
        room = context - (self.max_output_tokens or 0) - TEMPLATE_RESERVE
        if room <= 0:
            raise BudgetError(
                f"the model's context is {context} tokens and max_output_tokens is {self.max_output_tokens}, "
                f"which leaves no room for a prompt; lower max_output_tokens below {context - TEMPLATE_RESERVE}"
            )
        return min(self.max_input_tokens, room), context


@dataclass
class Answer:
    """Everything one answering call produced (``akasha.RAG`` publishes it as ``rag.docs``, ``rag.trace`` ...):
    ``docs`` reached the model, ``response`` grows while a stream is consumed, ``sync`` is the index's
    report, ``error`` the exception that ended a failed call."""

    question: str
    trace: Trace = field(default_factory=Trace)
    docs: list[Hit] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    prompt_tokens: int = 0
    doc_tokens: int = 0
    response: str = ""
    response_tokens: int = 0
    followups: list[dict[str, Any]] = field(default_factory=list)
    sync: Any = None
    error: BaseException | None = None
    started: float = field(default_factory=time.time)

    @property
    def sources(self) -> str:
        """``Sources: a.md; b.pdf, page 2``: the citations of :attr:`docs`, each once, in order ("" with none)."""
        return sources_line(self.docs)

    def set_packed(self, packed: PackResult) -> None:
        self.docs = list(packed.hits)
        self.messages = packed.messages
        self.prompt_tokens = packed.prompt_tokens
        self.doc_tokens = packed.doc_tokens


# ------------------------------------------------------------------ pipeline
@dataclass(eq=False, repr=False)
class Pipeline:
    """Ingest into a content-keyed index and answer questions from it, as a list of stages (made by
    :mod:`akasha.assemble`). ``pattern`` decides the queries, retrievers and fusion (a YAML
    ``retrieval.pattern``, or an ``IndexSearch`` for a facade ``search_type``); ``generation`` is needed
    only to answer."""

    index: Any
    _: KW_ONLY
    pattern: Pattern
    name: str = "pipeline"
    reranker: Any = None
    rerank_top_k: int | None = None
    top_k: int = 5
    candidates: int | None = None
    similarity_threshold: float | None = None
    llm: Any = None
    generation: Generation | None = None
    store: Any = None
    splitter: Any = None
    #: The vector width the spec's store was created for (``embeddings.dimension``, else the embedder's, else 384).
    dimension: int | None = None
    #: False when ``data_source`` names existing stores to search (``use_chroma``), not files to index.
    syncs_source: bool = True
    #: A reranker's invalid ordering raises StageError("rerank", name, cause) (the YAML door), not the ValueError.
    stage_errors: bool = False
    #: Set once the corpus is loaded; shared by :meth:`derive`'s copies, which share the index.
    _loaded: threading.Event = field(default_factory=threading.Event, init=False)

    def __post_init__(self) -> None:
        self.top_k = positive_int("top_k", self.top_k)
        self.candidates = positive_int("candidates", self.candidates, allow_none=True)

    def __repr__(self) -> str:
        return (
            f"Pipeline(name={self.name!r}, pattern={self.pattern.name!r}, "
            f"store={getattr(self.store, 'name', 'local') if self.store is not None else 'local'!r}, "
            f"embedder={getattr(self.embedder, 'name', '?')!r})"
        )

    @property
    def embedder(self) -> Any:
        """The index's embedder (documents and questions)."""
        return getattr(self.index, "embedder", None)

    def derive(self, **changes: Any) -> Pipeline:
        """A copy sharing the index (its lock and loaded corpus) with some settings changed, e.g. one call's
        generation."""
        derived = replace(self, **changes)
        derived._loaded = self._loaded
        return derived

    def locked(self) -> threading.RLock:
        """The index's lock: hold it for a sequence of reads that must see one corpus (see :func:`index_lock`)."""
        return index_lock(self.index)

    @property
    def chat_model(self) -> ChatModel:
        """The answer model of :attr:`generation` (ConfigError when the pipeline only retrieves)."""
        return self._generation().chat_model

    def _generation(self) -> Generation:
        if self.generation is None:
            raise ConfigError(f"pipeline {self.name!r} has no answer model; build it with one (akasha.RAG, or "
                              "akasha.assemble.from_spec(spec, model=...)) to pack and generate")
        return self.generation

    # ----------------------------------------------------------------- ingest
    def ingest_sync(self, documents: Iterable[Any] | Any) -> int:
        """Chunk, embed and index ``documents``; returns how many chunks they have in the index. A document
        re-ingested (same ``id``, or same text) replaces its previous chunks; a failure leaves them in place."""
        if isinstance(documents, (str, Document, Mapping)):
            documents = [documents]
        docs = [as_document(item) for item in documents]
        if not docs:
            return 0
        name = f"index({getattr(self.embedder, 'name', '?')})"
        with self.locked(), Trace().stage("index", name, len(docs)) as entry:
            report = self.index.add_documents(docs)
            self._loaded.set()
            entry["out"] = getattr(report, "chunks", None)
            return int(report.written)

    def delete_sync(self, doc_ids: Sequence[str]) -> int:
        """Remove documents by id; returns how many chunks went."""
        with self.locked():
            return int(self.index.delete_documents(list(doc_ids)))

    def sync(self, data_source: DataSource, *, trace: Trace | None = None, progress: bool | None = None) -> Any:
        """Bring the index in line with the files of ``data_source`` (the ``index`` stage); returns the SyncReport
        (see :meth:`akasha.index.CorpusIndex.sync`)."""
        trace = Trace() if trace is None else trace
        embedder = self.embedder
        label = getattr(embedder, "display_name", None) if hasattr(embedder, "built") else None
        name = f"index({label or getattr(embedder, 'name', '?')})"
        lexical = getattr(self.pattern, "search_type", None) == "bm25"  # no vectors needed: none computed
        with self.locked(), trace.stage("index", name, describe_source(data_source)) as entry:
            report = self.index.sync(data_source, progress=progress, **({"lexical": True} if lexical else {}))
            self._loaded.set()
            entry["out"] = getattr(report, "chunks", None)
            entry["files"] = {"indexed": report.indexed, "unchanged": report.unchanged,
                              "skipped": report.skipped, "removed": report.removed}
            entry["embedded"] = getattr(report, "embedded", None)
        return report

    def _ensure_corpus(self) -> None:
        """Before the first read: the corpus this index committed last, else the store's records (a restart)."""
        if self._loaded.is_set():
            return
        self._loaded.set()
        restore = getattr(self.index, "restore", None)
        if restore is None or restore():
            return
        if self.store is not None and hasattr(self.index, "load_store"):
            with contextlib.suppress(EmptySourceError):
                self.index.load_store()

    # ------------------------------------------------------------------ query
    def candidates_for(self, k: int) -> int:
        """Hits each retriever fetches: ``candidates`` (default top_k * 2); without a reranker it grows when ``k``
        exceeds it, so an explicit larger ``k`` can be served."""
        if isinstance(self.pattern, IndexSearch):
            return k
        if self.reranker is not None:
            return self.candidates if self.candidates is not None else 2 * self.top_k
        if self.candidates is not None:
            return max(self.candidates, k)
        return 2 * max(self.top_k, k)

    def first_stage(self, question: str, k: int | None = None, *, data_source: DataSource | None = None,
                    filters: Filters | None = None, trace: Trace | None = None, answer: Answer | None = None,
                    ) -> list[Hit]:
        """Index ``data_source`` (when given), transform, retrieve and fuse: the candidates, best first.
        Holds the index lock throughout, so they come from this call's corpus; the sync report goes to
        ``answer.sync``."""
        k = self.top_k if k is None else positive_int("k", k)
        trace = Trace() if trace is None else trace
        with self.locked():
            if data_source is not None and self.syncs_source:
                report = self.sync(data_source, trace=trace)
                if answer is not None:
                    answer.sync = report
            elif self.syncs_source:
                self._ensure_corpus()
            queries = self._transform(question, trace)
            candidates = self.candidates_for(k)
            lists = self._retrieve(queries, candidates, filters, trace)
            return self._fuse(lists, candidates, trace, question)

    def second_stage(self, question: str, hits: list[Hit], k: int | None = None, *,
                     trace: Trace | None = None) -> list[Hit]:
        """Rerank (validated complete ordering, then the reranker's top_k) and keep the first ``k``."""
        k = self.top_k if k is None else positive_int("k", k)
        trace = Trace() if trace is None else trace
        return self._rerank(question, hits, k, trace)[:k]

    def retrieve(self, data_source: DataSource | None, question: str, k: int | None = None, *,
                 filters: Filters | None = None, trace: Trace | None = None) -> list[Hit]:
        """Index ``data_source`` (None: use the index as it is) and return the ``k`` best hits for ``question``."""
        trace = Trace() if trace is None else trace
        hits = self.first_stage(question, k, data_source=data_source, filters=filters, trace=trace)
        return self.second_stage(question, hits, k, trace=trace)

    def query_sync(self, query: str, k: int | None = None, *, filters: Filters | None = None) -> QueryResult:
        """Retrieve the ``k`` best hits for ``query`` (default ``retrieval.top_k``) with a per-stage trace.
        ``filters`` keeps chunks whose metadata equals every given value (``doc_id``: the document id); a
        blank query returns an empty result without calling anything."""
        k = self.top_k if k is None else positive_int("k", k)
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        if not query.strip():
            return QueryResult(hits=[], trace=[])
        trace = Trace()
        hits = self.retrieve(None, query, k, filters=filters, trace=trace)
        timer = Timer()
        result = QueryResult(hits=hits, trace=trace)
        context = result.context
        trace.record("context", "join", len(hits), len(hits), timer.ms, chars=len(context))
        return result

    def search(self, question: str, k: int = 5) -> list[Hit]:
        """The hits of :meth:`query_sync`."""
        return self.query_sync(question, k=k).hits

    def _transform(self, query: str, trace: Trace) -> list[str]:
        if not self.pattern.has_transform:
            return [query]
        with trace.stage("transform", self.pattern.name, 1) as entry:
            produced = self.pattern.transform(query, self.llm)
            if inspect.isawaitable(produced):  # a plugin pattern with an async transform
                from akasha.providers.sync_bridge import run_sync

                produced = run_sync(_awaited(produced))
            queries = [q for q in produced if isinstance(q, str) and q.strip()] or [query]
            entry["out"] = len(queries)
        return queries

    def _retrieve(self, queries: list[str], candidates: int, filters: Filters | None,
                  trace: Trace) -> list[tuple[str, list[Hit]]]:
        """One ranked list per (retriever, query); a failing retriever is recorded, not raised, unless all fail."""
        jobs: list[tuple[str, str]] = []
        for retriever in self.pattern.retrievers:
            if retriever == "bm25":
                jobs.append(("bm25", queries[0]))  # BM25 runs the user's words
            else:
                jobs.extend((retriever, q) for q in queries)
        lists: list[tuple[str, list[Hit]]] = []
        errors: list[tuple[str, BaseException]] = []
        for position, (retriever, text) in enumerate(jobs):
            timer = Timer()
            name = self.pattern.name if retriever == "index" else retriever
            n_in = candidates if retriever == "index" else 1
            extra = {"query": position} if len(queries) > 1 and retriever != "bm25" else {}
            try:
                ranked = self._run_retriever(retriever, text, candidates, filters)
            except Exception as exc:
                trace.record("retrieve", name, n_in, 0, timer.ms, **extra, error=describe(exc))
                if keeps_type(exc) and not isinstance(exc, StageError):
                    raise  # a configuration or installation problem, not a failing retriever
                logger.warning("retriever %s failed: %s", name, exc)
                errors.append((name, exc))
                lists.append((retriever, []))
                continue
            trace.record("retrieve", name, n_in, len(ranked), timer.ms, **extra)
            lists.append((retriever, ranked))
        if errors and len(errors) == len(jobs):
            names = "+".join(dict.fromkeys(name for name, _ in errors))
            raise StageError("retrieve", names, errors[0][1]) from errors[0][1]
        return lists

    def _run_retriever(self, retriever: str, text: str, candidates: int, filters: Filters | None) -> list[Hit]:
        if retriever == "index":
            if filters:
                raise ConfigError("filters need a YAML retrieval pattern (naive, hybrid ...), not a facade search_type")
            search_type = getattr(self.pattern, "search_type", self.pattern.name)
            return list(self.index.search(text, k=candidates, search_type=search_type))
        if retriever == "vector":
            # A fusion: adaptive pattern ranks as auto's dense list does (passage vectors).
            ranked = self.index.vector_search(text, candidates, filters,
                                              passages=getattr(self.pattern, "fusion", None) == "adaptive")
            if self.similarity_threshold is not None:
                ranked = [(c, s) for c, s in ranked if s >= self.similarity_threshold]
            return [Hit(chunk=c, score=float(s), source="vector", details={"vector": float(s)}) for c, s in ranked]
        if retriever == "bm25":
            ranked = self.index.bm25_search(text, candidates, filters)
            return [Hit(chunk=c, score=float(s), source="bm25", details={"bm25": float(s)}) for c, s in ranked]
        raise ConfigError(f"unknown retriever {retriever!r} in pattern {self.pattern.name!r} "
                          "(known: vector, bm25, index)")

    def _fuse(self, lists: list[tuple[str, list[Hit]]], candidates: int, trace: Trace,
              question: str = "") -> list[Hit]:
        if len(lists) == 1 and (self.pattern.fusion == "none" or isinstance(self.pattern, IndexSearch)):
            return list(lists[0][1])
        chunks: dict[str, Chunk] = {}
        best: dict[str, dict[str, float]] = {}  # chunk id -> the best score of each retriever that found it
        for retriever, ranked in lists:
            for hit in ranked:
                chunks.setdefault(hit.chunk.id, hit.chunk)
                scores = best.setdefault(hit.chunk.id, {})
                scores[retriever] = max(hit.score, scores.get(retriever, float("-inf")))
        timer = Timer()
        id_lists = [[(hit.chunk.id, hit.score) for hit in ranked] for _, ranked in lists]
        if self.pattern.fusion == "weighted":
            fused, key = weighted(id_lists, list(self.pattern.weights or [1.0] * len(id_lists))), "fused"
        elif self.pattern.fusion == "adaptive":
            fused, key = self._adaptive(question, [name for name, _ in lists], id_lists), "rrf"
        else:
            fused, key = rrf(id_lists), "rrf"
        fused = fused[:candidates]
        name = "weighted" if key == "fused" else ("adaptive" if self.pattern.fusion == "adaptive" else "rrf")
        trace.record("fuse", name, sum(len(x) for x in id_lists), len(fused), timer.ms)
        return [
            Hit(chunk=chunks[str(cid)], score=float(score), source="+".join(sorted(best[str(cid)])),
                details={**best[str(cid)], key: float(score)})
            for cid, score in fused
        ]

    def _adaptive(self, question: str, names: list[str], id_lists: list[list[tuple[str, float]]]
                  ) -> list[tuple[Any, float]]:
        """``fusion: adaptive``: the vector and BM25 lists fused as the ``auto`` search type fuses them."""
        from akasha.retrieval.search import SearchSettings, fuse_adaptive

        settings = getattr(self.index, "search_settings", None) or SearchSettings()
        vector = [pair for name, ranked in zip(names, id_lists, strict=True) if name == "vector" for pair in ranked]
        lexical = [pair for name, ranked in zip(names, id_lists, strict=True) if name == "bm25" for pair in ranked]
        if getattr(self.index, "searches_store", False):  # the store's engine ranks: the stores' one fusion
            from akasha.retrieval.fusion import fuse_ranked

            return fuse_ranked(vector, lexical, settings.adaptive_weights, settings.adaptive_k)
        try:
            population = len(self.index)
        except TypeError:  # an index without a size: the candidates are a lower bound
            population = len({item for ranked in id_lists for item, _ in ranked})
        reads = getattr(self.index, "dense_reads", None)
        fused = fuse_adaptive(question, vector, lexical, population, settings,
                              dense_reads=reads(question) if reads is not None and vector and lexical else None,
                              hubs=getattr(self.index, "hub_scores", None))
        holds_alone = getattr(self.index, "holds_alone", None)
        from akasha.retrieval.fusion import exact_match_first

        if lexical and holds_alone is not None and holds_alone(question, str(lexical[0][0])):
            fused = exact_match_first(fused, lexical[0][0])
        return fused

    def _rerank(self, question: str, hits: list[Hit], k: int, trace: Trace) -> list[Hit]:
        if self.reranker is None or not hits:
            return hits
        from akasha.rerank import rerank

        # reranking.top_k caps what the reranker returns (default retrieval.top_k); the caller keeps the first k.
        top_k = self.rerank_top_k if self.rerank_top_k is not None else self.top_k
        name = str(getattr(self.reranker, "name", None) or type(self.reranker).__name__)
        try:
            with trace.stage("rerank", name, len(hits)) as entry:
                ranked = rerank(self.reranker, question, hits, top_k)
                entry["out"] = len(ranked)
                requests = getattr(self.reranker, "last_requests", None)
                if isinstance(requests, int) and requests > 1:  # the candidates did not fit one request
                    entry["requests"] = requests
        except OrderingError as exc:
            if not self.stage_errors:
                raise  # the facade raises the ValueError itself (akasha-rag.md)
            # ragpipeline-yaml.md: a failing reranker raises StageError(stage, name, cause); it is a ValueError too
            raise stage_error("rerank", name, exc) from exc
        return ranked

    # ----------------------------------------------------------------- answer
    def pack(self, question: str, hits: Sequence[Hit], history: Sequence[object] | None = None, *,
             trace: Trace | None = None) -> PackResult:
        """Fit the system prompt, history, question and ``hits`` (in order) under ``max_input_tokens``."""
        generation = self._generation()
        trace = Trace() if trace is None else trace
        with trace.stage("pack", f"max_input_tokens={generation.max_input_tokens}", len(hits)) as entry:
            budget, context = generation.prompt_budget()
            counter = generation.counter()
            entry["counter"] = getattr(counter, "source", type(counter).__name__)
            if context is not None:
                entry["budget"], entry["context"] = budget, context
            packed = pack(
                system=system_message(generation.system_prompt, generation.language), question=question,
                hits=list(hits), max_input_tokens=budget, counter=counter, history=history,
                budget_name=None if budget == generation.max_input_tokens else (
                    f"the prompt budget ({context}-token context less max_output_tokens="
                    f"{generation.max_output_tokens} and {TEMPLATE_RESERVE} for the chat template)"),
            )
            entry["out"] = len(packed.hits)
            entry["tokens"] = packed.prompt_tokens
        return packed

    def prepare(self, question: str, *, data_source: DataSource | None = None,
                history: Sequence[object] | None = None, answer: Answer | None = None) -> Answer:
        """Everything before :meth:`generate` or :meth:`stream`: index, retrieve, rerank, pack. Fills ``answer``
        when given (so a caller keeps the trace of a call that fails part way)."""
        answer = Answer(question) if answer is None else answer
        hits = self.first_stage(question, data_source=data_source, trace=answer.trace, answer=answer)
        hits = self.second_stage(question, hits, trace=answer.trace)
        answer.set_packed(self.pack(question, hits, history, trace=answer.trace))
        return answer

    def complete(self, messages: list[Message], *, trace: Trace | None = None, prompt_tokens: int | None = None) -> str:
        """One answer-model call over ``messages`` (the ``generate`` stage), the text as the model wrote it."""
        generation = self._generation()
        model = generation.chat_model
        trace = Trace() if trace is None else trace
        options, report = generation.request_options()
        with trace.stage("generate", model.name, prompt_tokens) as entry:
            text = model.generate(messages, options)
            if not isinstance(text, str):
                raise TypeError(f"the answer model {model.name!r} returned {type(text).__name__}, not a string")
            entry["out"] = len(text)
            _record_finish(entry, report)
        return text

    def generate(self, answer: Answer) -> str:
        """Write the answer for a prepared call: the model's text as it wrote it (citations: ``answer.sources``)."""
        text = self.complete(answer.messages, trace=answer.trace, prompt_tokens=answer.prompt_tokens)
        return self.finish(answer, text)

    async def agenerate(self, answer: Answer) -> str:
        """:meth:`generate` with the provider's async client when it has one."""
        generation = self._generation()
        model = generation.chat_model
        options, report = generation.request_options()
        with answer.trace.stage("generate", model.name, answer.prompt_tokens) as entry:
            text = await (model.agenerate(answer.messages, options) if hasattr(model, "agenerate")
                          else asyncio.to_thread(model.generate, answer.messages, options))
            entry["out"] = len(text)
            _record_finish(entry, report)
        return self.finish(answer, text)

    def stream(self, answer: Answer) -> Iterator[str]:
        """Yield the answer in pieces; ``answer.response`` grows as they are consumed. A model failing part way
        raises :class:`~akasha.errors.StreamInterruptedError` (``partial`` holds what arrived)."""
        model, options, recorder = self._start_stream(answer)
        with recorder:
            for piece in filter(None, model.stream(answer.messages, options)):
                yield recorder.add(piece)
        self.finish(answer, answer.response)

    async def astream(self, answer: Answer) -> AsyncIterator[str]:
        """Async :meth:`stream` (the provider's async stream, or its sync stream in a worker thread)."""
        model, options, recorder = self._start_stream(answer)
        with recorder:
            async for piece in _async_pieces(model, answer.messages, options):
                yield recorder.add(piece)
        self.finish(answer, answer.response)

    def _start_stream(self, answer: Answer) -> tuple[ChatModel, GenerationOptions, _StreamRecorder]:
        """The answer model, its request options and the recorder of one stream for ``answer``."""
        generation = self._generation()
        recorder = _StreamRecorder(answer, generation.chat_model.name)
        options, recorder.report = generation.request_options()
        return generation.chat_model, options, recorder

    def finish(self, answer: Answer, text: str) -> str:
        """Record the final answer and its token count on ``answer``; returns ``text``."""
        answer.response = text
        answer.response_tokens = self._generation().counter().count(text)
        return text

    def answer(self, question: str, data_source: DataSource | None = None,
               history: Sequence[object] | None = None) -> Answer:
        """Prepare and generate in one call; returns the :class:`Answer` (``.response`` is the text)."""
        answer = self.prepare(question, data_source=data_source, history=history)
        self.generate(answer)
        return answer

    # ----------------------------------------------------------------- async
    async def ingest(self, documents: Iterable[Any] | Any) -> int:
        """Async :meth:`ingest_sync`."""
        return await asyncio.to_thread(self.ingest_sync, documents)

    async def delete(self, doc_ids: Sequence[str]) -> int:
        """Async :meth:`delete_sync`."""
        return await asyncio.to_thread(self.delete_sync, doc_ids)

    async def query(self, query: str, k: int | None = None, *, filters: Filters | None = None) -> QueryResult:
        """Async :meth:`query_sync`."""
        return await asyncio.to_thread(self.query_sync, query, k, filters=filters)

    async def aretrieve(self, data_source: DataSource | None, question: str, k: int | None = None) -> list[Hit]:
        """Async :meth:`retrieve`."""
        return await asyncio.to_thread(self.retrieve, data_source, question, k)

    # ----------------------------------------------------------------- close
    def close(self) -> None:
        """Release the index's database and the store's connections (a failure to close is logged, not raised)."""
        close_all([self.index, self.store])

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        await asyncio.to_thread(self.close)


def close_all(parts: Iterable[Any]) -> None:
    """Call each part's ``close()`` (an async one is left alone); a failure is logged, so it can neither hide
    the caller's own error nor stop the other closes."""
    for part in parts:
        closer = getattr(part, "close", None)
        if closer is None or inspect.iscoroutinefunction(closer):
            continue
        try:
            closer()
        except Exception as exc:
            logger.warning("could not close %s: %s", type(part).__name__, describe(exc))


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    """A coroutine of any awaitable (a Future, a Task, an object with ``__await__``): what ``asyncio.run`` takes."""
    return await awaitable


class _StreamRecorder:
    """Bookkeeping shared by the sync and async streams: the trace entry and the growing response."""

    def __init__(self, answer: Answer, model_name: str) -> None:
        self.answer = answer
        self.model_name = model_name
        self.pieces: list[str] = []
        self.entry = answer.trace.record("generate", model_name, answer.prompt_tokens, 0)
        self.start = time.perf_counter()
        self.report: GenerationReport | None = None

    def add(self, piece: str) -> str:
        """Keep ``piece`` (the response grows); returns it."""
        self.pieces.append(piece)
        self.answer.response = "".join(self.pieces)
        return piece

    def __enter__(self) -> _StreamRecorder:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        """Close the trace entry; a stream that broke off is recorded and raised as a StreamInterruptedError
        (unless its error keeps its type; GeneratorExit passes)."""
        if isinstance(exc, Exception):
            self.entry["error"] = describe(exc)
        self.entry["ms"] = round((time.perf_counter() - self.start) * 1000, 3)
        self.entry["out"] = len(self.answer.response)
        _record_finish(self.entry, self.report)
        if isinstance(exc, Exception) and not isinstance(exc, StreamInterruptedError) and (
                not keeps_type(exc) or isinstance(exc, StageError)):
            raise StreamInterruptedError(self.model_name, describe(exc), partial="".join(self.pieces)) from exc


def _record_finish(entry: dict[str, Any], report: GenerationReport | None) -> None:
    """Put the provider's ``finish_reason`` (when it gave one) and ``truncated`` in a generate trace entry."""
    if report is None or report.finish_reason is None:
        return
    entry["finish_reason"] = report.finish_reason
    entry["truncated"] = report.truncated


async def _async_pieces(model: ChatModel, messages: list[Message], options: GenerationOptions) -> AsyncIterator[str]:
    """The model's async stream, or its sync stream driven from a worker thread (empty pieces left out)."""
    if hasattr(model, "astream"):
        async for piece in model.astream(messages, options):
            if piece:
                yield piece
        return
    iterator = filter(None, model.stream(messages, options))
    done = object()
    while True:
        piece = await asyncio.to_thread(next, iterator, done)
        if piece is done:
            return
        yield piece


__all__ = ["Answer", "DataSource", "Generation", "Pipeline", "as_document", "close_all", "describe_source",
           "index_lock"]
