"""CorpusIndex: a data source in, a persistent content-keyed hybrid index out, over any store.

Everything is keyed by content, never by path or mtime: a file by the sha256 of its bytes
plus its extension (:mod:`akasha.index.sources`), its chunks by (file hash, chunk settings),
vectors by (embedder identity, chunk-text sha256). So a touched, copied or renamed file is
never parsed or embedded again, two models never mix vectors, and an edit re-embeds only
the chunks whose text changed.

This class coordinates the sibling modules of :mod:`akasha.index`. An external store
(``vector_store=`` a URL or Store, or ``store="chroma"``) receives every chunk as a plain
record with its vector and the committed corpus state (:mod:`akasha.index.store_link`), so
another machine sharing it embeds nothing. Crash safety is the ingest's order
(:mod:`akasha.index.ingest`); writers hold a file lock, and the store's lock where it has one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from akasha.embeddings.base import Embedder
from akasha.errors import AkashaError, ConfigError, EmptySourceError, IndexMismatchError
from akasha.index.changes import corpus_change, count, documents_change, materialise, portable_previous
from akasha.index.identity import resolve_identity
from akasha.index.ingest import Ingest
from akasha.index.live import LiveCorpus
from akasha.index.local_search import LocalSearch
from akasha.index.lock import IndexLock
from akasha.index.manifest import Manifest
from akasha.index.paths import MEMORY, default_cache_dir, storage_error
from akasha.index.persistence import DOCUMENTS_SOURCE, Persistence, lexical_state, shared_key
from akasha.index.portable import DataSource, check_corpus_name, portable_keys, source_root
from akasha.index.reports import PruneReport, SyncReport
from akasha.index.sources import SourceReader, digest
from akasha.index.store_link import StoreLink
from akasha.index.store_search import STORE_SEARCH_TYPES, StoreSearch
from akasha.metadata import own
from akasha.retrieval.dense import DenseIndex
from akasha.retrieval.search import SearchSettings, SearchType, validate_search_type
from akasha.retrieval.tokenize import earlier_rules_id
from akasha.types import Chunk, Document, Hit

log = logging.getLogger(__name__)

STORES = ("sqlite", "chroma")
#: What an external store object must offer (see akasha.stores.base.Store).
_STORE_METHODS = ("upsert", "remove", "fetch", "vectors_for", "nearest", "ids_of_documents", "load_state",
                  "save_state")
#: Content keys of documents end with this (files end with their extension).
DOCUMENT_SUFFIX = ".doc"


class CorpusIndex:
    """A persistent hybrid (BM25 + dense) index over a data source's files, or over documents.

    ``cache_dir``: ``None`` -> :func:`~akasha.index.paths.default_cache_dir`, ``":memory:"`` -> nothing on disk.
    ``store``: ``"sqlite"`` (the local cache only, default), ``"chroma"`` (also a Chroma collection in
    ``<cache_dir>/chroma``), or a :class:`~akasha.stores.base.Store`.
    ``tokenizer``: BM25 tokenizer name (``"auto"``: jieba's words when rjieba is installed, else bigrams).
    ``lock_timeout``: seconds to wait for another writer before IndexLockError.
    ``vector_store``: a store every machine sharing it uses, as a URL
    (``"chroma://host:port/collection"``, ``"qdrant://host:port/collection"``,
    ``"postgresql://user:pass@host:port/db?table=name"``, see docs/servers.md) or a Store
    object; ``vector_store_options`` go to :func:`akasha.stores.urls.open_store`
    (``token``, ``retry`` ...), except ``server_knn=True``, which answers the dense half of
    searches with the store's ANN index instead of the exact local one.
    ``chunker``: an object with ``split_documents(documents)`` and a ``settings_key``
    string (default: the recursive splitter with ``chunk_size``/``chunk_overlap``).
    ``bm25_file``: a JSON file holding the BM25 index (:mod:`akasha.index.bm25_file`), read now when it
    exists (vectors come with the first dense search), rewritten after every ingestion.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        chunk_size: int = 1000,
        chunk_overlap: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        store: Any = "sqlite",
        tokenizer: str = "auto",
        lock_timeout: float = 600.0,
        search_settings: SearchSettings | None = None,
        vector_store: Any = None,
        vector_store_options: dict[str, Any] | None = None,
        chunker: Any = None,
        bm25_file: str | os.PathLike[str] | None = None,
    ) -> None:
        from akasha.chunking import default_overlap, validate_chunking

        overlap = default_overlap(chunk_size) if chunk_overlap is None else chunk_overlap
        validate_chunking(chunk_size, overlap)
        external_store = None if isinstance(store, str) else _checked_store(store)
        if external_store is None and store not in STORES:
            raise ConfigError(f"unknown index store {store!r}; known: {', '.join(STORES)}, or a Store object")
        if chunker is not None and not (hasattr(chunker, "split_documents") and isinstance(
                getattr(chunker, "settings_key", None), str)):
            raise ConfigError("chunker needs split_documents(documents) and a settings_key string naming its "
                              "settings (chunks are cached under it)")
        options = dict(vector_store_options or {})
        self.corpus = check_corpus_name(options.pop("corpus", None))
        self.vector_store: str | None = None
        self._embedder = embedder
        self.chunk_size = chunk_size
        self.chunk_overlap = overlap
        self.chunker = chunker
        self.settings_key = chunker.settings_key if chunker is not None else f"recursive-v1:{chunk_size}:{overlap}"
        self.search_settings = search_settings or SearchSettings()
        self.lock_timeout = lock_timeout
        self.store = store if external_store is None else "external"
        self._live = LiveCorpus(tokenizer)
        self._root: Path | None = None  # the folder the current sync's keys are relative to
        self._machine_paths: list[str] = []  # this sync's files as absolute paths (see _rebuild)
        self._passages_noted = False  # _note_missing_passages said its piece
        self._store_behind = False  # the external store lacks records of the in-memory corpus
        self._reading_lexical = False  # a lexical sync is reading: the embedder is not warmed up
        self._link: StoreLink | None = None  # the external store, when there is one (set below)
        if cache_dir is not None and str(cache_dir) == MEMORY:
            self.cache_dir: Path | None = None
            self._manifest = Manifest(MEMORY)
        else:
            self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
            try:
                self.cache_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # read-only file system, or a file where the folder should be
                raise storage_error(self.cache_dir, exc) from exc
            with self._write_lock():
                self._manifest = Manifest(str(self.cache_dir / "index.sqlite3"))
        self._sources = SourceReader(self._manifest, self.settings_key, self._split,  # hints: see SourceReader
                                     self._prepare_embedder)
        try:
            if isinstance(vector_store, str):
                from akasha.stores.urls import open_store

                external_store = open_store(vector_store, **options)
            elif vector_store is not None:  # a Store object the caller built (memory, faiss, qdrant, ...)
                external_store = _checked_store(vector_store)
            if external_store is not None:
                self.vector_store = str(getattr(external_store, "name", type(external_store).__name__))
            elif store == "chroma":  # plain records beside the cache, which any Chroma tool reads
                from akasha.stores.chroma import ChromaStore

                # the collection name earlier releases used (their collections are reused)
                settings = sorted({"chunk_size": chunk_size, "chunk_overlap": overlap}.items())
                name = "akasha-" + hashlib.sha256(f"{embedder.name}|{settings}".encode()).hexdigest()[:16]
                where = self.cache_dir / "chroma" if self.cache_dir is not None else None
                external_store = ChromaStore(name, path=where, create=True)  # the index checks whose vectors it holds
        except BaseException:
            self._manifest.close()
            if external_store is not None and isinstance(vector_store, str):
                external_store.close()
            raise
        self._external = external_store
        self._identity: tuple[str, str] | None = None  # (embedder identity, namespace), resolved on first use
        self._identity_lock = threading.Lock()
        if external_store is not None:
            if getattr(external_store, "lexical_tokenizer", None) == "auto":  # a new table: our terms
                external_store.lexical_tokenizer = self._live.bm25.tokenizer_id
            self._link = StoreLink(external_store, lambda: self.embedder_id, lambda: self.namespace, self.corpus)
        self._owns_store = isinstance(vector_store, str) or (vector_store is None and store == "chroma")
        self._ingest = Ingest(self._live, self._manifest, lambda: self.embedder, lambda: self.embedder_id, self._link,
                              lambda: self.search_settings)
        self._persist = Persistence(self._live, self._manifest, self.cache_dir, self._link, embedder.name,
                                    lambda: self.namespace, self.corpus)
        self._live.on_rollback = self._persist.commit_before_rollback
        self._store_search = StoreSearch(self._link, lambda: self.embedder, lambda: self.search_settings, self.corpus,
                                         self._live.bm25.tokenizer_id)
        self._local = LocalSearch(self._live, lambda: self.embedder, lambda: self.search_settings, self._manifest)
        embed_with = getattr(chunker, "embed_with", None)
        if embed_with is not None:  # a splitter that embeds (semantic) does so through the cache
            embed_with(self._ingest.embed_for_split)
        if bm25_file is not None:
            try:
                self._persist.read_bm25_file(Path(bm25_file), self.settings_key, tokenizer)
            except BaseException:
                self.close()
                raise

    @property
    def embedder(self) -> Embedder:
        """The embedder of chunks and questions; assigning another one (same vectors, say a retrying
        client) takes effect at the next ingest or search."""
        return self._embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        self._embedder = embedder

    @property
    def embedder_id(self) -> str:
        """What this embedder's vectors are (model name + probe fingerprint, :mod:`akasha.embeddings.identity`):
        the key of every cached vector. Resolved on first use (it may embed three probe texts and read the
        store), never while the index is built."""
        return self._resolved()[0]

    @property
    def namespace(self) -> str:
        """The embedder identity, chunk settings and tokenizer: what a committed corpus state belongs to."""
        return self._resolved()[1]

    def _resolved(self) -> tuple[str, str]:
        if self._identity is None:
            with self._identity_lock:
                if self._identity is None:
                    identity, registry = resolve_identity(self.embedder, self._manifest, self._external)
                    if registry is not None:
                        self._persist.shared_registry = registry
                    tokenizer_id = self._live.bm25.tokenizer_id
                    namespace = f"{identity}|{self.settings_key}|{tokenizer_id}"
                    earlier = earlier_rules_id(tokenizer_id)
                    if earlier is not None and self._manifest.adopt_namespace(
                            f"{identity}|{self.settings_key}|{earlier}", namespace):
                        log.info("the lexical rules changed (%s): the committed corpora keep their chunks and "
                                 "vectors, and their terms are rebuilt from the stored texts", tokenizer_id)
                    self._identity = (identity, namespace)
        return self._identity

    # ---------------------------------------------------------------- public
    @property
    def chunks(self) -> list[Chunk]:
        """The chunks of the current corpus, in file order."""
        return list(self._live.chunks.values())

    @property
    def files(self) -> dict[str, str]:
        """path -> content key of every indexed file."""
        return dict(self._live.files)

    def __len__(self) -> int:
        return len(self._live.chunks)

    def close(self) -> None:
        """Commit what :meth:`flush` holds, then release the database connection, and the store
        connection when the index opened it (a URL)."""
        try:
            self.flush()
        except Exception:  # closing must not raise over a failed last commit; the data is in the cache
            log.warning("could not commit the last documents while closing the index", exc_info=True)
        self._manifest.close()
        if self._link is not None and self._owns_store:
            self._link.store.close()

    def __enter__(self) -> CorpusIndex:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def search(self, query: str, k: int = 5, search_type: SearchType = "auto") -> list[Hit]:
        """Rank the corpus's chunks for ``query`` (run :meth:`sync` first, or have committed a corpus before:
        a new process, or one whose last ingest failed, searches the last committed corpus)."""
        search_type = validate_search_type(search_type)
        live = self._live
        if search_type in STORE_SEARCH_TYPES and self._store_search.answers(str(search_type)):
            if live.state_key is None:
                self._store_search.check_holds_records()
            return self._store_search.search(query, k, search_type)
        if live.state_key is None and self.searches_store:
            raise ConfigError(f"search_type {search_type!r} ranks in this process over every vector, and a query "
                              f"worker holds none: over a server store use one of {', '.join(STORE_SEARCH_TYPES)}, "
                              "or pass the data_source folder so that it is indexed here")
        if live.state_key is None and not self.restore():
            raise AkashaError("the index is empty: call sync(data_source) before search()")
        if search_type != "bm25":
            self._ensure_dense()
        return self._local.search(query, k, search_type)

    @property
    def searches_store(self) -> bool:
        """True when searches run in the external store's engine (its ``query`` verb), not in this process:
        the store answers both the dense and the lexical side (``capabilities``)."""
        return self._store_search.answers("both")

    def hub_scores(self, ids: Sequence[str]) -> np.ndarray | None:
        """The hub scores ``auto`` discounts dense candidates by, or None (:meth:`LocalSearch.hub_scores`)."""
        return self._local.hub_scores(ids)

    def passage_scores(self, ids: Sequence[str], query_vector: np.ndarray) -> np.ndarray | None:
        """Each of ``ids``' best passage cosine with ``query_vector``, or None (:meth:`LocalSearch.passage_scores`)."""
        return self._local.passage_scores(ids, query_vector)

    def holds_alone(self, question: str, chunk_id: str) -> bool:
        """Whether ``chunk_id`` alone holds an exact term of ``question`` (:meth:`LocalSearch.holds_alone`)."""
        return self._local.holds_alone(question, chunk_id)

    def dense_reads(self, question: str) -> bool | None:
        """Whether the embedder reads ``question``'s language, the verdict in use (:meth:`LocalSearch.dense_reads`)."""
        return self._local.dense_reads(question)

    def sync(self, data_source: DataSource, *, progress: bool | None = False, lexical: bool = False) -> SyncReport:
        """Bring the index in line with the files of ``data_source``; embed only what is new.

        ``lexical=True`` (a ``bm25`` search) builds BM25 but embeds nothing and never builds the
        embedder: the vectors come (from the cache where it has them) with the first search that
        needs them. Ignored with an external store, which receives every chunk with its vector.
        ``progress=True`` shows ``tqdm.auto`` bars for reading and embedding; ``None`` (``RAG``'s)
        only for long work (:data:`akasha.index.sources.LONG_FILES`, :data:`akasha.index.ingest.LONG_TEXTS`).
        Raises SourceNotFoundError for a path that does not exist, EmptySourceError when nothing
        readable is found.
        """
        from akasha.loaders import discover

        started = time.perf_counter()
        exclude = [self.cache_dir] if self.cache_dir is not None else []
        paths = discover(data_source, exclude=exclude)
        self._ingest.progress = progress
        with self._write_lock():
            self._reading_lexical = lexical and self._link is None
            try:
                report = self._sync_locked(data_source, paths, progress)
            finally:
                self._reading_lexical = False
            self._persist.write_bm25_file(self.settings_key)
        report.seconds = time.perf_counter() - started
        return report

    def add_documents(self, documents: Iterable[Document]) -> SyncReport:
        """Index in-memory documents (a YAML pipeline's ``ingest``), keyed by ``Document.id`` or text hash.

        A document whose id was indexed before replaces its earlier version's chunks; the others stay.
        Content-keyed like files: the same text and metadata is never chunked or embedded again. The
        documents form their own corpus: a later :meth:`sync` of a data source replaces it (and vice versa).
        """
        from akasha.chunking import document_id

        started = time.perf_counter()
        wanted: dict[str, Document] = {}
        for document in documents:
            key = self._corpus_key(document_id(document))
            if key in wanted:
                log.warning("document %r appears twice in one call; the last one wins", key)
            wanted[key] = document
        report = SyncReport()
        with self._write_lock():
            contents = {key: digest(json.dumps([doc.text, doc.metadata], ensure_ascii=False, sort_keys=True,
                                               default=str)) + DOCUMENT_SUFFIX for key, doc in wanted.items()}
            parsed = self._manifest.parsed_status_of(self.settings_key, list(contents.values()))
            upserts: dict[str, str] = {}
            for key, content in contents.items():
                status = parsed.get(content) or self._sources.parse_document(key, content, wanted[key])
                parsed[content] = status
                if status[0] != "ok":
                    self._sources.skip(report, key, status[1] or "no text")
                    continue
                upserts[key] = content
            if self._documents_in_memory():
                self._apply_documents(upserts, (), report)
            else:
                files = self._documents_corpus()
                files.update(upserts)
                self._apply(DOCUMENTS_SOURCE, files, report)
            counts = self._live.doc_chunk_ids()
            report.written = sum(len(counts.get(key, ())) for key in upserts)
            self._persist.write_bm25_file(self.settings_key)
        report.seconds = time.perf_counter() - started
        return report

    def delete_documents(self, doc_ids: Sequence[str]) -> int:
        """Remove documents added with :meth:`add_documents`; returns how many chunks went."""
        with self._write_lock():
            if not self._documents_in_memory():
                self._apply(DOCUMENTS_SOURCE, self._documents_corpus(), SyncReport())
            gone = [d for d in dict.fromkeys(self._corpus_key(str(i)) for i in doc_ids) if d in self._live.files]
            if not gone:
                return 0
            before = len(self._live.chunks)
            self._apply_documents({}, gone, SyncReport())
            self._persist.write_bm25_file(self.settings_key)
            return before - len(self._live.chunks)

    def _documents_in_memory(self) -> bool:
        """Whether the documents corpus is in memory, complete, with its vectors and in the store."""
        live = self._live
        return live.source == DOCUMENTS_SOURCE and not self._store_behind and not live.lexical_only

    def _apply_documents(self, upserts: Mapping[str, str], removals: Sequence[str], report: SyncReport) -> None:
        """Apply a few documents' changes in memory, at a cost that grows with the change, not the corpus,
        through :meth:`Ingest.run`; the manifest row and store state are committed in batches (:meth:`flush`)."""
        live = self._live
        change = documents_change(live, upserts, removals, self._manifest, self.settings_key)
        report.unchanged, report.indexed = len(upserts) - len(change.files), len(change.files)
        report.removed = len(removals)
        if change.files or removals:
            state_key = digest(json.dumps([live.state_key, sorted(change.files.items()), sorted(removals)]))
            self._ingest.run(change, report, state_key, DOCUMENTS_SOURCE, to_store=change.added,
                             touched=[*change.files, *removals])
            self._persist.documents_changed(len(change.files) + len(removals))
        report.chunks = len(live.chunks)

    def flush(self) -> None:
        """Commit documents added or deleted since the last commit (``close()`` does it too); small ingests
        commit in batches (:meth:`Persistence.documents_changed`). Uncommitted documents are searchable here,
        cached and in the store: a crash only means they are ingested again, embedding nothing."""
        if self._persist.pending:
            with self._write_lock():
                self._persist.commit_documents()

    def _documents_corpus(self) -> dict[str, str]:
        """The documents corpus to update: the one in memory, else the last committed one (here, or in the
        shared store when this cache never held it: a new process must not drop what others ingested)."""
        if self._live.source == DOCUMENTS_SOURCE:
            return dict(self._live.files)
        committed = self._manifest.corpus(DOCUMENTS_SOURCE, self.namespace)
        if committed is not None:
            return dict(committed[1])
        key = shared_key(DOCUMENTS_SOURCE, self.corpus)
        stored = self._link.load_state(key) if self._link is not None else None
        return dict(stored[1]) if stored is not None else {}

    def load_store(self) -> SyncReport:
        """Serve every record already in the attached store (chromadb, LangChain, another akasha) as the
        corpus, embedding nothing: BM25 from the stored texts, the dense side from the stored vectors.

        Raises ConfigError without a store, IndexMismatchError when the vectors' width differs
        from the embedder's, EmptySourceError for an empty store.
        """
        if self._link is None:
            raise ConfigError("load_store() needs CorpusIndex(..., store=<a Store>) or vector_store=")
        started = time.perf_counter()
        chunks, matrix = self._link.records_of(None)
        if not chunks:
            raise EmptySourceError(f"the store {self._link.name} holds no records to search")
        width = getattr(self.embedder, "dimension", None)
        if isinstance(width, int) and width > 0 and matrix.shape[1] != width:
            raise IndexMismatchError(f"the store {self._link.name} holds {matrix.shape[1]}-dimensional vectors; "
                                     f"{self.embedder_id!r} makes {width}-dimensional ones: use the embeddings "
                                     "the collection was built with")
        files = {str(own(c.metadata, "source") or c.doc_id): str(own(c.metadata, "content_hash", "")) for c in chunks}
        self._live.serve(chunks, matrix, files, "store:" + digest(json.dumps(sorted(c.id for c in chunks))), "store")
        report = SyncReport(unchanged=len(files), chunks=len(chunks))
        report.seconds = time.perf_counter() - started
        return report

    def restore(self) -> bool:
        """Load the corpus this index committed last (a new process querying before it ingests), embedding
        nothing; False when nothing was ever committed in this cache for this embedder and chunk settings."""
        if self._live.state_key is not None:
            return True
        source_key = self._manifest.last_source(self.namespace)
        committed = self._manifest.corpus(source_key, self.namespace) if source_key else None
        if committed is None or not source_key:  # (no source key means nothing committed)
            if self.searches_store:  # a query worker: the store answers, nothing is loaded here
                self._store_search.check_holds_records()
                return True
            return self._persist.restore_from_store()
        files = dict(committed[1])
        if files and all(os.path.isabs(p) for p in files):  # committed by a release that keyed files by path
            self._root = Path(os.path.commonpath([os.path.dirname(p) for p in files]))
            files = dict(portable_previous(files, self._root, self.corpus))
        with self._write_lock():
            if self._live.state_key is None:
                self._apply(source_key, files, SyncReport())
        return self._live.state_key is not None

    def vector_search(self, query: str | np.ndarray, k: int, filters: Mapping[str, Any] | None = None, *,
                      passages: bool = False) -> list[tuple[Chunk, float]]:
        """The ``k`` chunks most cosine-similar to ``query`` (a question or its vector), best first.

        ``filters`` keeps chunks whose metadata equals every given value (``doc_id`` is the document
        id). ``passages=True`` ranks as ``auto``'s dense list does when every chunk has passage vectors:
        the best candidates re-scored by the better of their chunk and best passage cosine
        (:func:`akasha.retrieval.passages.rescore`).
        """
        if k <= 0 or not self.restore():
            return []
        self._ensure_dense()
        if self._store_search.answers("knn") and not passages:
            return self._store_search.pairs(query, k, "knn", filters)
        return self._local.pairs(query, k, "knn", filters, passages=passages)

    def bm25_search(self, query: str, k: int, filters: Mapping[str, Any] | None = None) -> list[tuple[Chunk, float]]:
        """The ``k`` best BM25 matches for ``query``, best first (``filters`` as in :meth:`vector_search`)."""
        if k <= 0 or not self.restore():
            return []
        engine = self._store_search if self._store_search.answers("bm25") else self._local
        return engine.pairs(query, k, "bm25", filters)

    def prune(self, *, vacuum: bool = True) -> PruneReport:
        """Forget the history no committed corpus needs, so the cache stops growing with every edit.

        An index keeps every file version's chunks and vectors, so undoing an edit embeds nothing.
        ``prune`` drops what no corpus in this cache folder was last committed with (any source,
        embedder or chunk settings; :meth:`Manifest.prune`) and unused snapshots; ``vacuum=True``
        gives the space back. Takes the write lock. An external store needs none: every sync
        already removes the records of edited and deleted files.
        """
        report = PruneReport()
        with self._write_lock():
            report.bytes_before = self._persist.database_bytes()
            counts = self._manifest.prune(os.path.lexists)
            for name, value in counts.items():
                setattr(report, name, value)
            if self.cache_dir is not None:
                before = len(list((self.cache_dir / "snapshots").glob("*")))
                self._persist.drop_stale_snapshots()
                report.snapshots = before - len(list((self.cache_dir / "snapshots").glob("*")))
            if vacuum:
                self._manifest.vacuum()
            report.bytes_after = self._persist.database_bytes()
        log.info("pruned %s", report)
        return report

    # -------------------------------------------------------------- internals
    @contextlib.contextmanager
    def _write_lock(self) -> Iterator[None]:
        """This machine's cache folder lock, then (writers on every machine sharing it) the store's."""
        local: Any = contextlib.nullcontext()
        if self.cache_dir is not None:
            local = IndexLock(self.cache_dir / "index.lock", self.lock_timeout)
        shared = self._link.store.lock(self.lock_timeout) if self._link is not None else contextlib.nullcontext()
        with local, shared:
            yield

    def _sync_locked(self, data_source: DataSource, paths: list[Path], progress: bool | None) -> SyncReport:
        report = SyncReport()
        files = self._sources.read(paths, progress, report)
        if not files:
            detail = "; ".join(f"{p}: {r}" for p, r in report.skipped_files[:5])
            raise EmptySourceError(
                f"data_source {_describe(data_source)} yields no text"
                + (f" (unreadable files: {detail})" if detail else " (no supported files found)")
                + "; point it at .txt, .md, .pdf, .docx, .csv or .html files with text in them"
            )
        self._root = source_root(data_source)
        self._machine_paths = list(files)  # an earlier release keyed store records by these: replaced when seen
        keys = portable_keys(list(files), data_source, self.corpus)
        files = {keys[path]: content for path, content in files.items()}
        source_key = digest(json.dumps(sorted(_describe_each(data_source))))
        if self._reading_lexical:
            self._apply_lexical(source_key, files, report)
            return report
        self._apply(source_key, files, report)
        self._note_missing_passages()
        return report

    def _prepare_embedder(self, size: int) -> None:
        """The embedder's ``prepare_documents(size)`` hint (see SourceReader), except while a lexical sync reads."""
        if self._reading_lexical:
            return
        prepare = getattr(self.embedder, "prepare_documents", None)
        if prepare is not None:
            prepare(size)

    def _apply_lexical(self, source_key: str, files: dict[str, str], report: SyncReport) -> None:
        """Make ``files`` the corpus in memory for BM25 alone: chunks from the manifest, no vectors, no commit,
        no embedder (not even its identity); :meth:`_ensure_dense` adds the vectors when a search needs them."""
        self._persist.commit_documents()
        live = self._live
        if live.state_key is not None and live.source == source_key and live.files == files:
            report.unchanged, report.chunks = len(files), len(live.chunks)
            return
        count(report, live.files if live.source == source_key else {}, files)
        change = corpus_change(live, files, self._manifest, self.settings_key)
        self._ingest.run(change, report, lexical_state(files), source_key, lexical=True)
        live.committed = None
        report.chunks = len(live.chunks)

    def _ensure_dense(self) -> None:
        """Give a lexical-only corpus (see :meth:`_apply_lexical`) its vectors and commit it: cached vectors
        are reused, only the missing ones are embedded. Builds the embedder if it was not yet."""
        live = self._live
        if not live.lexical_only:
            return
        with self._write_lock():
            if not live.lexical_only:
                return
            chunks = list(live.chunks.values())
            report = SyncReport()
            vectors = self._ingest.vectors_for(chunks, report)
            dense = DenseIndex()
            if chunks:
                dense.add([c.id for c in chunks], np.stack([vectors[own(c.metadata, "content_hash")] for c in chunks]),
                          self._ingest.passages_for(chunks))
            files = dict(live.files)
            if self._link is not None:  # a store emptied by a restart (memory, faiss) receives the records again
                self._link.publish(chunks, vectors, sorted(files), keep=set(live.chunks))
            state_key = digest(json.dumps([self.namespace, list(files.items())], ensure_ascii=False))
            if self._persist.bm25_written == live.state_key:  # same chunks: the BM25 file needs no rewrite
                self._persist.bm25_written = state_key
            live.dense, live.state_key, live.lexical_only = dense, state_key, False
            if live.source is not None:
                self._persist.commit(live.source, state_key, files)
            log.info("embedded %d texts for the first dense search over a corpus indexed for BM25 only",
                     report.embedded)

    def _note_missing_passages(self) -> None:
        """Say once (INFO) that ``auto`` ranks without passage vectors because only some chunks have them."""
        dense = self._live.dense
        have, live = dense.passage_rows(), len(dense)
        if self._passages_noted or not have or have == live:
            return
        self._passages_noted = True
        log.info("%d of %d chunks in this index have no passage vectors (embedded by an earlier akasha, or read "
                 "from a shared store), so auto ranks by chunk vectors alone; a new cache folder embeds them "
                 "with passages", live - have, live)

    def _apply(self, source_key: str, files: dict[str, str], report: SyncReport) -> None:
        """Make ``files`` (path -> content key) the current corpus of ``source_key`` and commit it: a new
        process loads the last committed structures first; only what no cache holds is embedded."""
        self._persist.commit_documents()  # documents waiting for their commit are committed before the corpus moves on
        live = self._live
        if live.lexical_only:  # a full sync starts as a new process would (a committed snapshot is reused)
            live.reset()
        state_key = digest(json.dumps([self.namespace, list(files.items())], ensure_ascii=False))
        if (state_key == live.state_key and source_key == live.source and not self._store_behind
                and live.committed == (source_key, state_key)):
            # already committed here and in the store: an unchanged folder costs no database or store round trip
            report.unchanged, report.chunks = len(files), len(live.chunks)
            return
        fresh_process = live.state_key is None
        previous = live.files
        committed = self._manifest.corpus(source_key, self.namespace)
        stored = legacy = None
        if self._link is not None:
            key = shared_key(source_key, self.corpus)
            stored = self._link.load_state(key)
            if stored is None and key != source_key:
                # an earlier release keyed records by this machine's paths: replaced by portable ones, vectors reused
                legacy = self._link.load_state(source_key)
        if fresh_process and committed is not None:
            previous = committed[1]
        elif fresh_process and stored is not None:
            previous = stored[1]  # another machine committed this corpus into the shared store
        count(report, portable_previous(previous, self._root, self.corpus), files)
        if fresh_process and committed is not None and committed[2]:
            # a new process starts from the last committed structures: only the difference is applied below
            last = committed[1]
            if self._persist.load_snapshot(committed[2], committed[0], last, lambda: materialise(
                    live, last, self._manifest, self.settings_key)[0]):
                live.committed = (source_key, committed[0])
        store_files = None
        if self._link is not None:
            store_files = stored[1] if stored is not None else (legacy[1] if legacy is not None else {})
            # a store that holds anything else than this process's corpus (a new store, another machine's
            # commit) is written in full
            if not (stored is not None and stored[0] == live.state_key and stored[1] == live.files):
                self._store_behind = True
        if state_key != live.state_key or self._store_behind:
            self._rebuild(source_key, state_key, files, report, store_files)
        live.source = source_key
        if live.committed != (source_key, state_key) or (self._link is not None and (
                stored is None or stored[0] != state_key)):
            self._persist.commit(source_key, state_key, files)
        report.chunks = len(live.chunks)

    def _rebuild(self, source_key: str, state_key: str, files: dict[str, str], report: SyncReport,
                 stored_before: Mapping[str, str] | None = None) -> None:
        """Make ``files`` the corpus in memory through the one ingest path: embeds first, swaps state last.

        ``stored_before``: the corpus the external store last committed for this source; the
        records of its files no longer in ``files`` are removed from the store.
        """
        change = corpus_change(self._live, files, self._manifest, self.settings_key)
        to_store: list[Chunk] = []
        touched: set[str] = set()
        if self._link is not None:
            before = dict(stored_before or {})
            if self._store_behind:  # the store lags this process's corpus: write every chunk it lacks
                to_store = list(change.chunks.values())
            else:
                changed = {p for p, h in files.items() if before.get(p) != h}
                to_store = [c for c in change.chunks.values() if c.doc_id in changed]
            touched = {c.doc_id for c in to_store} | {p for p in before if p not in files}
            if to_store and len(to_store) == len(change.chunks):  # writing the whole corpus: also drop the records
                touched |= set(self._machine_paths)  # an earlier release keyed by this machine's paths
        self._ingest.run(change, report, state_key, source_key, to_store=to_store, touched=touched)
        self._store_behind = False

    def _corpus_key(self, doc_id: str) -> str:
        """A document id as this index keys it: ``<corpus>/<id>`` when the index has a corpus name."""
        return f"{self.corpus}/{doc_id}" if self.corpus else doc_id

    def _split(self, documents: list[Document]) -> list[Chunk]:
        """Chunk loaded documents with the index's chunker (the recursive splitter unless one was given)."""
        if self.chunker is not None:
            return list(self.chunker.split_documents(documents))
        from akasha.chunking import chunk_documents

        return chunk_documents(documents, chunk_size=self.chunk_size, overlap=self.chunk_overlap)


def _checked_store(store: Any) -> Any:
    """``store`` if it offers the Store contract, else ConfigError saying what to pass."""
    if not all(callable(getattr(store, m, None)) for m in _STORE_METHODS):
        raise ConfigError(f"store {store!r} is not an akasha Store (needs {', '.join(_STORE_METHODS)}); "
                          f"pass one of {', '.join(STORES)}, a vector_store URL, or an object from akasha.stores")
    return store


def _describe_each(data_source: DataSource) -> list[str]:
    items = [data_source] if isinstance(data_source, (str, os.PathLike)) else list(data_source)
    return [str(Path(os.fspath(p)).expanduser().resolve()) for p in items]


def _describe(data_source: DataSource) -> str:
    items = _describe_each(data_source)
    return repr(items[0]) if len(items) == 1 else repr(items)
