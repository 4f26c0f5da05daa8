"""The shared index on a Chroma server (``vector_store="chroma://host:port/collection"``).

Chroma has no transactions and no locks, so everything akasha writes there is
an *immutable, content-keyed record* and every write is an idempotent upsert:
two machines indexing at once write identical records, and the only mutable
record per corpus (its committed state) is replaced by a single upsert, so
readers always see one complete state or the previous one.

Collections, for the URL's collection name ``N``:

``N-manifest``  the shared manifest; records carry a dummy 1-d vector and
                ``kind`` metadata: ``parsed`` (per file hash + chunk settings:
                status, reason, chunk count - written *after* the file's chunks,
                so it marks them complete), ``chunk`` (text as the document,
                text hash, seq, metadata JSON) and ``corpus`` (files JSON as the
                document, state key);
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
from akasha.index.servers import ServerURL

log = logging.getLogger(__name__)
MODEL_KEY = "embedding_model"
_ONE = [1.0]


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
        self._client = self._run("connecting", self._connect)
        self._manifest = self._run("opening the manifest collection", lambda: self._client.get_or_create_collection(
            f"{spec.name}-manifest", metadata={"akasha_manifest": 1}, embedding_function=None))
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
                name, metadata={"hnsw:space": "cosine", MODEL_KEY: model[:500]}, embedding_function=None))
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
    def parsed_status(self, settings: str) -> dict[str, tuple[str, str | None]]:
        got = self._get_all("reading the parsed files", _where(kind="parsed", settings=settings), ["metadatas"])
        return {m["file_hash"]: (m["status"], m.get("reason") or None) for m in got["metadatas"]}

    def store_parsed(self, file_hash: str, settings: str, chunks: Sequence[tuple[int, str, str, dict[str, Any]]],
                     status: str = "ok", reason: str | None = None) -> None:
        """Upsert the file's chunks, drop any extra old ones, then the parsed record that marks them complete."""
        sh = _h(settings, 12)
        for start in range(0, len(chunks), self._batch):
            part = chunks[start : start + self._batch]
            ids = [f"c|{sh}|{file_hash}|{seq}" for seq, *_ in part]
            metas = [{"kind": "chunk", "settings": settings, "file_hash": file_hash, "seq": int(seq),
                      "text_hash": th, "meta": json.dumps(meta, ensure_ascii=False, default=str)}
                     for seq, th, _text, meta in part]
            self._run(f"storing the chunks of file {file_hash[:12]}", lambda: self._manifest.upsert(
                ids=ids, embeddings=[_ONE] * len(ids), documents=[t for _s, _h2, t, _m in part], metadatas=metas))
        stale = {"$and": [{"kind": "chunk"}, {"file_hash": file_hash}, {"settings": settings},
                          {"seq": {"$gte": len(chunks)}}]}
        self._run("dropping old chunks", lambda: self._manifest.delete(where=stale))
        record = {"kind": "parsed", "settings": settings, "file_hash": file_hash, "status": status,
                  "reason": reason or "", "n_chunks": len(chunks)}
        self._run("recording a parsed file", lambda: self._manifest.upsert(
            ids=[f"p|{sh}|{file_hash}"], embeddings=[_ONE], metadatas=[record]))

    def load_chunks(self, file_hash: str, settings: str) -> list[tuple[int, str, str, dict[str, Any]]]:
        got = self._get_all("reading chunks", _where(kind="chunk", file_hash=file_hash, settings=settings),
                            ["metadatas", "documents"])
        rows = [(int(m["seq"]), m["text_hash"], doc or "", json.loads(m["meta"]))
                for m, doc in zip(got["metadatas"], got["documents"], strict=True)]
        return sorted(rows, key=lambda r: r[0])

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
        self.close_local()
