"""CorpusIndex: a data source in, a persistent content-keyed hybrid index out, over any store.

Everything is keyed by content, never by path or mtime:

* a file is identified by the sha256 of its bytes (plus its extension, which
  picks the loader); reading, hashing and parsing live in :mod:`akasha.index.sources`;
* its chunks are stored per (file hash, chunk settings), so a touched, copied
  or renamed file is never parsed or embedded again;
* vectors are stored per (embedder name, chunk-text sha256), so two models
  never mix vectors and an edited file re-embeds only the chunks whose text changed.

The local cache is SQLite (see :mod:`akasha.index.manifest` for why) plus a
snapshot of the search structures per corpus state, so a new process on an
unchanged corpus reloads without re-tokenising or embedding anything. An
external store (``vector_store=`` a URL or an :mod:`akasha.stores` object, or
``store="chroma"``) receives every chunk as a plain record with its vector and
the committed corpus state, through :mod:`akasha.index.store_link`; another
machine sharing it embeds nothing.

Crash safety: embeddings are committed to the local cache in batches of
``embedder.batch_size``; the store, the in-memory search structures and the
committed corpus state are replaced only after every vector is available, so
an exception part way (say the provider fails on file 7 of 10) leaves the
previous state usable and the next call resumes from the committed vectors.
Writers hold a file lock, and the store's lock where it has one.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from akasha.background import Background
from akasha.embeddings.base import Embedder, as_matrix
from akasha.errors import AkashaError, EmptySourceError
from akasha.index.bm25_file import read_bm25_file, write_bm25_file
from akasha.index.lazy_chunks import LazyChunks
from akasha.index.lock import IndexLock
from akasha.index.manifest import Manifest
from akasha.index.paths import MEMORY, default_cache_dir, storage_error
from akasha.index.portable import check_corpus_name, portable_keys, source_root
from akasha.index.snapshot import SUFFIX as SNAPSHOT_SUFFIX
from akasha.index.snapshot import is_own_file as is_own_snapshot_file
from akasha.index.snapshot import read_snapshot, write_snapshot
from akasha.index.sources import SourceReader, digest
from akasha.index.store_link import StoreLink
from akasha.metadata import chunk_metadata, drop_own, own, put_own
from akasha.retrieval.bm25 import ADD_BATCH as BM25_BATCH
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex
from akasha.retrieval.fusion import CJK_SHARE, cjk_share
from akasha.retrieval.passages import rescore as rescore_passages
from akasha.retrieval.reading import reads_question
from akasha.retrieval.search import SearchSettings, SearchType, search, validate_search_type
from akasha.retrieval.tokenize import earlier_rules_id
from akasha.types import Chunk, Document, Hit

log = logging.getLogger(__name__)

DataSource = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
STORES = ("sqlite", "chroma")
#: The search types an external store's engine answers (mmr and callables rank in this process).
STORE_SEARCH_TYPES = ("auto", "hybrid", "knn", "bm25")
#: What an external store object must offer (see akasha.stores.base.Store).
_STORE_METHODS = ("upsert", "remove", "fetch", "vectors_for", "nearest", "ids_of_documents", "load_state",
                  "save_state")
#: With ``progress=None``, the embedding bar appears when a sync embeds more texts than this
#: (the file bar's threshold is :data:`akasha.index.sources.LONG_FILES`).
LONG_TEXTS = 500
#: add_documents commits once 1/COMMIT_SHARE of the corpus, COMMIT_EVERY documents or COMMIT_SECONDS passed.
COMMIT_SHARE = 20
COMMIT_EVERY = 500
COMMIT_SECONDS = 2.0
#: The source key of the corpus built by :meth:`CorpusIndex.add_documents`.
DOCUMENTS_SOURCE = "documents"
#: Content keys of documents end with this (files end with their extension).
DOCUMENT_SUFFIX = ".doc"


@dataclass
class SyncReport:
    """What one :meth:`CorpusIndex.sync` did.

    ``indexed`` files whose chunks entered the index (new, edited, renamed or
    copied), ``unchanged`` files already indexed at the same path with the same
    content, ``skipped`` files that could not be read (``skipped_files`` lists
    ``(path, reason)``), ``removed`` files gone since the last sync, ``embedded``
    texts sent to the embedder, ``chunks`` in the index now; for
    :meth:`CorpusIndex.add_documents`, ``written`` chunks the given documents have.
    """

    indexed: int = 0
    unchanged: int = 0
    skipped: int = 0
    removed: int = 0
    embedded: int = 0
    skipped_files: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    seconds: float = 0.0
    written: int = 0


@dataclass
class PruneReport:
    """What one :meth:`CorpusIndex.prune` removed, and the database size before and after (bytes)."""

    file_versions: int = 0
    chunks: int = 0
    vectors: int = 0
    stat_rows: int = 0
    snapshots: int = 0
    bytes_before: int = 0
    bytes_after: int = 0


class CorpusIndex:
    """A persistent hybrid (BM25 + dense) index over a data source's files, or over documents.

    ``cache_dir``: ``None`` -> :func:`~akasha.index.paths.default_cache_dir`,
    ``":memory:"`` -> nothing written to disk (tests, notebooks).
    ``store``: ``"sqlite"`` (the local cache only, default), ``"chroma"`` (also a
    Chroma collection in ``<cache_dir>/chroma``), or a :class:`~akasha.stores.base.Store`.
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
    ``bm25_file``: a JSON file holding the BM25 index (:mod:`akasha.index.bm25_file`), read now
    when it exists (BM25 answers at once; vectors come with the first dense search) and
    rewritten after every ingestion.
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
            from akasha.errors import ConfigError

            raise ConfigError(f"unknown index store {store!r}; known: {', '.join(STORES)}, or a Store object")
        if chunker is not None and not (hasattr(chunker, "split_documents") and isinstance(
                getattr(chunker, "settings_key", None), str)):
            from akasha.errors import ConfigError

            raise ConfigError("chunker needs split_documents(documents) and a settings_key string naming its "
                              "settings (chunks are cached under it)")
        options = dict(vector_store_options or {})
        self.corpus = check_corpus_name(options.pop("corpus", None))
        self.vector_store: str | None = None
        self.embedder = embedder
        self.chunk_size = chunk_size
        self.chunk_overlap = overlap
        self.chunker = chunker
        self.settings_key = chunker.settings_key if chunker is not None else f"recursive-v1:{chunk_size}:{overlap}"
        self.search_settings = search_settings or SearchSettings()
        self.lock_timeout = lock_timeout
        self.store = store if external_store is None else "external"
        self._tokenizer = tokenizer
        self._bm25 = BM25Index(tokenizer=tokenizer)
        self._dense = DenseIndex()
        self._chunks: Mapping[str, Chunk] = {}
        self._files: dict[str, str] = {}
        self._state_key: str | None = None  # the corpus state held in memory
        self._committed: tuple[str, str] | None = None  # (source, state) last persisted by this instance
        self._source: str | None = None  # the source key of the corpus in memory
        self._store_checked = False  # a query worker found records in the external store
        self._shared_registry: dict[str, Any] | None = None  # identities to save into the store at its next commit
        self._root: Path | None = None  # the folder the current sync's keys are relative to
        self._machine_paths: list[str] = []  # this sync's files as absolute paths (see _rebuild)
        self._passages_noted = False  # _note_missing_passages said its piece
        self._by_doc: tuple[Mapping[str, Chunk], dict[str, list[str]]] | None = None  # see _doc_chunk_ids
        self._since_snapshot = 0  # documents changed since the last snapshot was written
        self._pending = 0  # documents changed since the last commit (see flush)
        self._last_commit = time.monotonic()
        self._link: StoreLink | None = None  # the external store, when there is one (set below)
        #: (tokenizer id, function) of the linked store's lexical terms, resolved once (see _store_tokenize)
        self._store_tokenizer: tuple[str, Callable[[str], list[str]]] | None = None
        self._store_behind = False  # the external store lacks records of the in-memory corpus
        self._progress: bool | None = False  # the current sync's progress setting
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
        self._lexical_only = False  # the corpus in memory has BM25 but no vectors yet (see sync(lexical=True))
        self._reading_lexical = False  # a lexical sync is reading: the embedder is not warmed up
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
            elif store == "chroma":
                from akasha.index.mirror import mirror_collection

                external_store = mirror_collection(self.cache_dir, embedder.name, chunk_size, overlap)
        except BaseException:
            self._manifest.close()
            if external_store is not None and isinstance(vector_store, str):
                external_store.close()
            raise
        embed_with = getattr(chunker, "embed_with", None)
        if embed_with is not None:  # a splitter that embeds (semantic) does so through the cache
            embed_with(self._embed_for_split)
        self._external = external_store
        self._identity: tuple[str, str] | None = None  # (embedder identity, namespace), resolved on first use
        self._identity_lock = threading.Lock()
        if external_store is not None:
            if getattr(external_store, "lexical_tokenizer", None) == "auto":  # a new table: our terms
                external_store.lexical_tokenizer = self._bm25.tokenizer_id
            self._link = StoreLink(external_store, lambda: self.embedder_id, lambda: self.namespace, self.corpus)
        self._owns_store = isinstance(vector_store, str) or (vector_store is None and store == "chroma")
        self._bm25_path = None if bm25_file is None else Path(bm25_file)
        self._bm25_written: str | None = None  # the corpus state the BM25 file holds
        if self._bm25_path is not None:
            try:
                loaded = read_bm25_file(self._bm25_path)
                if loaded is not None:
                    self._load_bm25_file(loaded)
            except BaseException:
                self.close()
                raise

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
                    identity = self._resolve_identity(self._external)
                    namespace = f"{identity}|{self.settings_key}|{self._bm25.tokenizer_id}"
                    earlier = earlier_rules_id(self._bm25.tokenizer_id)
                    if earlier is not None and self._manifest.adopt_namespace(
                            f"{identity}|{self.settings_key}|{earlier}", namespace):
                        log.info("the lexical rules changed (%s): the committed corpora keep their chunks and "
                                 "vectors, and their terms are rebuilt from the stored texts", self._bm25.tokenizer_id)
                    self._identity = (identity, namespace)
        return self._identity

    def _resolve_identity(self, store: Any) -> str:
        """The embedder's identity (:mod:`akasha.embeddings.identity`), registered in the cache and checked
        against what ``store`` holds: IndexMismatchError when the store holds another embedder's vectors."""
        from akasha.embeddings import identity as ids

        name = str(self.embedder.name)
        hint = getattr(self.embedder, "identity_hint", None)
        hint_key = f"identity-hint|{name}|{hint}" if isinstance(hint, str) and hint else None
        if hint_key is not None and store is None:
            remembered = self._manifest.get_meta(hint_key)
            if remembered:
                return remembered
        local = ids.parse_registry(self._manifest.get_meta(ids.REGISTRY_KEY))
        shared: ids.Registry = {}
        if store is not None:
            with contextlib.suppress(AttributeError, TypeError):
                shared = ids.parse_registry(store.load_state(ids.REGISTRY_KEY))
        samples = [functools.partial(self._manifest.sample_vectors, name, ids.VERIFY_TEXTS)]
        if store is not None and getattr(store, "embedder", None) == name:
            samples.append(functools.partial(_store_sample, store, ids.VERIFY_TEXTS))
        identity, entry = ids.resolve_identity(self.embedder, [shared, local], samples)
        if entry is not None and local.get(identity) is None:
            local[identity] = entry
            self._manifest.set_meta(ids.REGISTRY_KEY, json.dumps(ids.registry_state(local)))
        if hint_key is not None:
            self._manifest.set_meta(hint_key, identity)
        if entry is not None and shared.get(identity) is None:
            self._shared_registry = {**shared, identity: entry}
        held = getattr(store, "embedder", None)
        if held and held != identity:
            from akasha.errors import IndexMismatchError

            raise IndexMismatchError(
                f"{getattr(store, 'name', 'the store')} holds vectors of {held!r}; the embeddings "
                f"{name!r} make other vectors ({identity!r}): use the embeddings it was built with, "
                "or another collection/table for these")
        if store is not None and hasattr(store, "_expected"):
            store._expected = identity  # every later write is checked against it
        return identity

    # ---------------------------------------------------------------- public
    @property
    def chunks(self) -> list[Chunk]:
        """The chunks of the current corpus, in file order."""
        return list(self._chunks.values())

    @property
    def files(self) -> dict[str, str]:
        """path -> content key of every indexed file."""
        return dict(self._files)

    def __len__(self) -> int:
        return len(self._chunks)

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
        """Rank the corpus's chunks for ``query`` (run :meth:`sync` first)."""
        search_type = validate_search_type(search_type)
        if search_type in STORE_SEARCH_TYPES and self._store_answers(
                search_type if search_type in ("knn", "bm25") else "both"):
            self._check_store_holds_records()
            return self._store_search(query, k, search_type)
        if self._state_key is None and self.searches_store:
            from akasha.errors import ConfigError

            raise ConfigError(f"search_type {search_type!r} ranks in this process over every vector, and a query "
                              f"worker holds none: over a server store use one of {', '.join(STORE_SEARCH_TYPES)}, "
                              "or pass the data_source folder so that it is indexed here")
        if self._state_key is None:
            raise AkashaError("the index is empty: call sync(data_source) before search()")
        if search_type != "bm25":
            self._ensure_dense()
        vector = None if search_type == "bm25" else self.embedder.embed_query(query)
        dense = self._dense
        adaptive = search_type == "auto" and self.search_settings.auto_fusion == "adaptive"
        reads = self.dense_reads(query) if adaptive else None
        return search(query, vector, k, search_type, bm25=self._bm25, dense=dense,
                      chunks=self._chunks, settings=self.search_settings, dense_reads=reads,
                      hubs=self.hub_scores if adaptive else None,
                      passages=self.passage_scores if adaptive and self._dense.has_passages() else None)

    @property
    def searches_store(self) -> bool:
        """True when searches run in the external store's engine (its ``query`` verb), not in this process:
        the store answers both the dense and the lexical side (``capabilities``)."""
        return self._store_answers("both")

    def _store_answers(self, sides: str) -> bool:
        """Whether the external store's engine answers ``sides`` (``knn``, ``bm25`` or ``both``) itself."""
        store = self._link.store if self._link is not None else None
        if store is None or not callable(getattr(store, "query", None)):
            return False
        able = set(getattr(store, "capabilities", ()) or ())
        wanted = {"knn": {"dense"}, "bm25": {"lexical"}}.get(sides, {"dense", "lexical"})
        return wanted <= able

    def _store_request(self, query: str | np.ndarray, k: int, sides: str, filters: Mapping[str, Any] | None,
                       weights: tuple[float, float], rrf_k: int) -> Any:
        """The :class:`~akasha.stores.query.SearchRequest` of one search in the store (``sides``: knn, bm25, both)."""
        from akasha.stores.query import SearchRequest

        vector = None
        if sides != "bm25":
            vector = np.asarray(self.embedder.embed_query(query) if isinstance(query, str) else query,
                                dtype=np.float32)
        tokens: tuple[str, ...] = ()
        if sides != "knn" and isinstance(query, str):
            tokens = tuple(self._store_tokenize()(query))
        wanted = dict(filters or {})
        if self.corpus:
            wanted.setdefault("corpus", self.corpus)
        pool = max(self.search_settings.candidates, 4 * k)
        return SearchRequest(vector=vector, tokens=tokens, k=k, pool=pool, filters=wanted or None,
                             rrf_k=rrf_k, weights=weights, text=query if isinstance(query, str) else "")

    def _store_tokenize(self) -> Callable[[str], list[str]]:
        """The tokenizer of the linked store's lexical terms, resolved on the first search and kept.

        Resolved again only when the store has adopted another id since (a PostgreSQL table
        adopts the one its first writer recorded); ConfigError when this process cannot
        reproduce it (see :func:`akasha.stores.query.lexical_tokenizer`).
        """
        from akasha.stores.query import lexical_tokenizer

        assert self._link is not None  # called only where _store_answers found a store
        store = self._link.store
        tokenizer_id = str(getattr(store, "lexical_tokenizer", self._bm25.tokenizer_id))
        if self._store_tokenizer is None or self._store_tokenizer[0] != tokenizer_id:
            self._store_tokenizer = (tokenizer_id, lexical_tokenizer(tokenizer_id))
        return self._store_tokenizer[1]

    def _store_search(self, query: str, k: int, search_type: str) -> list[Hit]:
        """A search type answered by the store's engine: knn, bm25, or both fused (hybrid, auto)."""
        settings = self.search_settings
        if search_type == "auto":
            weights, rrf_k = settings.adaptive_weights, settings.adaptive_k
        else:
            weights, rrf_k = settings.hybrid_weights, settings.rrf_k
        sides = search_type if search_type in ("knn", "bm25") else "both"
        request = self._store_request(query, k, sides, None, weights, rrf_k)  # SearchRequest makes weights floats
        assert self._link is not None  # _store_request checked
        return list(self._link.store.query(request))

    def _check_store_holds_records(self) -> None:
        """A query worker's first search: EmptyStoreError when the store holds nothing to search."""
        if self._store_checked or self._state_key is not None:
            return
        link = self._link
        assert link is not None
        if link.last_source() is None and not int(link.store.count()):
            from akasha.errors import EmptyStoreError

            raise EmptyStoreError(
                f"data_source is None, so akasha answers from the store {link.name}, and it holds no chunks: "
                "index a folder into it first (rag(folder, question) or `akasha index FOLDER --vector-store URL`)")
        self._store_checked = True

    def hub_scores(self, ids: Sequence[str]) -> np.ndarray | None:
        """The hub scores of ``ids`` (chunk ids of this index) that ``auto`` discounts dense candidates by.

        Computed over the in-memory vectors the first time, then kept up to date as chunks come
        and go, and kept in the snapshot (:mod:`akasha.retrieval.hubness`); None above its size
        limit or for unknown ids.
        """
        if any(i not in self._dense for i in ids):
            return None
        return self._dense.hub_scores(ids)

    def passage_scores(self, ids: Sequence[str], query_vector: np.ndarray) -> np.ndarray | None:
        """The best passage cosine of each of ``ids`` with ``query_vector`` (:mod:`akasha.retrieval.passages`).

        None unless every chunk of the index has passage vectors (computed with its vector by the
        ``hf:`` models that mean-pool): ``auto`` then ranks by chunk vectors alone.
        """
        if not self._dense.has_passages():
            return None
        return self._dense.passage_scores(ids, query_vector)

    def holds_alone(self, question: str, chunk_id: str) -> bool:
        """Whether ``chunk_id`` is the only chunk holding one of ``question``'s terms (``auto``'s exact-match rule)."""
        return self._bm25.sole_holder(question, chunk_id)

    def dense_reads(self, question: str) -> bool | None:
        """Whether the embedder reads ``question``'s language: None unless it is mostly Chinese, Japanese or Korean.

        ``auto`` gives the dense list no weight for a question its embedder cannot read
        (:func:`akasha.retrieval.reading.reads_question` probes the embedder once; this index's
        manifest keeps the verdict for later processes). ``SearchSettings.embedder_reads_cjk``,
        when set, is the answer instead.
        """
        known = self.search_settings.embedder_reads_cjk
        if known is None:
            return reads_question(self.embedder, question, CJK_SHARE, self._manifest)
        return known if cjk_share(question) >= CJK_SHARE else None

    def sync(self, data_source: DataSource, *, progress: bool | None = False, lexical: bool = False) -> SyncReport:
        """Bring the index in line with the files of ``data_source``; embed only what is new.

        ``lexical=True`` (a ``bm25`` search) reads and chunks what changed and builds BM25, but
        embeds nothing and never builds the embedder: the vectors are computed (from the cache,
        embedding only what it lacks) on the first search that needs them. Ignored with an
        external store, which receives every chunk with its vector.

        ``progress=True`` shows progress bars (``tqdm.auto``, so notebooks get a widget)
        for reading files and for embedding; ``None`` shows them only when the work is
        long (more than :data:`akasha.index.sources.LONG_FILES` files to read or
        :data:`LONG_TEXTS` texts to embed), which is what ``RAG`` calls use. Raises SourceNotFoundError for a path
        that does not exist and EmptySourceError when nothing readable is found.
        """
        from akasha.loaders import discover

        started = time.perf_counter()
        exclude = [self.cache_dir] if self.cache_dir is not None else []
        paths = discover(data_source, exclude=exclude)
        self._progress = progress
        with self._write_lock():
            self._reading_lexical = lexical and self._link is None
            try:
                report = self._sync_locked(data_source, paths, progress)
            finally:
                self._reading_lexical = False
            self._write_bm25_file()
        report.seconds = time.perf_counter() - started
        return report

    def add_documents(self, documents: Iterable[Document]) -> SyncReport:
        """Index in-memory documents (a YAML pipeline's ``ingest``), keyed by ``Document.id`` or text hash.

        A document whose id was indexed before replaces its earlier version's
        chunks; the other documents stay. Content-keyed like files: a document
        with the same text and metadata is never chunked or embedded again, in
        this process or a later one. The documents form their own corpus: a later
        :meth:`sync` of a data source replaces it (and vice versa).
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
            if self._source == DOCUMENTS_SOURCE and not self._store_behind and not self._lexical_only:
                self._apply_documents(upserts, (), report)  # the corpus is in memory: apply the difference
            else:
                files = self._documents_corpus()
                files.update(upserts)
                self._apply(DOCUMENTS_SOURCE, files, report)
            counts = self._doc_chunk_ids()
            report.written = sum(len(counts.get(key, ())) for key in upserts)
            self._write_bm25_file()
        report.seconds = time.perf_counter() - started
        return report

    def delete_documents(self, doc_ids: Sequence[str]) -> int:
        """Remove documents added with :meth:`add_documents`; returns how many chunks went."""
        with self._write_lock():
            if self._source != DOCUMENTS_SOURCE or self._store_behind or self._lexical_only:
                self._apply(DOCUMENTS_SOURCE, self._documents_corpus(), SyncReport())
            gone = [d for d in dict.fromkeys(self._corpus_key(str(i)) for i in doc_ids) if d in self._files]
            if not gone:
                return 0
            before = len(self._chunks)
            self._apply_documents({}, gone, SyncReport())
            self._write_bm25_file()
            return before - len(self._chunks)

    def _apply_documents(self, upserts: Mapping[str, str], removals: Sequence[str], report: SyncReport) -> None:
        """Apply a few documents' changes to the documents corpus in memory, at a cost that grows with
        the change, not with the corpus (a YAML pipeline ingests ten documents at a time into thousands).

        Embeds first and swaps last, as :meth:`_rebuild` does. The manifest row and the store's state
        still name every document; the snapshot is rewritten only once a tenth of the corpus changed
        since the last one (a restart in between rebuilds from the cache, embedding nothing).
        """
        changed = {k: c for k, c in upserts.items() if self._files.get(k) != c}
        report.unchanged, report.indexed = len(upserts) - len(changed), len(changed)
        report.removed = len(removals)
        if not changed and not removals:
            report.chunks = len(self._chunks)
            return
        by_doc = self._doc_chunk_ids()
        stored = self._manifest.load_chunks_many(list(set(changed.values())), self.settings_key)
        fresh: dict[str, Chunk] = {}
        for key, content in changed.items():
            for seq, _text_hash, text, meta in stored[content]:
                chunk_id = f"{key}#{seq}"
                fresh[chunk_id] = Chunk(chunk_id, text, chunk_metadata(meta, key, chunk_id))
        chunks = self._chunks
        added = [c for c in fresh.values()
                 if c.id not in chunks
                 or own(chunks[c.id].metadata, "content_hash") != own(c.metadata, "content_hash")]
        old = [cid for key in (*changed, *removals) for cid in by_doc.get(key, ())]
        replaced = [cid for cid in old if cid not in fresh] + [c.id for c in added if c.id in chunks]
        vectors = self._vectors_for(added, report)  # may raise: nothing changed yet
        if self._link is not None:
            self._link.publish(added, vectors, sorted({*changed, *removals}), keep=set(fresh))
        if not isinstance(chunks, dict):  # a snapshot's lazily decoded chunks: decode once, then edit in place
            chunks = {cid: chunks[cid] for cid in chunks}
        self._bm25.remove(replaced)
        self._dense.remove(replaced)
        if added:
            ids = [c.id for c in added]
            self._bm25.add(ids, [c.text for c in added])
            self._dense.add(ids, np.stack([vectors[own(c.metadata, "content_hash")] for c in added]),
                            self._passages_for(added))
        for cid in old:
            chunks.pop(cid, None)
        chunks.update(fresh)
        for key in (*changed, *removals):
            by_doc.pop(key, None)
        for cid in fresh:
            by_doc.setdefault(cid.rsplit("#", 1)[0], []).append(cid)
        files = self._files  # edited in place: a copy per call would cost as much as the corpus
        for key in removals:
            files.pop(key, None)
        files.update(changed)
        self._chunks = chunks
        self._by_doc = (chunks, by_doc)
        self._state_key = digest(json.dumps([self._state_key, sorted(changed.items()), sorted(removals)]))
        self._since_snapshot += len(changed) + len(removals)
        self._pending += len(changed) + len(removals)
        if (self._pending * COMMIT_SHARE >= len(files) or self._pending >= COMMIT_EVERY
                or time.monotonic() - self._last_commit >= COMMIT_SECONDS):
            self._flush_locked()
        report.chunks = len(chunks)

    def flush(self) -> None:
        """Commit documents added or deleted since the last commit (``close()`` does it too).

        Committing writes the whole corpus's file list (manifest row, store state), so a
        stream of small ingests commits once a twentieth of the corpus changed, every
        500 documents or every 2 seconds. Until then the documents are searchable in
        this process, their chunks and vectors are already cached and in the store; a
        crash before the commit only means the next run ingests them again, embedding nothing.
        """
        if self._pending:
            with self._write_lock():
                self._flush_locked()

    def _flush_locked(self) -> None:
        if not self._pending or self._source != DOCUMENTS_SOURCE or self._state_key is None:
            return
        snapshot = self._since_snapshot * 10 >= len(self._files)
        self._commit(DOCUMENTS_SOURCE, self._state_key, self._files, snapshot=snapshot)

    def _doc_chunk_ids(self) -> dict[str, list[str]]:
        """document id -> its chunk ids in the corpus in memory (kept up to date by _apply_documents)."""
        if self._by_doc is None or self._by_doc[0] is not self._chunks:
            by_doc: dict[str, list[str]] = {}
            for chunk_id in self._chunks:
                by_doc.setdefault(chunk_id.rsplit("#", 1)[0], []).append(chunk_id)
            self._by_doc = (self._chunks, by_doc)
        return self._by_doc[1]

    def _documents_corpus(self) -> dict[str, str]:
        """The documents corpus to update: the one in memory, else the last committed one (here, or in the
        shared store when this cache never held it: a new process must not drop what others ingested)."""
        if self._source == DOCUMENTS_SOURCE:
            return dict(self._files)
        committed = self._manifest.corpus(DOCUMENTS_SOURCE, self.namespace)
        if committed is not None:
            return dict(committed[1])
        stored = self._link.load_state(self._shared_key(DOCUMENTS_SOURCE)) if self._link is not None else None
        return dict(stored[1]) if stored is not None else {}

    def load_store(self) -> SyncReport:
        """Serve every record already in the attached store as the corpus, embedding nothing.

        For collections written elsewhere (plain chromadb, LangChain, another akasha):
        BM25 is built from the stored texts, the dense side from the stored vectors.
        Raises ConfigError without a store, IndexMismatchError when the vectors'
        width differs from the embedder's, EmptySourceError for an empty store.
        """
        from akasha.errors import ConfigError, IndexMismatchError

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
        self._serve(chunks, matrix)
        self._files = {str(own(c.metadata, "source") or c.doc_id): str(own(c.metadata, "content_hash", ""))
                       for c in chunks}
        self._state_key = "store:" + digest(json.dumps(sorted(self._chunks)))
        self._source = "store"
        report = SyncReport(unchanged=len(self._files), chunks=len(chunks))
        report.seconds = time.perf_counter() - started
        return report

    def restore(self) -> bool:
        """Load the corpus this index committed last (a new process querying before it ingests).

        Returns False when nothing was ever committed in this cache for this
        embedder and chunk settings. Nothing is embedded: vectors come from the cache.
        """
        if self._state_key is not None:
            return True
        source_key = self._manifest.last_source(self.namespace)
        committed = self._manifest.corpus(source_key, self.namespace) if source_key else None
        if committed is None or not source_key:  # (no source key means nothing committed)
            if self.searches_store:  # a query worker: the store answers, nothing is loaded here
                self._check_store_holds_records()
                return True
            return self._restore_from_store()
        files = dict(committed[1])
        if files and all(os.path.isabs(p) for p in files):  # committed by a release that keyed files by path
            self._root = Path(os.path.commonpath([os.path.dirname(p) for p in files]))
            files = dict(self._portable_previous(files))
        with self._write_lock():
            if self._state_key is None:
                self._apply(source_key, files, SyncReport())
        return self._state_key is not None

    def _restore_from_store(self) -> bool:
        """A cache that never held this corpus (a new machine, an in-memory cache after a restart):
        rebuild the last corpus committed into the store from the store's own records and vectors."""
        if self._link is None:
            return False
        source_key = self._link.last_source()
        if not source_key:
            return False
        stored = self._link.load_state(source_key)
        if stored is None or not stored[1]:
            return False
        chunks, matrix = self._link.records_of(stored[1])
        if not chunks:
            return False
        self._serve(chunks, matrix)
        self._files, self._state_key, self._source = dict(stored[1]), stored[0], source_key
        self._committed = (source_key, stored[0])
        log.info("restored %d chunks of the last corpus committed into %s", len(chunks), self._link.name)
        return True

    def _serve(self, chunks: list[Chunk], matrix: np.ndarray) -> None:
        """Make stored records (with their vectors, row for row) the searchable corpus: BM25 over the texts."""
        ids = [c.id for c in chunks]
        bm25 = BM25Index(tokenizer=self._tokenizer)
        bm25.add(ids, [c.text for c in chunks])
        self._bm25, self._dense = bm25, DenseIndex.from_matrix(ids, matrix)
        self._chunks = {c.id: c for c in chunks}

    def vector_search(self, query: str | np.ndarray, k: int, filters: Mapping[str, Any] | None = None, *,
                      passages: bool = False) -> list[tuple[Chunk, float]]:
        """The ``k`` chunks most cosine-similar to ``query`` (a question or its vector), best first.

        ``filters`` keeps chunks whose metadata equals every given value (``doc_id``
        is the document id). Searches the corpus in memory (restored if needed).
        ``passages=True`` ranks as ``auto``'s dense list does when every chunk has passage
        vectors: the best candidates re-scored by the better of their chunk and best passage
        cosine, which is then the score (:func:`akasha.retrieval.passages.rescore`), as
        :func:`akasha.retrieval.search.dense_candidates` does for ``auto``.
        """
        if k <= 0 or not self.restore():
            return []
        self._ensure_dense()
        if self._store_answers("knn") and not passages:
            request = self._store_request(query, k, "knn", filters, (1.0, 0.0), self.search_settings.rrf_k)
            assert self._link is not None  # _store_request checked
            return [(hit.chunk, float(hit.score)) for hit in self._link.store.query(request)]
        vector = np.asarray(self.embedder.embed_query(query) if isinstance(query, str) else query, dtype=np.float32)
        fetch = self.search_settings.passage_fetch if passages and self._dense.has_passages() else 0
        pairs = self._dense.search(vector, len(self._chunks) if filters else max(k, fetch))
        if not fetch:
            return self._filtered(pairs, k, filters)
        kept = [(c.id, s) for c, s in self._filtered(pairs, max(k, fetch), filters)]
        rescored = rescore_passages(kept, vector, self.passage_scores)
        ranked = rescored[0] if rescored is not None else kept
        return [(self._chunks[i], float(s)) for i, s in ranked[:k]]

    def bm25_search(self, query: str, k: int, filters: Mapping[str, Any] | None = None) -> list[tuple[Chunk, float]]:
        """The ``k`` best BM25 matches for ``query``, best first (``filters`` as in :meth:`vector_search`)."""
        if k <= 0 or not self.restore():
            return []
        if self._store_answers("bm25"):
            request = self._store_request(query, k, "bm25", filters, (0.0, 1.0), self.search_settings.rrf_k)
            assert self._link is not None  # _store_request checked
            return [(hit.chunk, float(hit.score)) for hit in self._link.store.query(request)]
        return self._filtered(self._bm25.search(query, len(self._chunks) if filters else k), k, filters)

    def _filtered(self, pairs: Sequence[tuple[str, float]], k: int, filters: Mapping[str, Any] | None
                  ) -> list[tuple[Chunk, float]]:
        from akasha.stores.base import matches

        out = []
        for chunk_id, score in pairs:
            chunk = self._chunks.get(chunk_id)
            if chunk is not None and matches(chunk.metadata, chunk.doc_id, filters):
                out.append((chunk, float(score)))
                if len(out) == k:
                    break
        return out

    def prune(self, *, vacuum: bool = True) -> PruneReport:
        """Forget the history no committed corpus needs, so the cache stops growing with every edit.

        An index keeps the chunks and vectors of every file version it has seen, so
        undoing an edit or re-indexing an old copy embeds nothing. ``prune`` drops
        what no corpus in this cache folder was last committed with (any data
        source, embedder or chunk settings): older file versions, their chunks,
        vectors of texts that no kept chunk has, stat-cache rows of vanished paths
        and unused snapshots. ``vacuum=True`` then gives the space back to the file
        system. Takes the write lock. An external store needs no pruning: every sync
        already removes the records of edited and deleted files from it.
        """
        report = PruneReport()
        with self._write_lock():
            report.bytes_before = self._database_bytes()
            counts = self._manifest.prune(os.path.lexists)
            for name, value in counts.items():
                setattr(report, name, value)
            if self.cache_dir is not None:
                before = len(list((self.cache_dir / "snapshots").glob("*")))
                self._drop_stale_snapshots()
                report.snapshots = before - len(list((self.cache_dir / "snapshots").glob("*")))
            if vacuum:
                self._manifest.vacuum()
            report.bytes_after = self._database_bytes()
        log.info("pruned %s", report)
        return report

    def _database_bytes(self) -> int:
        if self.cache_dir is None:
            return 0
        return sum(p.stat().st_size for p in self.cache_dir.glob("index.sqlite3*") if p.is_file())

    # -------------------------------------------------------------- internals
    def _write_lock(self) -> Any:
        if self.cache_dir is None:
            lock: Any = contextlib.nullcontext()
        else:
            lock = IndexLock(self.cache_dir / "index.lock", self.lock_timeout)
        if self._link is not None:  # writers on every machine sharing the store: its lock too
            return _both(lock, self._link.store.lock(self.lock_timeout))
        return lock

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
        """Make ``files`` the corpus in memory for BM25 alone: chunks from the manifest, no vectors, no commit.

        Nothing here needs the embedder (not even its identity); :meth:`_ensure_dense` completes
        the corpus with vectors when a search first needs them.
        """
        self._flush_locked()
        if self._state_key is not None and self._source == source_key and self._files == files:
            report.unchanged, report.chunks = len(files), len(self._chunks)
            return
        previous = self._files if self._source == source_key else {}
        report.unchanged = sum(1 for p, h in files.items() if previous.get(p) == h)
        report.indexed = len(files) - report.unchanged
        report.removed = sum(1 for p in previous if p not in files)
        new_chunks, fresh = self._materialise(files)
        old = self._chunks
        added = [new_chunks[cid] for cid in fresh
                 if cid not in old or own(old[cid].metadata, "content_hash") != own(new_chunks[cid].metadata,
                                                                                     "content_hash")]
        stale = [cid for cid in old if cid not in new_chunks] + [c.id for c in added if c.id in old]
        try:
            self._bm25.remove(stale)
            if added:
                self._bm25.add([c.id for c in added], [c.text for c in added])
        except BaseException:
            self._bm25, self._dense = BM25Index(tokenizer=self._tokenizer), DenseIndex()
            self._chunks, self._files, self._state_key = {}, {}, None
            raise
        self._dense = DenseIndex()  # vectors come with the first dense search (_ensure_dense)
        self._chunks, self._files, self._source = new_chunks, dict(files), source_key
        self._state_key = "lexical:" + digest(json.dumps(sorted(files.items()), ensure_ascii=False))
        self._committed = None
        self._lexical_only = True
        report.chunks = len(new_chunks)

    def _load_bm25_file(self, loaded: Any) -> None:
        """Make a BM25 file's corpus the lexical-only corpus in memory (see :meth:`_apply_lexical`).

        Its chunks also go into the manifest under their documents' content keys, so a later
        ingestion or dense search rebuilds from them without re-chunking (and, with a cache
        holding their vectors, without embedding).
        """
        path = self._bm25_path
        if loaded.chunking != self.settings_key:
            log.warning("%s holds chunks of other chunk settings (%s, now %s); not loaded: ingest the documents "
                        "again and it is rewritten", path, loaded.chunking, self.settings_key)
            return
        by_doc: dict[str, list[Chunk]] = {}
        for chunk in loaded.chunks:
            by_doc.setdefault(chunk.doc_id, []).append(chunk)
        known = self._manifest.parsed_status_of(self.settings_key, list(set(loaded.documents.values())))
        for doc, content in loaded.documents.items():
            pieces = by_doc.get(doc)
            if content in known or not pieces:
                continue
            stored = []
            for chunk in sorted(pieces, key=lambda c: int(c.id.rpartition("#")[2])):
                meta = dict(chunk.metadata)
                drop_own(meta, "source")
                drop_own(meta, "chunk_id")
                text_hash = digest(chunk.text)
                put_own(meta, "content_hash", text_hash)
                stored.append((int(chunk.id.rpartition("#")[2]), text_hash, chunk.text, meta))
            self._manifest.store_parsed(content, self.settings_key, stored)
            known[content] = ("ok", None)
        chunks = {c.id: c for c in loaded.chunks}
        self._bm25 = BM25Index(tokenizer=self._tokenizer)
        if chunks:
            self._bm25.add(list(chunks), [c.text for c in chunks.values()])
        self._dense = DenseIndex()
        self._chunks, self._files, self._source = chunks, dict(loaded.documents), loaded.source
        self._state_key = "lexical:" + digest(json.dumps(sorted(self._files.items()), ensure_ascii=False))
        self._committed, self._lexical_only = None, True
        self._bm25_written = self._state_key
        log.info("loaded %d chunks of %d documents for BM25 from %s", len(chunks), len(self._files), path)

    def _write_bm25_file(self) -> None:
        """Rewrite the BM25 file when the corpus in memory changed since it was last written or read."""
        path = self._bm25_path
        if path is None or self._state_key is None or self._state_key == self._bm25_written:
            return
        try:
            write_bm25_file(path, source=str(self._source), chunking=self.settings_key, documents=self._files,
                            chunks=self._chunks.values())
        except OSError as exc:
            raise storage_error(path.parent, exc) from exc
        self._bm25_written = self._state_key

    def _drop_lexical(self) -> None:
        """Forget a lexical-only corpus before a full sync: it starts as a new process would (vectors
        come from the cache, a committed snapshot is reused)."""
        if self._lexical_only:
            self._bm25, self._dense = BM25Index(tokenizer=self._tokenizer), DenseIndex()
            self._chunks, self._files, self._state_key, self._source = {}, {}, None, None
            self._committed, self._lexical_only = None, False

    def _ensure_dense(self) -> None:
        """Give a lexical-only corpus (see :meth:`_apply_lexical`) its vectors and commit it: cached vectors
        are reused, only the missing ones are embedded. Builds the embedder if it was not yet."""
        if not self._lexical_only:
            return
        with self._write_lock():
            if not self._lexical_only:
                return
            chunks = list(self._chunks.values())
            report = SyncReport()
            vectors = self._vectors_for(chunks, report)
            dense = DenseIndex()
            if chunks:
                dense.add([c.id for c in chunks], np.stack([vectors[own(c.metadata, "content_hash")] for c in chunks]),
                          self._passages_for(chunks))
            files = dict(self._files)
            if self._link is not None:  # a store emptied by a restart (memory, faiss) receives the records again
                self._link.publish(chunks, vectors, sorted(files), keep=set(self._chunks))
            state_key = digest(json.dumps([self.namespace, list(files.items())], ensure_ascii=False))
            if self._bm25_written == self._state_key:  # same chunks: the BM25 file needs no rewrite
                self._bm25_written = state_key
            self._dense, self._state_key, self._lexical_only = dense, state_key, False
            if self._source is not None:
                self._commit(self._source, state_key, files)
            log.info("embedded %d texts for the first dense search over a corpus indexed for BM25 only",
                     report.embedded)

    def _note_missing_passages(self) -> None:
        """Say once (INFO) that ``auto`` ranks without passage vectors because only some chunks have them."""
        have, live = self._dense.passage_rows(), len(self._dense)
        if self._passages_noted or not have or have == live:
            return
        self._passages_noted = True
        log.info("%d of %d chunks in this index have no passage vectors (embedded by an earlier akasha, or read "
                 "from a shared store), so auto ranks by chunk vectors alone; a new cache folder embeds them "
                 "with passages", live - have, live)

    def _apply(self, source_key: str, files: dict[str, str], report: SyncReport) -> None:
        """Make ``files`` (path -> content key) the current corpus of ``source_key`` and commit it.

        Loads the last committed structures first in a new process, embeds only
        what no cache holds, writes the difference into the external store (if
        any), and commits the manifest row last.
        """
        self._flush_locked()  # documents waiting for their commit are committed before the corpus moves on
        self._drop_lexical()
        state_key = digest(json.dumps([self.namespace, list(files.items())], ensure_ascii=False))
        if (state_key == self._state_key and source_key == self._source and not self._store_behind
                and self._committed == (source_key, state_key)):
            # The corpus in memory, already committed here and in the store: a question over an
            # unchanged folder costs no database or store round trip.
            report.unchanged, report.chunks = len(files), len(self._chunks)
            return
        fresh_process = self._state_key is None
        previous = self._files
        committed = self._manifest.corpus(source_key, self.namespace)
        stored = legacy = None
        if self._link is not None:
            stored = self._link.load_state(self._shared_key(source_key))
            if stored is None and self._shared_key(source_key) != source_key:
                # written by a release that keyed records by this machine's absolute paths: those
                # records are replaced by portable ones (their vectors reused, nothing re-embedded)
                legacy = self._link.load_state(source_key)
        if fresh_process and committed is not None:
            previous = committed[1]
        elif fresh_process and stored is not None:
            previous = stored[1]  # another machine committed this corpus into the shared store
        previous = dict(self._portable_previous(previous))
        report.unchanged = sum(1 for p, h in files.items() if previous.get(p) == h)
        report.indexed = len(files) - report.unchanged
        report.removed = sum(1 for p in previous if p not in files)
        if fresh_process and committed is not None and committed[2]:
            # A new process: start from the last committed structures (even when files changed since,
            # so only the difference is tokenised and applied below).
            if self._load_snapshot(committed[2], committed[0], committed[1]):
                self._committed = (source_key, committed[0])
        store_files = None
        if self._link is not None:
            # What the store holds for this source; None when it holds something else than this
            # process's corpus (a new store, or another machine's commit): then write all of it.
            in_step = stored is not None and stored[0] == self._state_key and stored[1] == self._files
            store_files = stored[1] if stored is not None else (legacy[1] if legacy is not None else {})
            if not in_step:
                self._store_behind = True
        if state_key != self._state_key or self._store_behind:
            self._rebuild(files, report, store_files)
            self._state_key = state_key
        self._source = source_key
        if self._committed != (source_key, state_key) or (self._link is not None and (
                stored is None or stored[0] != state_key)):
            self._commit(source_key, state_key, files)
        report.chunks = len(self._chunks)

    def _portable_previous(self, previous: Mapping[str, str]) -> Mapping[str, str]:
        """A corpus committed by a release that keyed files by absolute path, keyed the portable way."""
        root = self._root
        if root is None or not any(os.path.isabs(p) for p in previous):
            return previous
        from akasha.index.portable import document_key

        return {document_key(p, root, self.corpus) if os.path.isabs(p) else p: h for p, h in previous.items()}

    def _corpus_key(self, doc_id: str) -> str:
        """A document id as this index keys it: ``<corpus>/<id>`` when the index has a corpus name."""
        return f"{self.corpus}/{doc_id}" if self.corpus else doc_id

    def _shared_key(self, source_key: str) -> str:
        """The key a shared store keeps this corpus's state under: the corpus name, never a machine's path
        (a folder synced under a corpus name replaces what the store held under that name)."""
        if source_key == DOCUMENTS_SOURCE:
            return DOCUMENTS_SOURCE if not self.corpus else f"{DOCUMENTS_SOURCE}:{self.corpus}"
        return f"folder:{self.corpus}"

    def _split(self, documents: list[Document]) -> list[Chunk]:
        """Chunk loaded documents with the index's chunker (the recursive splitter unless one was given)."""
        if self.chunker is not None:
            return list(self.chunker.split_documents(documents))
        from akasha.chunking import chunk_documents

        return chunk_documents(documents, chunk_size=self.chunk_size, overlap=self.chunk_overlap)

    def _materialise(self, files: dict[str, str]) -> tuple[Mapping[str, Chunk], list[str]]:
        """Chunks of the corpus ``files`` and the ids of those read from the manifest.

        Unchanged paths keep their in-memory chunks (by id: chunks still waiting in a
        snapshot's records stay undecoded); other paths are read from the manifest.
        """
        by_path: dict[str, list[str]] = {}
        for chunk_id in self._chunks:  # ids are "<path>#<seq>"
            by_path.setdefault(chunk_id.rsplit("#", 1)[0], []).append(chunk_id)
        reused = {path for path, content in files.items() if self._files.get(path) == content and path in by_path}
        stored = self._manifest.load_chunks_many(
            list({content for path, content in files.items() if path not in reused}), self.settings_key
        )
        order: list[str] = []
        fresh: dict[str, Chunk] = {}
        for path, content in files.items():
            if path in reused:
                order.extend(by_path[path])
                continue
            for seq, _text_hash, text, meta in stored[content]:
                chunk_id = f"{path}#{seq}"
                fresh[chunk_id] = Chunk(chunk_id, text, chunk_metadata(meta, path, chunk_id))
                order.append(chunk_id)
        old = self._chunks
        if isinstance(old, LazyChunks):
            return old.derive(order, fresh), list(fresh)
        return {cid: fresh[cid] if cid in fresh else old[cid] for cid in order}, list(fresh)

    def _rebuild(self, files: dict[str, str], report: SyncReport, stored_before: Mapping[str, str] | None = None
                 ) -> None:
        """Update the search structures to ``files``; embeds first, swaps state last.

        ``stored_before`` is the corpus the external store last committed for this
        source (a new process, or another machine): its files that are no longer in
        ``files`` have their records removed from the store.
        """
        new_chunks, fresh = self._materialise(files)
        old = self._chunks
        added = [new_chunks[cid] for cid in fresh  # kept chunks are unchanged by construction
                 if cid not in old
                 or own(old[cid].metadata, "content_hash") != own(new_chunks[cid].metadata, "content_hash")]
        gone = [cid for cid in old if cid not in new_chunks]
        to_store: list[Chunk] = []
        if self._link is not None:
            before = dict(stored_before or {})
            if self._store_behind:  # the store lags this process's corpus: write every chunk it lacks
                to_store = list(new_chunks.values())
            else:
                changed = {p for p, h in files.items() if before.get(p) != h}
                to_store = [c for c in new_chunks.values() if c.doc_id in changed]
        tokens = self._tokens_ahead(added)  # BM25's tokenising runs while the embedder works
        vectors = self._vectors_for(added if not to_store else list({c.id: c for c in added + to_store}.values()),
                                    report)  # may raise: nothing changed yet
        if self._link is not None:  # may raise too: the next sync re-applies the same difference
            touched = {c.doc_id for c in to_store} | {p for p in (stored_before or {}) if p not in files}
            if to_store and len(to_store) == len(new_chunks):  # writing the whole corpus: also drop the records
                touched |= set(self._machine_paths)  # an earlier release keyed by this machine's paths
            self._link.publish(to_store, vectors, sorted(touched), keep=set(new_chunks))
            self._store_behind = False
        try:
            self._bm25.remove(gone)
            self._dense.remove(gone)
            if added:
                ids = [c.id for c in added]
                if tokens is not None:
                    self._bm25.add_tokens(ids, tokens.result())
                else:
                    self._bm25.add(ids, [c.text for c in added])
                self._dense.add(ids, np.stack([vectors[own(c.metadata, "content_hash")] for c in added]),
                                self._passages_for(added))
        except BaseException:
            # Half-updated structures must never be searched: start over from the manifest next time.
            self._bm25, self._dense = BM25Index(tokenizer=self._tokenizer), DenseIndex()
            self._chunks, self._files, self._state_key = {}, {}, None
            raise
        self._chunks = new_chunks
        self._files = dict(files)

    def _tokens_ahead(self, chunks: list[Chunk]) -> Background | None:
        """BM25's tokens of ``chunks``' texts, computed on a thread while they are embedded; None for none or many.

        Tokenising (jieba's dictionary on the first Chinese text included) is Python work, while
        the torch-free encoders spend the embedding in native code that releases the GIL: a first
        build over the README's folder waited 0.3 s for it after the embedding. Up to
        :data:`~akasha.retrieval.bm25.ADD_BATCH` chunks (more are tokenised batch by batch, as
        ``BM25Index.add`` bounds the memory of token lists). Same tokens, same index.
        """
        if not chunks or len(chunks) > BM25_BATCH:
            return None
        texts = [c.text for c in chunks]
        tokenize = self._bm25.tokenize
        return Background(lambda: [tokenize(text) for text in texts], "akasha-bm25-tokens")

    def _vectors_for(self, chunks: list[Chunk], report: SyncReport) -> dict[str, np.ndarray]:
        """Vectors for the chunk texts, embedding (in committed batches) only the missing ones."""
        model = self.embedder_id
        texts = {own(c.metadata, "content_hash"): c.text for c in chunks}
        if not texts:
            return {}
        width = self._vector_width(model)
        cached = self._manifest.cached_hashes(model, list(texts), width)
        missing = [h for h in texts if h not in cached]  # a cached vector of another width counts as missing
        if missing and self._link is not None:  # vectors another machine already wrote into the shared store
            shared = self._link.vectors_for(missing)
            if shared:
                hashes = [h for h in missing if h in shared]
                self._manifest.store_vectors(model, hashes, np.stack([shared[h] for h in hashes]))
                missing = [h for h in missing if h not in shared]
        batch = max(1, int(getattr(self.embedder, "batch_size", 64) or 64))
        bar = _embedding_bar(len(missing), self._progress)
        with_passages = getattr(self.embedder, "embed_documents_with_passages", None) \
            if self.search_settings.passage_fetch else None
        try:
            for start in range(0, len(missing), batch):
                hashes = missing[start : start + batch]
                if with_passages is not None:
                    vectors, passages = with_passages([texts[h] for h in hashes])
                    matrix = as_matrix(vectors, len(hashes), model)
                    self._manifest.store_passages(model, hashes, passages, matrix.shape[1])
                else:
                    matrix = as_matrix(self.embedder.embed_documents([texts[h] for h in hashes]), len(hashes),
                                       model)
                if width is None:
                    width = int(matrix.shape[1])
                elif matrix.shape[1] != width:  # checked before caching: one stray width never poisons the cache
                    raise ValueError(f"embedder {model!r} returned {matrix.shape[1]}-dimensional vectors where its "
                                     f"earlier ones have {width}; nothing was cached: check the embeddings server")
                self._manifest.store_vectors(model, hashes, matrix)
                report.embedded += len(hashes)
                if bar is not None:
                    bar.update(len(hashes))
        finally:
            if bar is not None:
                bar.close()
        vectors = self._manifest.load_vectors(model, list(texts), width)
        lost = [h for h in texts if h not in vectors]
        if lost:
            raise AkashaError(f"{len(lost)} vectors for {model!r} vanished from {self._manifest.path}")
        return vectors

    def _embed_for_split(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for texts a splitter embeds (the ``semantic`` splitter's sentences), through the embeddings
        cache like chunk vectors: a chunk whose text is one of them is not embedded again, nor is a
        sentence when the documents are chunked again."""
        pieces = [Chunk(f"split#{n}", text, {"content_hash": digest(text)}) for n, text in enumerate(texts)]
        vectors = self._vectors_for(pieces, SyncReport())
        return np.stack([vectors[c.metadata["content_hash"]] for c in pieces]) if pieces else np.zeros((0, 0))

    def _vector_width(self, model: str) -> int | None:
        """The width of this embedder's vectors as the cache holds most of them, or None before the first."""
        return self._manifest.common_width(model)

    def _passages_for(self, chunks: Sequence[Chunk]) -> list[bytes | None] | None:
        """The packed passage vectors of ``chunks`` from the manifest (None for a chunk without any), or
        None when passage ranking is off (``SearchSettings.passage_fetch=0``)."""
        if not self.search_settings.passage_fetch or not chunks:
            return None
        stored = self._manifest.load_passages(self.embedder_id, [own(c.metadata, "content_hash") for c in chunks])
        return [stored.get(own(c.metadata, "content_hash")) for c in chunks]

    def _commit(self, source_key: str, state_key: str, files: dict[str, str], *, snapshot: bool = True) -> None:
        """Persist the in-memory state: snapshot file first (unless ``snapshot=False``), then the
        manifest row naming it, and the store's state."""
        self._pending, self._last_commit = 0, time.monotonic()
        name = None
        if self.cache_dir is not None and snapshot:
            self._since_snapshot = 0
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.embedder.name)[:40]
            name = f"{slug}-{state_key[:32]}{SNAPSHOT_SUFFIX}"
            try:
                write_snapshot(self.cache_dir / "snapshots" / name, state_key, self._bm25, self._dense,
                               self._chunks)
            except OSError as exc:  # the next sync retries; the in-memory index is complete and usable
                raise storage_error(self.cache_dir, exc) from exc
        if self._link is not None:
            if self._shared_registry is not None:  # the store learns this embedder's identity with its first commit
                from akasha.embeddings.identity import REGISTRY_KEY, registry_state

                self._link.store.save_state(REGISTRY_KEY, registry_state(self._shared_registry))
                self._shared_registry = None
            self._link.save_state(self._shared_key(source_key), state_key, files)
        self._manifest.store_corpus(source_key, self.namespace, state_key, files, name)
        self._committed = (source_key, state_key)
        if name is not None:
            self._drop_stale_snapshots()

    def _drop_stale_snapshots(self) -> None:
        assert self.cache_dir is not None  # snapshots are written only into a cache folder
        folder = self.cache_dir / "snapshots"
        in_use = self._manifest.snapshots_in_use()
        for path in folder.glob("*"):
            try:  # unused snapshots, and temp files a killed writer left over an hour ago; only akasha's own
                if not is_own_snapshot_file(path):
                    continue
                stale_tmp = path.name.endswith(".tmp") and time.time() - path.stat().st_mtime > 3600
                if (path.suffix in (".npz", SNAPSHOT_SUFFIX) and path.name not in in_use) or stale_tmp:
                    path.unlink()
            except OSError:
                pass

    def _load_snapshot(self, name: str, state_key: str, files: dict[str, str]) -> bool:
        assert self.cache_dir is not None  # a snapshot name comes from a cache folder's manifest
        loaded = read_snapshot(self.cache_dir / "snapshots" / name, state_key)
        if loaded is None:
            return False
        bm25, dense, stored_chunks = loaded
        if bm25.tokenizer_id != self._bm25.tokenizer_id or len(bm25) != len(dense):
            return False
        if stored_chunks is not None:  # stored in the dense rows' order, one per row: consistent by construction
            chunks: Mapping[str, Chunk] = stored_chunks
        else:
            chunks, _fresh = self._materialise(files)
            if set(dense.ids) != set(chunks):
                return False
        self._bm25, self._dense, self._chunks = bm25, dense, chunks
        self._files, self._state_key = dict(files), state_key
        return True


def _store_sample(store: Any, count: int) -> tuple[list[str], np.ndarray]:
    """Up to ``count`` stored texts with their vectors (to check whose vectors a store written before
    identities holds)."""
    for chunks, matrix in store.scan(count):
        return [c.text for c in chunks[:count]], np.asarray(matrix, dtype=np.float32)[:count]
    return [], np.zeros((0, 0), dtype=np.float32)


def _checked_store(store: Any) -> Any:
    """``store`` if it offers the Store contract, else ConfigError saying what to pass."""
    if not all(callable(getattr(store, m, None)) for m in _STORE_METHODS):
        from akasha.errors import ConfigError

        raise ConfigError(f"store {store!r} is not an akasha Store (needs {', '.join(_STORE_METHODS)}); "
                          f"pass one of {', '.join(STORES)}, a vector_store URL, or an object from akasha.stores")
    return store


@contextlib.contextmanager
def _both(first: Any, second: Any) -> Iterator[None]:
    """Hold two locks: this machine's cache folder lock, then the shared store's."""
    with first, second:
        yield


def _embedding_bar(total: int, progress: bool | None) -> Any:
    """A ``tqdm.auto`` bar over the texts to embed, when asked for (or, for ``None``, when long)."""
    if not total or not (progress or (progress is None and total > LONG_TEXTS)):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="embedding", unit="text")


def _describe_each(data_source: DataSource) -> list[str]:
    if isinstance(data_source, (str, os.PathLike)):
        items = [data_source]
    else:
        items = list(data_source)
    return [str(Path(os.fspath(p)).expanduser().resolve()) for p in items]


def _describe(data_source: DataSource) -> str:
    items = _describe_each(data_source)
    return repr(items[0]) if len(items) == 1 else repr(items)
