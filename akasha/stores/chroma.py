"""Chroma: one collection format for a folder, a server and memory (``backend: chroma``, ``chroma://``).

A collection in cosine space holds one record per chunk, the way Chroma's own tools and
LangChain's ``Chroma`` expect it: ``ids`` = chunk ids, ``documents`` = texts, ``metadatas`` =
the chunk metadata as flat keys (values Chroma cannot hold go to ``akasha_json`` as JSON),
``embeddings`` = unit vectors. The collection metadata records the embedder
(``embedding_model``) and the width (``embedding_dimension``); the index's state lives in a
side collection ``<collection>-akasha-state``.

An existing collection (akasha's, plain chromadb's or LangChain's, maybe in ``l2`` space) is
used as it is after checking its width and recorded embedder, or refused, never shadowed by a
sibling. :func:`open_chroma_folder` never creates a Chroma folder unless asked to.

YAML keys: ``collection`` (astromesh), ``host`` + ``port`` (8000) for a server, else
``persist_directory`` for a folder, else in memory. A server needs only the thin
``chromadb-client`` (``light`` extra); a folder or memory the full ``chromadb`` (``chroma``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import re
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from akasha.embeddings.base import normalize_rows
from akasha.errors import ConfigError, MissingExtraError
from akasha.retrieval.bm25 import idf, saturation
from akasha.retrieval.tokenize import counts_in_query
from akasha.retry import Retry
from akasha.stores.base import BaseStore, T, batches, flat_metadata, metadata_from_flat, scalar_filters
from akasha.stores.query import AVERAGE_TOKENS, lexical_tokenizer
from akasha.types import Chunk

log = logging.getLogger(__name__)

#: Collection metadata keys: the embedder identity and the vector width (shared with the previous release).
MODEL_KEY = "embedding_model"
DIMENSION_KEY = "embedding_dimension"
STATE_SUFFIX = "-akasha-state"
_STATE_PART = 1_000_000  # characters of state JSON per record
_SQLITE = "chroma.sqlite3"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,496}[A-Za-z0-9]$")
#: What a local (folder or in-memory) Chroma store is, in errors.
_LOCAL = "a local Chroma store (a folder or in memory)"


def import_chromadb(local: bool) -> Any:
    """The ``chromadb`` module; for a ``local`` store the full package, not the HTTP-only ``chromadb-client``.

    MissingExtraError names the extra: ``light`` for a server, ``chroma`` for a local store.
    """
    try:
        import chromadb
    except ImportError:
        if local:
            raise MissingExtraError("chromadb", "chroma", _LOCAL) from None
        raise MissingExtraError("chromadb-client (or chromadb)", "light", "a Chroma server") from None
    if local and getattr(chromadb, "is_client", False):
        # Installing chromadb next to chromadb-client keeps the thin client's marker file
        # (chromadb/is_thin_client.py), so both are removed before chromadb is installed.
        raise MissingExtraError(
            "the full chromadb package (chromadb-client, which the light extra installs, reaches Chroma servers "
            "only)", "chroma", _LOCAL,
            install="pip uninstall -y chromadb-client chromadb && pip install 'akasha-rag[chroma]' "
                    "(or use a Chroma server: vector_store='chroma://host:port/collection')")
    return chromadb


def _settings() -> Any:
    from chromadb.config import Settings

    # Telemetry stays off; Chroma refuses two in-process clients of one folder whose settings differ.
    return Settings(anonymized_telemetry=False)


def open_chroma_folder(path: str | Path, create: bool) -> Any:
    """A ``chromadb.PersistentClient`` on ``path``; with ``create=False`` only if a Chroma store is already there.

    A folder without ``chroma.sqlite3`` (say, a documents folder) raises ConfigError; nothing is written there.
    """
    chromadb = import_chromadb(local=True)
    folder = Path(path).expanduser()
    if not create and not (folder / _SQLITE).is_file():
        raise ConfigError(f"{str(folder)!r} is not a Chroma folder (it has no {_SQLITE}); name the folder a Chroma "
                          "PersistentClient wrote, or let akasha create a new store in a folder of its own")
    if create:
        folder.mkdir(parents=True, exist_ok=True)
    try:
        return chromadb.PersistentClient(path=str(folder), settings=_settings())
    except ValueError:  # this process already opened the folder with other settings: share that client
        return chromadb.PersistentClient(path=str(folder))


def _is_auth_error(exc: BaseException) -> bool:
    with contextlib.suppress(ImportError):
        from chromadb.errors import AuthorizationError, ChromaAuthError

        if isinstance(exc, (AuthorizationError, ChromaAuthError)):
            return True
    response = getattr(exc, "response", None)
    if getattr(response, "status_code", None) in (401, 403):
        return True
    text = str(exc).lower()
    return any(word in text for word in ("unauthorized", "forbidden", "401", "403", "autherror"))


def _where(filters: dict[str, Any] | None) -> dict[str, Any] | None:
    if not filters:
        return None
    clauses = [{key: {"$eq": value}} for key, value in filters.items()]
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _contains(term: str) -> dict[str, Any]:
    """Chroma's full-text filter for a lower-cased term as texts write it: as is, Capitalised or UPPER."""
    clauses = [{"$contains": form} for form in dict.fromkeys((term, term.capitalize(), term.upper()))]
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


