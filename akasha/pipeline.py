"""The ingest and query pipelines behind a RAGPipeline spec (and usable behind the facade).

Ingest: documents -> chunk -> embed -> vector store (+ BM25 when the pattern uses
it), replacing every earlier chunk of each document. Query: transform ->
retrieve (vector, bm25) -> fuse -> rerank -> context, one trace entry per stage.

The pipeline is async (``await ingest(...)``, ``await query(...)``); the
``*_sync`` twins run the same coroutines on a private event-loop thread, so they
work in scripts and inside notebooks that already run a loop.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import threading
import time
import weakref
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from akasha.chunking.recursive import document_id
from akasha.embeddings.base import Embedder, as_matrix
from akasha.errors import MissingExtraError, StageError
from akasha.fs import atomic_write
from akasha.retrieval.fusion import rrf, weighted
from akasha.retrieval.patterns import Pattern
from akasha.stores.base import Filters, VectorStore, doc_id_of, matches
from akasha.types import Chunk, Document, Hit, QueryResult

logger = logging.getLogger(__name__)

T = TypeVar("T")


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
        return Document(text=text, metadata=dict(item.get("metadata") or {}), id=None if doc_id is None else str(doc_id))
    text = getattr(item, "page_content", None)
    if isinstance(text, str):
        return Document(text=text, metadata=dict(getattr(item, "metadata", None) or {}), id=getattr(item, "id", None))
    raise TypeError(f"cannot ingest {type(item).__name__}: pass Document objects, strings or dicts with 'text'")


def check_k(k: object) -> int:
    """``k`` must be a positive integer (``ValueError`` otherwise)."""
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


def write_json_atomically(path: Path, data: Any) -> None:
    """Write ``data`` as UTF-8 JSON so that ``path`` holds either the old file or the whole new one."""
    encoded = json.dumps(data, ensure_ascii=False).encode("utf-8")
    atomic_write(path, lambda handle: handle.write(encoded))


class _Timer:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    @property
    def ms(self) -> float:
        return round((time.perf_counter() - self.start) * 1000.0, 3)


class Pipeline:
    """A built RAGPipeline: ``await ingest(docs)`` and ``await query(q, k)``.

    Usually made by :func:`akasha.spec.build`; the constructor takes the built
    components so tests and the facade can assemble one directly.
    """

    def __init__(
        self,
        *,
        splitter: Any,
        embedder: Embedder,
        store: VectorStore,
        pattern: Pattern,
        name: str = "pipeline",
        reranker: Any = None,
        rerank_top_k: int | None = None,
        top_k: int = 5,
        candidates: int | None = None,
        similarity_threshold: float | None = None,
        bm25: Any = None,
        bm25_path: str | Path | None = None,
        llm: Any = None,
        dimension: int | None = None,
    ) -> None:
        self.name = name
        self.splitter = splitter
        self.embedder = embedder
        self.store = store
        self.pattern = pattern
        self.reranker = reranker
        self.rerank_top_k = rerank_top_k
        self.top_k = check_k(top_k)
        self.candidates = None if candidates is None else check_k(candidates)
        self.similarity_threshold = similarity_threshold
        self.bm25 = bm25
        self.bm25_path = Path(bm25_path) if bm25_path else None
        self.llm = llm
        self.dimension = dimension
        self._bm25_docs: dict[str, list[str]] = {}
        self._sources: dict[str, tuple[str, list[str]]] = {}  # path -> (sha256 of bytes, document ids)
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()
        if bm25 is not None:
            for chunk_id in bm25.ids:
                self._bm25_docs.setdefault(chunk_id.rsplit("#", 1)[0], []).append(chunk_id)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._loop_lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"Pipeline(name={self.name!r}, pattern={self.pattern.name!r}, store={getattr(self.store, 'name', '?')!r}, "
            f"embedder={getattr(self.embedder, 'name', '?')!r})"
        )

    # ----------------------------------------------------------------- ingest
    async def ingest(self, documents: Iterable[Any]) -> int:
        """Chunk, embed and index ``documents``; returns the number of chunks written.

        Re-ingesting a document (same ``id``, or same text when it has none)
        replaces all its previous chunks; if any step fails, the index keeps the
        previous version of every document in the call.
        """
        if isinstance(documents, (str, Document, Mapping)):
            documents = [documents]
        docs: dict[str, Document] = {}
        for item in documents:
            doc = as_document(item)
            key = document_id(doc)
            if key in docs:
                logger.warning("document %r appears twice in one ingest call; the last one wins", key)
            docs[key] = doc
        if not docs:
            return 0
        async with self._write_lock():
            return await self._ingest(docs)

    def _write_lock(self) -> asyncio.Lock:
        """One writer at a time per event loop, so the store and BM25 never see interleaved versions."""
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    async def _ingest(self, docs: dict[str, Document]) -> int:
        doc_ids = list(docs)
        try:
            chunks = await asyncio.to_thread(self._split, list(docs.values()))
        except Exception as exc:
            raise StageError("chunk", getattr(self.splitter, "strategy", type(self.splitter).__name__), exc) from exc
        try:
            vectors = await self._embed_documents([c.text for c in chunks])
        except Exception as exc:
            raise StageError("embed", getattr(self.embedder, "name", "embedder"), exc) from exc
        await self.store.replace(doc_ids, chunks, vectors)
        await self._update_bm25(doc_ids, chunks)
        logger.debug("ingested %d documents as %d chunks", len(docs), len(chunks))
        return len(chunks)

    def _split(self, documents: list[Document]) -> list[Chunk]:
        return list(self.splitter.split_documents(documents))

    async def _embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        batch = max(1, int(getattr(self.embedder, "batch_size", 64) or 64))
        native = getattr(self.embedder, "aembed_documents", None)
        parts = []
        for start in range(0, len(texts), batch):
            part = texts[start : start + batch]
            if native is not None and inspect.iscoroutinefunction(native):
                rows = await native(part)
            else:
                rows = await asyncio.to_thread(self.embedder.embed_documents, part)
            parts.append(as_matrix(rows, len(part), self.embedder.name))
        return np.concatenate(parts, axis=0)

    async def _update_bm25(self, doc_ids: Sequence[str], chunks: Sequence[Chunk]) -> None:
        """Give ``doc_ids`` exactly ``chunks`` in the BM25 index (if any), then save it to ``bm25_path``."""
        if self.bm25 is None:
            return
        self._bm25_replace(doc_ids, chunks)
        if self.bm25_path is not None:
            await asyncio.to_thread(write_json_atomically, self.bm25_path, self.bm25.to_json())

    def _bm25_replace(self, doc_ids: Sequence[str], chunks: Sequence[Chunk]) -> None:
        old = [cid for d in doc_ids for cid in self._bm25_docs.pop(d, [])]
        if old:
            self.bm25.remove(old)
        if chunks:
            self.bm25.add([c.id for c in chunks], [c.text for c in chunks])
        for chunk in chunks:
            self._bm25_docs.setdefault(doc_id_of(chunk), []).append(chunk.id)

    async def delete(self, doc_ids: Sequence[str]) -> int:
        """Remove documents by id from the vector store (and BM25); returns chunks removed."""
        async with self._write_lock():
            removed = await self.store.delete(list(doc_ids))
            await self._update_bm25(list(doc_ids), [])
        return removed

    # ------------------------------------------------------------------ query
    def candidates_for(self, k: int) -> int:
        """Hits each retriever fetches: ``candidates`` (default top_k * 2), grown when k exceeds it."""
        if self.candidates is not None:
            return max(self.candidates, k)
        return 2 * max(self.top_k, k)

    async def query(self, query: str, k: int | None = None, *, filters: Filters | None = None) -> QueryResult:
        """Retrieve the ``k`` best hits for ``query`` (default ``retrieval.top_k``).

        ``filters`` restricts hits to chunks whose metadata equals every given
        value (``doc_id`` matches the document id). An empty or blank query
        returns an empty result without calling anything.
        """
        k = self.top_k if k is None else check_k(k)
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        if not query.strip():
            return QueryResult(hits=[], trace=[])
        trace: list[dict[str, Any]] = []
        queries = await self._transform(query, trace)
        candidates = self.candidates_for(k)
        lists = await self._retrieve(queries, candidates, filters, trace)
        hits = self._fuse(lists, candidates, trace)
        hits = await self._rerank(query, hits, k, trace)
        hits = hits[:k]
        timer = _Timer()
        result = QueryResult(hits=hits, trace=trace)
        context = result.context
        trace.append({"stage": "context", "name": "join", "ms": timer.ms, "in": len(hits), "out": len(hits), "chars": len(context)})
        return result

    async def _transform(self, query: str, trace: list[dict[str, Any]]) -> list[str]:
        if not self.pattern.has_transform:
            return [query]
        timer = _Timer()
        entry: dict[str, Any] = {"stage": "transform", "name": self.pattern.name, "in": 1}
        try:
            queries = [q for q in await self.pattern.transform(query, self.llm) if isinstance(q, str) and q.strip()]
        except Exception as exc:
            trace.append({**entry, "ms": timer.ms, "out": 0, "error": f"{type(exc).__name__}: {exc}"})
            raise StageError("transform", self.pattern.name, exc) from exc
        queries = queries or [query]
        trace.append({**entry, "ms": timer.ms, "out": len(queries)})
        return queries

    async def _retrieve(
        self, queries: list[str], candidates: int, filters: Filters | None, trace: list[dict[str, Any]]
    ) -> list[tuple[str, list[tuple[Chunk, float]]]]:
        jobs: list[tuple[str, str]] = []
        for retriever in self.pattern.retrievers:
            if retriever == "bm25":
                jobs.append(("bm25", queries[0]))  # BM25 runs the user's words
            else:
                jobs.extend((retriever, q) for q in queries)
        lists: list[tuple[str, list[tuple[Chunk, float]]]] = []
        errors: list[tuple[str, BaseException]] = []
        for position, (retriever, text) in enumerate(jobs):
            timer = _Timer()
            entry: dict[str, Any] = {"stage": "retrieve", "name": retriever, "in": 1}
            if len(queries) > 1 and retriever != "bm25":
                entry["query"] = position
            try:
                if retriever == "vector":
                    ranked = await self._vector_search(text, candidates, filters)
                elif retriever == "bm25":
                    ranked = await self._bm25_search(text, candidates, filters)
                else:
                    raise ValueError(f"unknown retriever {retriever!r} (known: vector, bm25)")
            except MissingExtraError:
                raise  # an installation problem, not a failing retriever
            except Exception as exc:
                logger.warning("retriever %s failed: %s", retriever, exc)
                trace.append({**entry, "ms": timer.ms, "out": 0, "error": f"{type(exc).__name__}: {exc}"})
                errors.append((retriever, exc))
                lists.append((retriever, []))
                continue
            trace.append({**entry, "ms": timer.ms, "out": len(ranked)})
            lists.append((retriever, ranked))
        if errors and len(errors) == len(jobs):
            names = "+".join(dict.fromkeys(name for name, _ in errors))
            raise StageError("retrieve", names, errors[0][1]) from errors[0][1]
        return lists

    async def _vector_search(self, text: str, candidates: int, filters: Filters | None) -> list[tuple[Chunk, float]]:
        native = getattr(self.embedder, "aembed_query", None)
        if native is not None and inspect.iscoroutinefunction(native):
            vector = await native(text)
        else:
            vector = await asyncio.to_thread(self.embedder.embed_query, text)
        ranked = await self.store.search(np.asarray(vector, dtype=np.float32), candidates, filters)
        if self.similarity_threshold is not None:
            ranked = [(c, s) for c, s in ranked if s >= self.similarity_threshold]
        return ranked

    async def _bm25_search(self, text: str, candidates: int, filters: Filters | None) -> list[tuple[Chunk, float]]:
        if self.bm25 is None or len(self.bm25) == 0:
            return []
        scored = self.bm25.search(text, candidates if not filters else max(candidates, len(self.bm25)))
        chunks = {c.id: c for c in await self.store.get([cid for cid, _ in scored])}
        ranked = []
        for cid, score in scored:
            chunk = chunks.get(cid)  # a BM25 entry the vector store no longer has is skipped
            if chunk is not None and matches(chunk.metadata, doc_id_of(chunk), filters):
                ranked.append((chunk, score))
        return ranked[:candidates]

    def _fuse(self, lists: list[tuple[str, list[tuple[Chunk, float]]]], candidates: int, trace: list[dict[str, Any]]) -> list[Hit]:
        chunks: dict[str, Chunk] = {}
        found_by: dict[str, set[str]] = {}
        best: dict[str, dict[str, float]] = {}
        for retriever, ranked in lists:
            for chunk, score in ranked:
                chunks.setdefault(chunk.id, chunk)
                found_by.setdefault(chunk.id, set()).add(retriever)
                scores = best.setdefault(chunk.id, {})
                scores[retriever] = max(score, scores.get(retriever, float("-inf")))

        def hit(cid: str, score: float, extra: dict[str, float]) -> Hit:
            return Hit(chunk=chunks[cid], score=float(score), source="+".join(sorted(found_by[cid])), details={**best[cid], **extra})

        if self.pattern.fusion == "none" and len(lists) == 1:
            return [hit(c.id, s, {}) for c, s in lists[0][1]]
        timer = _Timer()
        id_lists = [[(c.id, s) for c, s in ranked] for _, ranked in lists]
        if self.pattern.fusion == "weighted":
            fused, key = weighted(id_lists, list(self.pattern.weights or [1.0] * len(id_lists))), "fused"
        else:
            fused, key = rrf(id_lists), "rrf"
        fused = fused[:candidates]
        name = "weighted" if key == "fused" else "rrf"
        trace.append({"stage": "fuse", "name": name, "ms": timer.ms, "in": sum(len(x) for x in id_lists), "out": len(fused)})
        return [hit(str(cid), score, {key: float(score)}) for cid, score in fused]

    async def _rerank(self, query: str, hits: list[Hit], k: int, trace: list[dict[str, Any]]) -> list[Hit]:
        if self.reranker is None:
            return hits
        # reranking.top_k when set; else retrieval.top_k, grown to an explicit larger k.
        top_k = self.rerank_top_k if self.rerank_top_k is not None else max(self.top_k, k)
        name = getattr(self.reranker, "name", type(self.reranker).__name__)
        timer = _Timer()
        try:
            arerank = getattr(self.reranker, "arerank", None)
            if arerank is not None and inspect.iscoroutinefunction(arerank):
                reranked = await arerank(query, hits, top_k)
            else:
                reranked = await asyncio.to_thread(self.reranker.rerank, query, hits, top_k)
            reranked = list(reranked)[:top_k]
        except Exception as exc:
            trace.append({"stage": "rerank", "name": name, "ms": timer.ms, "in": len(hits), "out": 0, "error": f"{type(exc).__name__}: {exc}"})
            raise StageError("rerank", name, exc) from exc
        trace.append({"stage": "rerank", "name": name, "ms": timer.ms, "in": len(hits), "out": len(reranked)})
        return reranked

    # ------------------------------------------------ the facade's retriever seam
    async def ingest_source(self, data_source: Any) -> dict[str, int]:
        """Load the files of ``data_source`` (akasha.loaders) and ingest what changed.

        Unchanged files (same bytes as the last call on this pipeline) are skipped;
        a changed file replaces its documents; a file that disappeared from the
        source since the last call has its documents deleted. Unreadable files are
        logged and skipped. Returns counts: files, ingested, unchanged, skipped, removed, chunks.
        """
        import hashlib

        from akasha.errors import LoaderError
        from akasha.loaders import discover, load_file

        paths = await asyncio.to_thread(discover, data_source)
        seen: set[str] = set()
        documents: list[Document] = []
        stale: list[str] = []
        counts = {"files": len(paths), "ingested": 0, "unchanged": 0, "skipped": 0, "removed": 0, "chunks": 0}
        for path in paths:
            key = str(path)
            seen.add(key)
            data = await asyncio.to_thread(Path(path).read_bytes)
            digest = hashlib.sha256(data).hexdigest()
            previous = self._sources.get(key)
            if previous is not None and previous[0] == digest:
                counts["unchanged"] += 1
                continue
            try:
                docs = await asyncio.to_thread(load_file, path, data)
            except LoaderError as exc:
                logger.warning("skipped %s: %s", path, exc.reason)
                counts["skipped"] += 1
                continue
            ids = [document_id(d) for d in docs]
            if previous is not None:
                stale.extend(i for i in previous[1] if i not in ids)
            self._sources[key] = (digest, ids)
            documents.extend(docs)
            counts["ingested"] += 1
        for key in [k for k in self._sources if k not in seen]:
            stale.extend(self._sources.pop(key)[1])
            counts["removed"] += 1
        if documents:
            counts["chunks"] = await self.ingest(documents)
        if stale:
            await self.delete(stale)
        return counts

    async def aretrieve(self, data_source: Any, question: str, k: int = 5) -> list[Hit]:
        """``ingest_source(data_source)`` (when given) then the hits for ``question``: the facade's retriever."""
        if data_source is not None:
            await self.ingest_source(data_source)
        return await self.asearch(question, k)

    def retrieve(self, data_source: Any, question: str, k: int = 5) -> list[Hit]:
        """Synchronous :meth:`aretrieve`."""
        return self._run(self.aretrieve(data_source, question, k))

    def ingest_source_sync(self, data_source: Any) -> dict[str, int]:
        """Synchronous twin of :meth:`ingest_source`."""
        return self._run(self.ingest_source(data_source))

    async def asearch(self, question: str, k: int = 5) -> list[Hit]:
        """The hits of :meth:`query`: lets the pipeline serve as a retriever behind ``RAG``."""
        return (await self.query(question, k=k)).hits

    def search(self, question: str, k: int = 5) -> list[Hit]:
        """Synchronous :meth:`asearch`."""
        return self._run(self.asearch(question, k))

    # --------------------------------------------------------- sync twins
    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        with self._loop_lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=f"akasha-pipeline-{self.name}", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
                # Stop the thread when the pipeline is garbage-collected without close().
                self._finalizer = weakref.finalize(self, loop.call_soon_threadsafe, loop.stop)
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def ingest_sync(self, documents: Iterable[Any]) -> int:
        """Synchronous twin of :meth:`ingest`."""
        return self._run(self.ingest(documents))

    def query_sync(self, query: str, k: int | None = None, *, filters: Filters | None = None) -> QueryResult:
        """Synchronous twin of :meth:`query`."""
        return self._run(self.query(query, k, filters=filters))

    def delete_sync(self, doc_ids: Sequence[str]) -> int:
        """Synchronous twin of :meth:`delete`."""
        return self._run(self.delete(doc_ids))

    async def aclose(self) -> None:
        """Close store connections (pgvector, qdrant)."""
        closer = getattr(self.store, "aclose", None)
        if closer is not None:
            await closer()

    def close(self) -> None:
        """Close store connections and stop the sync twins' event-loop thread."""
        if self._loop is not None and not self._loop.is_closed():
            self._run(self.aclose())
            self._finalizer.detach()
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._loop.close()
            self._loop = None


__all__ = ["Pipeline", "as_document", "check_k", "write_json_atomically"]
