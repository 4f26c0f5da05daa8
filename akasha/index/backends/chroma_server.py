"""The shared index on a Chroma server (``vector_store="chroma://host:port/collection"``).

Chroma has no transactions and no locks, so everything akasha writes there is
an *immutable, content-keyed record* and every write is an idempotent upsert:
two machines indexing at once write identical records, and the only mutable
record per corpus (its committed state) is replaced by a single upsert, so
readers always see one complete state or the previous one.

Collections, for the URL's collection name ``N``:

``N-manifest``  the shared manifest (no full-text index; akasha runs BM25 itself).
                Records carry a dummy 1-d vector and ``kind`` metadata:
                ``parsed`` (per file hash + chunk settings: status, reason and the
                file's chunks as one JSON document, so a file's chunks and its
                status are written by one record; files over 500 chunks add
                ``part`` records, written first) and ``corpus`` (the files JSON as
                the document, the state key);
``N-v-<hash>``  per embedding model: one record per chunk-text sha256 with its
                vector, in cosine space (HNSW), the model name in the metadata.

Nothing is ever deleted on the server by a sync: vectors of edited chunks stay
(they are small, and another machine may still be on the old state); ``knn``
over-fetches and the caller keeps the hashes of its own corpus.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from akasha.errors import IndexMismatchError, MissingExtraError
from akasha.index.backends.base import LocalStatCache, Retry
from akasha.stores.urls import ServerURL

log = logging.getLogger(__name__)
MODEL_KEY = "embedding_model"
_ONE = [1.0]
_PART = 500  # chunks per manifest record


def _h(text: str, n: int = 16) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:n]


def _is_auth_error(exc: BaseException) -> bool:
    try:
        from chromadb.errors import AuthorizationError, ChromaAuthError

        if isinstance(exc, (AuthorizationError, ChromaAuthError)):
            return True
    except ImportError:  # pragma: no cover
        pass
    response = getattr(exc, "response", None)
    if getattr(response, "status_code", None) in (401, 403):
        return True
    text = str(exc).lower()
    return any(word in text for word in ("unauthorized", "forbidden", "401", "403", "autherror"))


def _where(**fields: Any) -> dict[str, Any]:
    parts = [{k: v} for k, v in fields.items()]
    return parts[0] if len(parts) == 1 else {"$and": parts}


class ChromaServerBackend(LocalStatCache):
    """Manifest method set + ``write_lock`` (a no-op) + ``knn`` over one Chroma server."""

    def __init__(self, spec: ServerURL, *, token: str | None = None, local: Any = None, retry: Retry | None = None,
                 timeout: float = 30.0) -> None:
        super().__init__(local)
        try:
            import chromadb
            import httpx
        except ImportError:
            raise MissingExtraError("chromadb", "light", "the Chroma server index") from None
        self._chromadb = chromadb
        self._transient: tuple[type[BaseException], ...] = (httpx.TransportError, ConnectionError)
        self.spec = spec
        self.path = spec.display
        self.server = f"the Chroma server {spec.display}"
        self.retry = retry or Retry()
        self.token = token
        self.timeout = timeout
        self._lock = threading.RLock()
        self._vectors: dict[str, Any] = {}
        self._pending: list[tuple[str, str, dict[str, Any] | None]] = []
        self._pending_bytes = 0
        self._client = self._run("connecting", self._connect)
        self._manifest = self._run("opening the manifest collection", self._open_manifest)
        self._batch = max(100, int(self._run("reading the batch size", self._client.get_max_batch_size)) // 2)

    # ----------------------------------------------------------- connection
    def _connect(self) -> Any:
        from chromadb.config import Settings

        headers: dict[str, str] = {}
        if self.token:
            if self.spec.options.get("header", "").lower() == "x-chroma-token":
                headers["X-Chroma-Token"] = self.token
            else:
                headers["Authorization"] = f"Bearer {self.token}"
        options = {k: v for k, v in self.spec.options.items() if k in ("tenant", "database")}
        try:
            return self._chromadb.HttpClient(host=self.spec.host, port=self.spec.port, ssl=self.spec.ssl,
                                             headers=headers or None,
                                             settings=Settings(anonymized_telemetry=False), **options)
        except ValueError as exc:  # chromadb wraps "connection refused" in a ValueError
            if "connect" in str(exc).lower() and not _is_auth_error(exc):
                raise ConnectionError(str(exc)) from exc
            raise

    def _open_manifest(self) -> Any:
        """The manifest collection, without Chroma's full-text index (akasha runs BM25 itself; 2-3x faster writes)."""
        name = f"{self.spec.name}-manifest"
        options: dict[str, Any] = {"metadata": {"akasha_manifest": 1}, "embedding_function": None}
        try:
            from chromadb import FtsIndexConfig, Schema

            options["schema"] = Schema().delete_index(FtsIndexConfig(), key="#document")
        except (ImportError, TypeError, ValueError):  # older chromadb: keep the default schema
            pass
        return self._client.get_or_create_collection(name, **options)

    def _run(self, what: str, fn: Any) -> Any:
        def attempt() -> Any:
            with self._lock:
                return fn()

        hint = ("Pass the server's token: token=..., chroma://:TOKEN@host:port/collection or $CHROMA_AUTH_TOKEN "
                "(see docs/servers.md)")
        return self.retry.run(attempt, server=self.server, what=what, transient=self._transient,
                              auth=_is_auth_error, hint=hint)

    def _vector_collection(self, model: str) -> Any:
        found = self._vectors.get(model)
        if found is None:
            name = f"{self.spec.name}-v-{_h(model, 12)}"
            found = self._run("opening the vector collection", lambda: self._client.get_or_create_collection(
                name, metadata={"hnsw:space": "cosine", "hnsw:search_ef": 200, MODEL_KEY: model[:500]},
                embedding_function=None))
            self._vectors[model] = found
        return found

    def _get_all(self, what: str, where: dict[str, Any], include: list[str]) -> dict[str, list[Any]]:
        """Every manifest record matching ``where``, paged."""
        out: dict[str, list[Any]] = {"ids": [], "metadatas": [], "documents": []}
        offset = 0
        while True:
            page = self._run(what, lambda: self._manifest.get(where=where, include=include, limit=self._batch,
                                                              offset=offset))
            out["ids"].extend(page["ids"])
            for key in ("metadatas", "documents"):
                if page.get(key) is not None:
                    out[key].extend(page[key])
            if len(page["ids"]) < self._batch:
                return out
            offset += self._batch

    # ------------------------------------------------------------ the lock
    @contextlib.contextmanager
    def write_lock(self, timeout: float = 600.0) -> Iterator[None]:
        """Chroma has no locks; concurrent writers are safe because every write is an idempotent upsert."""
        yield

    # -------------------------------------------------------------- chunks
    def _file_id(self, settings: str, file_hash: str, part: int = 0) -> str:
        base = f"f|{_h(settings, 12)}|{file_hash}"
        return base if part == 0 else f"{base}|{part}"

    def flush(self) -> None:
        """Write the buffered parsed-file records (parts first, then the head records that complete them)."""
        if not self._pending:
            return
        heads = [r for r in self._pending if r[2] is not None]
        parts = [r for r in self._pending if r[2] is None]
        for group in (parts, heads):
            for start in range(0, len(group), 64):
                batch = group[start : start + 64]
                self._run("storing parsed files", lambda: self._manifest.upsert(
                    ids=[r[0] for r in batch], embeddings=[_ONE] * len(batch), documents=[r[1] for r in batch],
                    metadatas=[r[2] or {"kind": "part"} for r in batch]))
        # cleared only once all are written (upserts are idempotent, so a retry after a failure is harmless)
        self._pending, self._pending_bytes = [], 0

    def parsed_status(self, settings: str) -> dict[str, tuple[str, str | None]]:
        self.flush()
        got = self._get_all("reading the parsed files", _where(kind="parsed", settings=settings), ["metadatas"])
        return {m["file_hash"]: (m["status"], m.get("reason") or None) for m in got["metadatas"]}

    def store_parsed(self, file_hash: str, settings: str, chunks: Sequence[tuple[int, str, str, dict[str, Any]]],
                     status: str = "ok", reason: str | None = None) -> None:
        """Buffer one file's chunks as one record (plus part records for very long files).

        The head record carries the parsed status and is written after its parts, in
        one upsert with other files' records; buffered records are written before any
        read and at commit, so a crash loses at most parse work, never consistency.
        """
        rows = [[int(seq), th, text, meta] for seq, th, text, meta in chunks]
        parts = [rows[i : i + _PART] for i in range(0, len(rows), _PART)] or [[]]
        for i, part in enumerate(parts[1:], start=1):
            self._buffer(self._file_id(settings, file_hash, i), part, None)
        head = {"kind": "parsed", "settings": settings, "file_hash": file_hash, "status": status,
                "reason": reason or "", "n_chunks": len(rows), "n_parts": len(parts)}
        self._buffer(self._file_id(settings, file_hash), parts[0], head)

    def _buffer(self, record_id: str, rows: list[Any], meta: dict[str, Any] | None) -> None:
        document = json.dumps(rows, ensure_ascii=False, default=str)
        self._pending.append((record_id, document, meta))
        self._pending_bytes += len(document)
        if len(self._pending) >= 256 or self._pending_bytes > 8_000_000:
            self.flush()

    def load_chunks(self, file_hash: str, settings: str) -> list[tuple[int, str, str, dict[str, Any]]]:
        return self.load_chunks_many([file_hash], settings)[file_hash]

    def load_chunks_many(self, file_hashes: Sequence[str], settings: str
                         ) -> dict[str, list[tuple[int, str, str, dict[str, Any]]]]:
        """:meth:`load_chunks` for many files, 64 files per request."""
        self.flush()
        out: dict[str, list[tuple[int, str, str, dict[str, Any]]]] = {h: [] for h in file_hashes}
        hashes = list(out)
        for start in range(0, len(hashes), 64):
            ids = [self._file_id(settings, h) for h in hashes[start : start + 64]]
            got = self._run("reading chunks", lambda: self._manifest.get(ids=ids, include=["metadatas", "documents"]))
            for meta, doc in zip(got["metadatas"], got["documents"], strict=True):
                rows = json.loads(doc)
                n_parts = int(meta.get("n_parts", 1))
                if n_parts > 1:
                    part_ids = [self._file_id(settings, meta["file_hash"], i) for i in range(1, n_parts)]
                    more = self._run("reading chunks", lambda: self._manifest.get(ids=part_ids, include=["documents"]))
                    docs = dict(zip(more["ids"], more["documents"], strict=True))
                    for part_id in part_ids:
                        rows.extend(json.loads(docs[part_id]))
                out[meta["file_hash"]] = [(int(seq), th, text, m) for seq, th, text, m in rows]
        return out

    # ---------------------------------------------------------- embeddings
    def cached_hashes(self, model: str, text_hashes: Sequence[str]) -> set[str]:
        collection = self._vector_collection(model)
        hashes = list(dict.fromkeys(text_hashes))
        found: set[str] = set()
        for start in range(0, len(hashes), self._batch):
            part = hashes[start : start + self._batch]
            found.update(self._run("looking up cached vectors", lambda: collection.get(ids=part, include=[]))["ids"])
        return found

    def load_vectors(self, model: str, text_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        collection = self._vector_collection(model)
        hashes = list(dict.fromkeys(text_hashes))
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(hashes), self._batch):
            part = hashes[start : start + self._batch]
            got = self._run("reading vectors", lambda: collection.get(ids=part, include=["embeddings"]))
            for th, vec in zip(got["ids"], got["embeddings"], strict=True):
                out[th] = np.asarray(vec, dtype=np.float32)
        return out

    def store_vectors(self, model: str, text_hashes: Sequence[str], vectors: np.ndarray) -> None:
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        collection = self._vector_collection(model)
        for start in range(0, len(text_hashes), self._batch):
            ids = list(text_hashes[start : start + self._batch])
            part = matrix[start : start + self._batch]
            try:
                self._run(f"storing {len(ids)} vectors", lambda: collection.upsert(ids=ids, embeddings=part))
            except self._chromadb.errors.ChromaError as exc:
                if "dimension" in str(exc).lower():
                    raise IndexMismatchError(
                        f"{self.server} holds vectors of another size for {model!r} ({exc}); use another "
                        "collection for a different model configuration") from exc
                raise

    # ------------------------------------------------------------ corpora
    def _corpus_id(self, source_key: str, namespace: str) -> str:
        return f"k|{_h(source_key + '|' + namespace, 32)}"

    def corpus(self, source_key: str, namespace: str) -> tuple[str, dict[str, str], str | None] | None:
        got = self._run("reading the corpus state", lambda: self._manifest.get(
            ids=[self._corpus_id(source_key, namespace)], include=["metadatas", "documents"]))
        if not got["ids"]:
            return None
        meta = got["metadatas"][0]
        return meta["state_key"], json.loads(got["documents"][0]), meta.get("snapshot") or None

    def snapshots_in_use(self) -> set[str]:
        got = self._get_all("reading the corpus states", _where(kind="corpus"), ["metadatas"])
        return {m["snapshot"] for m in got["metadatas"] if m.get("snapshot")}

    def store_corpus(self, source_key: str, namespace: str, state_key: str, files: dict[str, str],
                     snapshot: str | None) -> None:
        """Replace the corpus state with one upsert (atomic per record)."""
        self.flush()
        record = {"kind": "corpus", "state_key": state_key, "snapshot": snapshot or "",
                  "namespace": namespace[:500], "source_key": source_key}
        self._run("committing the corpus state", lambda: self._manifest.upsert(
            ids=[self._corpus_id(source_key, namespace)], embeddings=[_ONE],
            documents=[json.dumps(files, ensure_ascii=False)], metadatas=[record]))

    # -------------------------------------------------------------- search
    def knn(self, model: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The ``k`` nearest stored vectors of ``model`` (HNSW, cosine): ``[(text_hash, similarity)]``."""
        collection = self._vector_collection(model)
        query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        got = self._run("searching vectors", lambda: collection.query(query_embeddings=query, n_results=int(k),
                                                                       include=["distances"]))
        return [(th, 1.0 - float(d)) for th, d in zip(got["ids"][0], got["distances"][0], strict=True)]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.flush()
        self.close_local()