def _space(collection: Any) -> str:
    """The collection's distance function (``cosine``, ``l2`` or ``ip``; Chroma's default is ``l2``)."""
    config = getattr(collection, "configuration_json", None) or {}
    for section in ("hnsw", "spann"):
        space = (config.get(section) or {}).get("space") if isinstance(config, dict) else None
        if space:
            return str(space)
    return str((collection.metadata or {}).get("hnsw:space") or "l2")


def _chunks(ids: Any, documents: Any, metadatas: Any) -> list[Chunk]:
    return [Chunk(id=i, text=d or "", metadata=metadata_from_flat(m))
            for i, d, m in zip(ids, _rows(documents), _rows(metadatas), strict=True)]


def _rows(value: Any) -> list[Any]:
    return [] if value is None else list(value)


class ChromaStore(BaseStore):
    """Chunks as plain Chroma records (documents + metadatas + embeddings) in one collection."""

    def __init__(
        self,
        collection: str = "astromesh",
        *,
        path: str | Path | None = None,
        create: bool = True,
        create_collection: bool = True,
        host: str | None = None,
        port: int = 8000,
        ssl: bool = False,
        token: str | None = None,
        header: str | None = None,
        tenant: str | None = None,
        database: str | None = None,
        client: Any = None,
        embedder: str | None = None,
        dimension: int | None = None,
        retry: Retry | None = None,
        display: str | None = None,
        persist_directory: str | Path | None = None,
    ) -> None:
        super().__init__(dimension, embedder)
        self._chromadb = import_chromadb(local=client is None and not host)
        import httpx

        path = path if path is not None else persist_directory
        if not isinstance(collection, str) or not _NAME.match(collection) or ".." in collection:
            raise ConfigError(f"Chroma collection name {collection!r} must have 3-498 characters from "
                              "[A-Za-z0-9._-], start and end with a letter or digit, and hold no '..'")
        self._server = bool(host)
        self._unreachable: tuple[type[BaseException], ...] = (httpx.TransportError, ConnectionError)
        self.retry = retry or Retry()
        self._lock = threading.RLock()
        if host:
            self.name = display or f"chroma{'s' if ssl else ''}://{host}:{int(port)}/{collection}"
            self._where_text = f"on the Chroma server {self.name}"
        elif path is not None:
            self.name = display or f"chroma:{Path(path).expanduser()}/{collection}"
            self._where_text = f"in the Chroma folder {str(Path(path).expanduser())!r}"
        else:
            self.name = display or f"chroma:memory/{collection}"
            self._where_text = "in memory"
        #: The collection asked for; ``_name`` is the one in Chroma (made unique per store in memory).
        self.collection_name = collection
        self._name = collection
        if client is None:
            if host:
                client = self._call("connecting", lambda: self._connect(host, int(port), ssl, token, header,
                                                                        tenant, database))
            elif path is not None:
                client = open_chroma_folder(path, create)
            else:
                client = self._chromadb.EphemeralClient(settings=_settings())
                # In-memory clients share one process-wide system: keep each store's collection apart.
                self._name = f"{collection}-{uuid.uuid4().hex[:8]}"
        self.client = client
        self._state: Any = None
        self._legacy: dict[str, Any] = {}
        self.collection = self._call("opening the collection", lambda: self._open(create_collection))
        self._batch = max(1, min(2000, int(self._call("reading the batch size", self.client.get_max_batch_size))))

    # ----------------------------------------------------------- connection
    def _connect(self, host: str, port: int, ssl: bool, token: str | None, header: str | None,
                 tenant: str | None, database: str | None) -> Any:
        headers: dict[str, str] = {}
        if token and (header or "").lower() == "x-chroma-token":
            headers["X-Chroma-Token"] = token
        elif token:
            headers["Authorization"] = f"Bearer {token}"
        options = {k: v for k, v in (("tenant", tenant), ("database", database)) if v}
        try:
            return self._chromadb.HttpClient(host=host, port=port, ssl=ssl, headers=headers or None,
                                             settings=_settings(), **options)
        except ValueError as exc:  # chromadb wraps "connection refused" in a ValueError
            if "connect" in str(exc).lower() and not _is_auth_error(exc):
                raise ConnectionError(str(exc)) from exc
            raise

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """Run one client call; a server's calls are retried (bounded) and auth errors named."""
        if not self._server:
            with self._lock:
                return fn()
        hint = ("Pass the server's token: token=..., chroma://:TOKEN@host:port/collection or $CHROMA_AUTH_TOKEN "
                "(see docs/servers.md)")
        return self.retry.run(fn, server=f"the Chroma server {self.name}", what=what, transient=self._transient,
                              auth=_is_auth_error, hint=hint, lock=self._lock)

    def _transient(self, exc: BaseException) -> bool:
        """Whether a failed call is worth another attempt: the server unreachable, or a segment not on disk yet.

        A Chroma server answers "Nothing found on disk" when a collection another client has just started
        writing is read before its first vectors are persisted; the same read a moment later succeeds.
        """
        if isinstance(exc, self._unreachable):
            return True
        internal = getattr(self._chromadb.errors, "InternalError", None)
        return internal is not None and isinstance(exc, internal) and "Nothing found on disk" in str(exc)

    def _get_collection(self, name: str) -> Any:
        try:
            return self.client.get_collection(name, embedding_function=None)
        except self._chromadb.errors.NotFoundError:
            return None
        except ValueError as exc:  # older chromadb: "Collection x does not exist"
            if "does not exist" in str(exc):
                return None
            raise

    # ------------------------------------------------------- the collection
    def _open(self, create_collection: bool) -> Any:
        """Use the existing collection after checking it, or create one in cosine space."""
        name = self._name
        found = self._get_collection(name)
        if found is None:
            if not create_collection:
                names = sorted(c if isinstance(c, str) else c.name for c in self.client.list_collections())
                raise ConfigError(f"there is no Chroma collection {name!r} {self._where_text}; it has: "
                                  f"{', '.join(names) or 'none'}")
            metadata: dict[str, Any] = {"hnsw:space": "cosine"}
            if self._expected:
                metadata[MODEL_KEY] = self._expected[:1000]
            if self.dimension:
                metadata[DIMENSION_KEY] = self.dimension
            found = self.client.get_or_create_collection(name, metadata=metadata, embedding_function=None)
        self._check(found)
        return found

    def _check(self, collection: Any) -> None:
        """Learn width and embedder from an existing collection; refuse one this store cannot use."""
        meta = dict(collection.metadata or {})
        self._space = _space(collection)
        recorded, width = meta.get(MODEL_KEY), meta.get(DIMENSION_KEY)
        peek = collection.get(limit=1, include=["embeddings", "metadatas"])
        if peek["ids"]:
            rows = _rows(peek.get("embeddings"))
            if not rows or rows[0] is None or len(rows[0]) == 0:
                raise ConfigError(f"Chroma collection {self.collection_name!r} {self._where_text} holds records "
                                  "without embeddings, so akasha cannot search it; name another collection")
            width = len(rows[0])
            metas = _rows(peek.get("metadatas"))
            if recorded is None and metas:
                recorded = (metas[0] or {}).get("embedder")
        self._adopt(f"Chroma collection {self.collection_name!r} {self._where_text}", width, recorded, "collection")
        if peek["ids"] and self._space != "cosine":
            log.info("Chroma collection %s uses %s space: akasha re-scores its candidates by cosine",
                     self.collection_name, self._space)

    def _record_embedder(self, embedder: str, dimension: int) -> None:
        meta = {k: v for k, v in (self.collection.metadata or {}).items() if not k.startswith("hnsw:")}
        if meta.get(MODEL_KEY) == embedder and meta.get(DIMENSION_KEY) == dimension:
            return
        meta.update({MODEL_KEY: embedder[:1000], DIMENSION_KEY: int(dimension)})
        self._call("recording the embedder", lambda: self.collection.modify(metadata=meta))

    # --------------------------------------------------------------- records
    def _upsert(self, chunks: list[Chunk], matrix: np.ndarray) -> None:
        for start in range(0, len(chunks), self._batch):
            part, rows = chunks[start : start + self._batch], matrix[start : start + self._batch]
            self._call(f"writing {len(part)} chunks", lambda: self.collection.upsert(
                ids=[c.id for c in part], embeddings=rows, documents=[c.text for c in part],
                metadatas=[flat_metadata(c) for c in part]))

    def _remove(self, ids: list[str]) -> int:
        removed = 0
        for part in batches(ids, self._batch):
            present = self._call("looking up chunks", lambda: self.collection.get(ids=part, include=[]))["ids"]
            if present:
                self._call(f"deleting {len(present)} chunks", lambda: self.collection.delete(ids=list(present)))
            removed += len(present)
        return removed

    def _fetch(self, ids: list[str]) -> list[Chunk]:
        found: dict[str, Chunk] = {}
        for part in batches(ids, self._batch):
            got = self._call("reading chunks",
                             lambda: self.collection.get(ids=part, include=["documents", "metadatas"]))
            found.update((c.id, c) for c in _chunks(got["ids"], got["documents"], got["metadatas"]))
        return [found[i] for i in ids if i in found]

    def _vectors_for(self, hashes: list[str], embedder: str) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for part in batches(hashes, self._batch):
            clause: dict[str, Any] = {"content_hash": {"$in": part}}
            if self.embedder != embedder:  # a collection of one recorded embedder needs no per-record check
                clause = {"$and": [clause, {"embedder": {"$eq": embedder}}]}
            got = self._call("reading stored vectors", lambda: self.collection.get(
                where=clause, include=["embeddings", "metadatas"]))
            for meta, vec in zip(_rows(got["metadatas"]), _rows(got["embeddings"]), strict=True):
                out.setdefault(str((meta or {}).get("content_hash")), np.asarray(vec, dtype=np.float32))
        missing = [h for h in hashes if h not in out]
        if missing:
            out.update(self._legacy_vectors(missing, embedder))
        return {h: normalize_rows(v.reshape(1, -1))[0] for h, v in out.items()}

    def _legacy_vectors(self, hashes: list[str], embedder: str) -> dict[str, np.ndarray]:
        """Vectors the previous release's server index kept in ``<collection>-v-<hash of the model>``, by text hash."""
        if embedder not in self._legacy:
            name = f"{self.collection_name}-v-{hashlib.sha256(embedder.encode()).hexdigest()[:12]}"
            self._legacy[embedder] = self._call("looking for vectors of the previous release",
                                                lambda: self._get_collection(name))
        legacy = self._legacy[embedder]
        if legacy is None:
            return {}
        out: dict[str, np.ndarray] = {}
        for part in batches(hashes, self._batch):
            got = self._call("reading vectors of the previous release",
                             lambda: legacy.get(ids=part, include=["embeddings"]))
            for text_hash, vec in zip(got["ids"], _rows(got["embeddings"]), strict=True):
                if self.dimension is None or len(vec) == self.dimension:
                    out[text_hash] = np.asarray(vec, dtype=np.float32)
        return out

    def _nearest(self, query: np.ndarray, k: int, filters: dict[str, Any] | None) -> list[tuple[Chunk, float]]:
        if filters and not scalar_filters(filters):
            return self._nearest_by_scan(query, k, filters)  # Chroma's where matches scalars only
        total = int(self._call("counting chunks", self.collection.count))
        if total == 0:
            return []
        cosine = self._space == "cosine"
        # Other spaces rank differently from cosine: over-fetch, then re-score by cosine.
        n = min(total, k if cosine else max(4 * k, k + 32))
        include = ["documents", "metadatas", "distances"] + ([] if cosine else ["embeddings"])
        got = self._call("searching", lambda: self.collection.query(
            query_embeddings=[query.tolist()], n_results=n, where=_where(filters), include=include))
        chunks = _chunks(got["ids"][0], got["documents"][0], got["metadatas"][0])
        if cosine:  # Chroma's cosine distance is 1 - cosine
            return [(c, 1.0 - float(d)) for c, d in zip(chunks, got["distances"][0], strict=True)]
        return self._by_cosine(chunks, got["embeddings"][0], query, k)

    #: Chroma's engine answers the dense side; the lexical side is the bounded fallback of :meth:`_lexical`.
    capabilities = frozenset({"dense", "lexical"})
    lexical_side = True
    #: At most this many of the question's terms are looked up (one request each).
    LEXICAL_TERMS = 8

    def _lexical(self, tokens: tuple[str, ...], k: int, filters: dict[str, Any] | None) -> list[tuple[Chunk, float]]:
        """BM25-style ranking from Chroma's full-text filter, bounded by ``k`` records per term.

        Chroma has no lexical search outside Chroma Cloud, so each term (up to :data:`LEXICAL_TERMS`) is
        looked up with ``$contains`` (as is, Capitalised and UPPER; at most ``k + 1`` records). A term in at
        most ``k`` records gets its exact document frequency and its records become candidates; a more
        common term only adds to the scores of candidates holding it (see docs/servers.md for the cost).
        """
        if not tokens or (filters and not scalar_filters(filters)):
            return []
        total = int(self._call("counting chunks", self.collection.count))
        if total == 0:
            return []
        wanted: dict[str, None] = {}
        frequency: dict[str, int] = {}
        for term in list(dict.fromkeys(tokens))[: self.LEXICAL_TERMS]:  # ids only: a common term costs no texts
            ids = list(self._call("searching texts", functools.partial(
                self.collection.get, where_document=_contains(term), where=_where(filters), limit=k + 1,
                include=[]))["ids"])
            if not counts_in_query(term, len(ids)):
                continue  # a compound several chunks hold: its words score them
            frequency[term] = len(ids) if len(ids) <= k else max(k + 1, total // 10)
            if len(ids) <= k:
                wanted.update(dict.fromkeys(ids))
        if not wanted:
            return []
        got = self._call("reading chunks", lambda: self.collection.get(ids=list(wanted),
                                                                       include=["documents", "metadatas"]))
        candidates = _chunks(got["ids"], got["documents"], got["metadatas"])
        tokenize = lexical_tokenizer(self.lexical_tokenizer)
        weights = {t: float(idf(total, n)) for t, n in frequency.items()}
        scored = []
        for chunk in candidates:
            words = tokenize(chunk.text)
            counts = Counter(word for word in words if word in weights)
            score = sum(weights[t] * saturation(c, len(words), AVERAGE_TOKENS) for t, c in counts.items())
            if score > 0:
                scored.append((chunk, score))
        scored.sort(key=lambda pair: (-pair[1], pair[0].id))
        return scored[:k]

    def _scan(self, batch: int) -> Iterator[tuple[list[Chunk], np.ndarray]]:
        offset = 0
        while True:
            got = self._call("reading chunks", lambda: self.collection.get(
                include=["documents", "metadatas", "embeddings"], limit=batch, offset=offset))
            ids = list(got["ids"])
            if not ids:
                return
            matrix = np.asarray(got["embeddings"], dtype=np.float32).reshape(len(ids), -1)
            yield _chunks(ids, got["documents"], got["metadatas"]), normalize_rows(matrix)
            if len(ids) < batch:
                return
            offset += batch

    def _ids_of_documents(self, doc_ids: list[str]) -> list[str]:
        found: dict[str, None] = {}
        for part in batches(doc_ids, self._batch):
            got = self._call("looking up documents", lambda: self.collection.get(
                where={"doc_id": {"$in": part}}, include=[]))
            found.update(dict.fromkeys(got["ids"]))
            # Records written by other tools carry no doc_id: an id without '#' is its own document.
            plain = [d for d in part if "#" not in d]
            if plain:
                found.update(dict.fromkeys(self._call("looking up documents", lambda: self.collection.get(
                    ids=plain, include=[]))["ids"]))
            # The previous release wrote "<path>#<seq>" records with a source, no doc_id: kept when the id agrees.
            wanted = set(part)
            older = self._call("looking up documents", lambda: self.collection.get(
                where={"source": {"$in": part}}, include=["metadatas"]))
            found.update(dict.fromkeys(i for i, meta in zip(older["ids"], _rows(older["metadatas"]), strict=True)
                                       if "doc_id" not in (meta or {}) and i.rpartition("#")[0] in wanted))
        return list(found)

    def _count(self) -> int:
        return int(self._call("counting chunks", self.collection.count))

    # ------------------------------------------------------------- the state
    def _state_collection(self, create: bool) -> Any:
        if self._state is None:
            name = f"{self._name}{STATE_SUFFIX}"
            self._state = self._call("opening the state collection", lambda: (
                self.client.get_or_create_collection(name, metadata={"akasha_state": 1}, embedding_function=None)
                if create else self._get_collection(name)))
        return self._state

    def _load_state(self, key: str) -> dict[str, Any] | None:
        states = self._state_collection(create=False)
        if states is None:
            return None
        head = self._call("reading the index state", lambda: states.get(ids=[key], include=["documents", "metadatas"]))
        if not head["ids"]:
            return None
        meta, text = head["metadatas"][0] or {}, head["documents"][0] or ""
        n_parts, version = int(meta.get("n_parts", 1)), meta.get("version", "")
        if n_parts > 1:
            ids = [f"{key}|{version}|{i}" for i in range(1, n_parts)]
            parts = self._call("reading the index state", lambda: states.get(ids=ids, include=["documents"]))
            texts = dict(zip(parts["ids"], _rows(parts["documents"]), strict=True))
            if any(i not in texts for i in ids):
                raise ConfigError(f"the index state {key!r} of {self.name} is incomplete (another writer replaced "
                                  "it while this one was reading); run the same call again")
            text += "".join(texts[i] for i in ids)
        return json.loads(text)

    def _save_state(self, key: str, state: dict[str, Any]) -> None:
        states = self._state_collection(create=True)
        text = json.dumps(state, ensure_ascii=False)
        pieces = [text[i : i + _STATE_PART] for i in range(0, len(text), _STATE_PART)] or [""]
        version = uuid.uuid4().hex
        if len(pieces) > 1:  # the parts first: the head record that names them is the commit
            ids = [f"{key}|{version}|{i}" for i in range(1, len(pieces))]
            self._call("writing the index state", lambda: states.upsert(
                ids=ids, embeddings=[[1.0]] * len(ids), documents=pieces[1:],
                metadatas=[{"state_key": key, "version": version, "kind": "part"}] * len(ids)))
        head = {"state_key": key, "version": version, "kind": "head", "n_parts": len(pieces)}
        self._call("committing the index state", lambda: states.upsert(
            ids=[key], embeddings=[[1.0]], documents=[pieces[0]], metadatas=[head]))
        stale = self._call("reading the index state", lambda: states.get(
            where={"$and": [{"state_key": {"$eq": key}}, {"kind": {"$eq": "part"}},
                            {"version": {"$ne": version}}]}, include=[]))["ids"]
        if stale:
            self._call("pruning the index state", lambda: states.delete(ids=list(stale)))

    def close(self) -> None:
        """Chroma clients hold no connection that needs closing; the collection stays as written."""


def make_chroma_store(config: dict[str, Any], context: Any) -> ChromaStore:
    """Registry factory for ``backend: chroma``."""
    return ChromaStore(collection=str(config.get("collection") or "astromesh"), host=config.get("host"),
                       port=int(config.get("port") or 8000), path=config.get("persist_directory"))


__all__ = ["DIMENSION_KEY", "MODEL_KEY", "ChromaStore", "import_chromadb", "make_chroma_store", "open_chroma_folder"]
