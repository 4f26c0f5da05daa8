"""Qdrant: in-process (``":memory:"`` or a folder) and on a server (``backend: qdrant``, ``qdrant://``).

One point per chunk in a cosine collection: the point id is the UUIDv5 (URL namespace) of the
chunk id, the vector the unit vector, the payload ``chunk_id``, ``text`` and the chunk metadata
as plain keys, so Qdrant's own filters and tools see them. The index's state lives in a side
collection ``<collection>-akasha-state``.

An existing collection is used after checking its width and the embedder its points record;
other tools' points (LangChain's ``page_content`` + ``metadata``) are read too, and another
distance is re-scored by cosine. YAML keys: ``collection`` (astromesh), ``url``
(http://localhost:6333; ``":memory:"`` runs in-process), ``api_key``. Needs the ``qdrant`` extra.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import math
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from akasha.embeddings.base import normalize_rows
from akasha.errors import ConfigError, MissingExtraError
from akasha.retrieval.bm25 import saturation
from akasha.retrieval.tokenize import counts_in_query, is_compound
from akasha.retry import Retry
from akasha.stores.base import BaseStore, T, batches, check_query, flat_metadata, metadata_from_flat, scalar_filters
from akasha.stores.query import AVERAGE_TOKENS, SearchRequest, lexical_tokenizer, rank_hits
from akasha.stores.redact import redact_url
from akasha.types import Chunk, Hit

log = logging.getLogger(__name__)
STATE_SUFFIX = "-akasha-state"
_RESERVED = frozenset({"chunk_id", "text"})
#: The sparse vector holding each text's BM25-style term weights (the collection applies the IDF modifier).
LEXICAL_VECTOR = "akasha-lexical"


def term_index(term: str) -> int:
    """A term's sparse-vector index: the first 4 bytes of its blake2b hash (collisions are vanishingly rare)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=4).digest(), "big")


def term_weights(tokens: list[str]) -> tuple[list[int], list[float]]:
    """``(indices, values)`` of a text's sparse vector: akasha's BM25 saturated term frequency per term.

    The average length is the fixed :data:`AVERAGE_TOKENS` (Qdrant keeps no corpus statistics but the IDF).
    """
    counts: dict[int, int] = {}
    for token in tokens:
        index = term_index(token)
        counts[index] = counts.get(index, 0) + 1
    indices = sorted(counts)
    return indices, [float(saturation(counts[i], len(tokens), AVERAGE_TOKENS)) for i in indices]


def point_id(chunk_id: str) -> str:
    """The Qdrant point id of a chunk: UUIDv5 of the chunk id in the URL namespace."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, chunk_id))


def _json_native(value: Any) -> bool:
    """A value a Qdrant payload keeps as it is (JSON: scalars, None, lists, string-keyed dicts)."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_json_native(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_native(v) for k, v in value.items())
    return False


def _is_auth_error(exc: BaseException) -> bool:
    return getattr(exc, "status_code", None) in (401, 403) or "unauthorized" in str(exc).lower()


def _chunk(point: Any) -> Chunk:
    payload = dict(point.payload or {})
    if "chunk_id" in payload:
        chunk_id, text = str(payload.pop("chunk_id")), str(payload.pop("text", "") or "")
        nested = payload.get("metadata")
        if isinstance(nested, dict) and set(payload) <= {"doc_id", "metadata"}:  # the previous release's payload
            return Chunk(chunk_id, text, dict(nested))
        return Chunk(chunk_id, text, metadata_from_flat(payload))
    # Written by another tool: LangChain keeps page_content + metadata.
    text = next((payload[k] for k in ("page_content", "text", "document") if isinstance(payload.get(k), str)), "")
    nested = payload.get("metadata")
    meta = dict(nested) if isinstance(nested, dict) else {
        k: v for k, v in payload.items() if k not in ("page_content", "text", "document")}
    return Chunk(str(point.id), text, meta)


def _server_address(url: str, api_key: str | None) -> tuple[str, str | None, dict[str, str]]:
    """``(url without user info, api key, headers)`` for a server URL that may hold ``user:password@``.

    qdrant-client ignores a URL's user info (and repeats the URL in its logs), so it is taken out:
    ``http://:KEY@host`` is the API key unless ``api_key`` is given; a user name and password are for
    a proxy in front and go as ``Authorization: Basic``.
    """
    from akasha.providers.credentials import basic_value, split_credentials

    address, credentials = split_credentials(url)
    if credentials is None:
        return url, api_key, {}
    user, password = credentials
    if not user and api_key is None:
        return address, password or None, {}
    return address, api_key, {"Authorization": basic_value(credentials)}


class QdrantStore(BaseStore):
    """Chunks as Qdrant points (cosine distance, payload = text + flat metadata)."""

    def __init__(
        self,
        dimension: int | None = None,
        collection: str = "astromesh",
        url: str | None = "http://localhost:6333",
        api_key: str | None = None,
        *,
        path: str | Path | None = None,
        client: Any = None,
        embedder: str | None = None,
        retry: Retry | None = None,
        display: str | None = None,
        lazy: bool = False,
    ) -> None:
        try:
            from qdrant_client import models
        except ImportError:
            raise MissingExtraError("qdrant-client", "qdrant", "the Qdrant store") from None

        super().__init__(dimension, embedder)
        self._models = models
        self.collection = collection
        self._server = client is None and path is None and url not in (None, ":memory:")
        self._headers: dict[str, str] = {}
        if self._server:
            url, api_key, self._headers = _server_address(str(url), api_key)
        self._url, self._api_key, self._path = url, api_key, path
        where = Path(path).expanduser() if path is not None else redact_url(str(url)) if self._server else "memory"
        self.name = display or f"qdrant:{where}/{collection}"  # a key in the URL never shows
        self.retry = retry or Retry()
        self._lock = threading.RLock()
        self._client = client
        self._opened = False
        self._exists = False
        self._vector_name: str | None = None
        self._has_lexical = False  # the collection has akasha's sparse lexical vector
        self._warned = False  # said once that an earlier release's collection has no lexical side
        self._cosine = True
        self._state_ready = False
        if not lazy:
            self._ready()

    # ----------------------------------------------------------- connection
    @property
    def client(self) -> Any:
        """The Qdrant client, created on first use."""
        if self._client is None:
            import qdrant_client

            if self._path is not None:
                self._client = qdrant_client.QdrantClient(path=str(Path(self._path).expanduser()))
            elif not self._server:
                self._client = qdrant_client.QdrantClient(location=":memory:")
            else:
                # ``metadata``: headers on every REST (and gRPC) request, in every qdrant-client since 1.9
                extra: dict[str, Any] = {"metadata": self._headers} if self._headers else {}
                self._client = qdrant_client.QdrantClient(url=self._url, api_key=self._api_key, **extra)
        return self._client

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """Run one client call; a server's calls are retried (bounded) and auth errors named."""
        if not self._server:
            with self._lock:
                return fn()
        import httpx
        from qdrant_client.http.exceptions import ResponseHandlingException

        return self.retry.run(fn, server=f"the Qdrant server {self.name}", what=what,
                              transient=(httpx.TransportError, ConnectionError, ResponseHandlingException),
                              auth=_is_auth_error, hint="Pass the API key: token=..., qdrant://:KEY@host:port/"
                              "collection or $QDRANT_API_KEY", lock=self._lock)

    def _ready(self) -> bool:
        """True when the collection exists; the first call checks it (width, distance, recorded embedder), or
        creates it when the width is known."""
        if not self._opened:
            self._opened = True
            if self._call("opening the collection", lambda: self.client.collection_exists(self.collection)):
                self._exists = True
                self._inspect()
            elif self.dimension is not None:
                self._create(self.dimension)
        return self._exists

    def _inspect(self) -> None:
        m = self._models
        info = self._call("reading the collection", lambda: self.client.get_collection(self.collection))
        vectors = info.config.params.vectors
        if isinstance(vectors, dict):
            if len(vectors) != 1:
                raise ConfigError(f"Qdrant collection {self.collection!r} ({self.name}) has several named vectors "
                                  f"({', '.join(sorted(vectors))}); akasha uses collections with one vector")
            self._vector_name, vectors = next(iter(vectors.items()))
        self._has_lexical = LEXICAL_VECTOR in (info.config.params.sparse_vectors or {})
        self._cosine = vectors.distance == m.Distance.COSINE
        points, _ = self._call("reading the collection", lambda: self.client.scroll(
            self.collection, limit=1, with_payload=["embedder"], with_vectors=False,
            scroll_filter=m.Filter(must_not=[m.IsEmptyCondition(is_empty=m.PayloadField(key="embedder"))])))
        recorded = (points[0].payload or {}).get("embedder") if points else None
        self._adopt(f"Qdrant collection {self.collection!r} ({self.name})", int(vectors.size), recorded, "collection")
        if not self._cosine:
            log.info("Qdrant collection %s uses %s distance: akasha re-scores its candidates by cosine",
                     self.collection, vectors.distance)

    def _create(self, dimension: int) -> None:
        m = self._models
        self._call("creating the collection", lambda: self.client.create_collection(
            collection_name=self.collection, vectors_config=m.VectorParams(size=dimension, distance=m.Distance.COSINE),
            sparse_vectors_config={LEXICAL_VECTOR: m.SparseVectorParams(modifier=m.Modifier.IDF)}))
        self._has_lexical = True
        if self._server:  # payload indexes (local mode has none and would warn)
            for key in ("doc_id", "content_hash", "embedder", "source"):
                self._call("indexing the payload", functools.partial(self.client.create_payload_index,
                    self.collection, field_name=key, field_schema=m.PayloadSchemaType.KEYWORD))
        self._exists = True
        self.dimension = dimension

    # --------------------------------------------------------------- helpers
    def _point_vectors(self, row: np.ndarray, text: str, tokenize: Callable[[str], list[str]] | None) -> Any:
        """A point's dense vector, and its sparse lexical vector when the collection has one."""
        if tokenize is None:
            return {self._vector_name: row.tolist()} if self._vector_name else row.tolist()
        indices, values = term_weights(tokenize(text))
        sparse = self._models.SparseVector(indices=indices, values=values)
        return {self._vector_name or "": row.tolist(), LEXICAL_VECTOR: sparse}

    def _row(self, point: Any) -> np.ndarray:
        vector = point.vector
        if isinstance(vector, dict):
            vector = vector.get(self._vector_name or "", next(iter(vector.values())))
        return np.asarray(vector, dtype=np.float32)

    def _filter(self, filters: Mapping[str, Any] | None) -> Any:
        """Qdrant's filter for equality on each key (a float as a one-point range: MatchValue takes no floats)."""
        if not filters:
            return None
        m = self._models
        return m.Filter(must=[m.FieldCondition(key=k, range=m.Range(gte=v, lte=v)) if isinstance(v, float)
                              else m.FieldCondition(key=k, match=m.MatchValue(value=v)) for k, v in filters.items()])

    def _point_ids(self, ids: list[str]) -> dict[str, str]:
        """Point id -> chunk id; a chunk id that is itself a UUID may also be a point of another tool."""
        out = {point_id(i): i for i in ids}
        for i in ids:
            with contextlib.suppress(ValueError):
                out.setdefault(str(uuid.UUID(i)), i)
        return out

    def _retrieve(self, ids: list[str], *, payload: bool) -> dict[str, Any]:
        """Chunk id -> point, for the points that exist."""
        if not self._ready():
            return {}
        wanted = self._point_ids(ids)
        points = self._call("reading points", lambda: self.client.retrieve(
            self.collection, ids=list(wanted), with_payload=payload))
        found: dict[str, Any] = {}
        for point in points:
            chunk_id = wanted.get(str(point.id))
            if chunk_id is not None:
                found.setdefault(chunk_id, point)
        return found

    def _scroll(self, flt: Any, *, vectors: bool, payload: Any, batch: int = 1000) -> Iterator[Any]:
        offset = None
        while True:
            points, offset = self._call("reading points", lambda: self.client.scroll(
                self.collection, scroll_filter=flt, limit=batch, offset=offset, with_payload=payload,
                with_vectors=[self._vector_name] if (vectors and self._vector_name) else vectors))
            yield from points
            if offset is None:
                return

    # --------------------------------------------------------------- records
    def _upsert(self, chunks: list[Chunk], matrix: np.ndarray) -> None:
        if not self._ready():
            self._create(int(matrix.shape[1]))
        m = self._models
        tokenize = lexical_tokenizer(self.lexical_tokenizer) if self._has_lexical else None
        points = [m.PointStruct(id=point_id(c.id), vector=self._point_vectors(row, c.text, tokenize),
                                payload={"chunk_id": c.id, "text": c.text,
                                         **flat_metadata(c, keep=_json_native, reserved=_RESERVED)})
                  for c, row in zip(chunks, matrix, strict=True)]
        for part in batches(points, 512):
            self._call(f"writing {len(part)} chunks", lambda: self.client.upsert(self.collection, points=part,
                                                                                  wait=True))

    def _remove(self, ids: list[str]) -> int:
        found = self._retrieve(ids, payload=False)
        if found:
            selector = self._models.PointIdsList(points=[p.id for p in found.values()])
            self._call(f"deleting {len(found)} chunks", lambda: self.client.delete(
                self.collection, points_selector=selector, wait=True))
        return len(found)

    def _fetch(self, ids: list[str]) -> list[Chunk]:
        found = self._retrieve(ids, payload=True)
        return [_chunk(found[i]) for i in ids if i in found]

    def _vectors_for(self, hashes: list[str], embedder: str) -> dict[str, np.ndarray]:
        if not self._ready():
            return {}
        m = self._models
        out: dict[str, np.ndarray] = {}
        if not self._server:
            # In-process Qdrant checks MatchAny by list membership (points x hashes): one pass with a set is cheaper.
            wanted = set(hashes)
            ids: dict[Any, str] = {}
            for point in self._scroll(None, vectors=False, payload=["content_hash", "embedder"], batch=5000):
                payload = point.payload or {}
                content_hash = payload.get("content_hash")
                if content_hash in wanted and payload.get("embedder", self.embedder) == embedder:
                    wanted.discard(content_hash)
                    ids[point.id] = content_hash
            for part in batches(list(ids), 1000):
                for point in self._call("reading vectors", functools.partial(self.client.retrieve,
                        self.collection, ids=part, with_payload=False,
                        with_vectors=[self._vector_name] if self._vector_name else True)):
                    out.setdefault(ids[point.id], self._row(point))
        else:
            for part in batches(hashes, 1000):
                must = [m.FieldCondition(key="content_hash", match=m.MatchAny(any=part))]
                if self.embedder != embedder:
                    must.append(m.FieldCondition(key="embedder", match=m.MatchValue(value=embedder)))
                for point in self._scroll(m.Filter(must=must), vectors=True, payload=["content_hash"]):
                    out.setdefault(str(point.payload["content_hash"]), self._row(point))
        return {h: normalize_rows(v.reshape(1, -1))[0] for h, v in out.items()}

    def _nearest(self, query: np.ndarray, k: int, filters: dict[str, Any] | None) -> list[tuple[Chunk, float]]:
        if not self._ready():
            return []
        if filters and not scalar_filters(filters):
            return self._nearest_by_scan(query, k, filters)
        limit = k if self._cosine else max(4 * k, k + 32)
        points = self._call("searching", lambda: self.client.query_points(
            self.collection, query=query.tolist(), using=self._vector_name, limit=limit,
            query_filter=self._filter(filters), with_payload=True, with_vectors=not self._cosine)).points
        if self._cosine:
            return [(_chunk(p), float(p.score)) for p in points]
        return self._by_cosine([_chunk(p) for p in points], [self._row(p) for p in points], query, k)

    @property
    def capabilities(self) -> frozenset[str]:  # type: ignore[override]  # computed, where BaseStore has a plain attribute
        """Dense always; lexical when the collection has akasha's sparse vector (collections akasha creates)."""
        # never connects here (a YAML store is built offline); a collection akasha creates gets the lexical vector
        both = not self._opened or self._has_lexical or not self._exists
        return frozenset({"dense", "lexical"}) if both else frozenset({"dense"})

    def query(self, request: SearchRequest) -> list[Hit]:
        """Both sides in one Query API call (a dense and a sparse request), fused by akasha's fusion; at most
        ``pool`` points per side come back."""
        if not self._ready():
            return []
        m = self._models
        flt = self._filter(request.filters) if request.filters and scalar_filters(request.filters) else None
        if request.filters and flt is None:
            return super().query(request)  # filters Qdrant cannot evaluate: the scanning fallback
        searches, sides = [], []
        if request.mode in ("dense", "hybrid") and request.vector is not None and self._cosine:
            vector = check_query(request.vector, self.dimension)
            searches.append(m.QueryRequest(query=vector.tolist(), using=self._vector_name, limit=request.pool,
                                           filter=flt, with_payload=True))
            sides.append("dense")
        if request.mode in ("lexical", "hybrid") and request.tokens and self._has_lexical:
            indices = sorted({term_index(t) for t in self._scoring_terms(request.tokens)})
            searches.append(m.QueryRequest(query=m.SparseVector(indices=indices, values=[1.0] * len(indices)),
                                           using=LEXICAL_VECTOR, limit=request.pool, filter=flt, with_payload=True))
            sides.append("lexical")
        elif request.mode in ("lexical", "hybrid") and request.tokens and not self._warned:
            self._warned = True
            log.warning("Qdrant collection %s has no lexical vector (an earlier release created it): its searches "
                        "rank by vectors alone; index into a new collection to get the lexical side", self.name)
        if not searches:
            return super().query(request)
        answers = self._call("searching", lambda: self.client.query_batch_points(self.collection, requests=searches))
        found = {side: [(_chunk(p), float(p.score)) for p in answer.points] for side, answer in zip(sides, answers,
                                                                                                  strict=True)}
        return rank_hits(found.get("dense", []), found.get("lexical", []), request)

    def _scoring_terms(self, tokens: tuple[str, ...]) -> list[str]:
        """``tokens`` less the compounds more than one point holds (:func:`~akasha.retrieval.tokenize.counts_in_query`).

        Qdrant applies the IDF itself and reports no document frequency, so each compound of the question
        (``list.sort``; most questions have none) is looked up first: one batched request, two points at most each.
        """
        compounds = [t for t in dict.fromkeys(tokens) if is_compound(t)]
        if not compounds:
            return list(tokens)
        m = self._models
        probes = [m.QueryRequest(query=m.SparseVector(indices=[term_index(t)], values=[1.0]), using=LEXICAL_VECTOR,
                                 limit=2, with_payload=False) for t in compounds]
        answers = self._call("searching", lambda: self.client.query_batch_points(self.collection, requests=probes))
        held = {t: len(answer.points) for t, answer in zip(compounds, answers, strict=True)}
        return [t for t in tokens if counts_in_query(t, held.get(t, 0))]

    def _scan(self, batch: int) -> Iterator[tuple[list[Chunk], np.ndarray]]:
        if not self._ready():
            return
        chunks: list[Chunk] = []
        rows: list[np.ndarray] = []
        for point in self._scroll(None, vectors=True, payload=True, batch=batch):
            chunks.append(_chunk(point))
            rows.append(self._row(point))
            if len(chunks) == batch:
                yield chunks, normalize_rows(np.stack(rows))
                chunks, rows = [], []
        if chunks:
            yield chunks, normalize_rows(np.stack(rows))

    def _ids_of_documents(self, doc_ids: list[str]) -> list[str]:
        if not self._ready():
            return []
        m = self._models
        found: dict[str, None] = {}
        for part in batches(doc_ids, 1000):
            flt = m.Filter(must=[m.FieldCondition(key="doc_id", match=m.MatchAny(any=part))])
            for point in self._scroll(flt, vectors=False, payload=["chunk_id"]):
                found[str((point.payload or {}).get("chunk_id", point.id))] = None
        # Points written by other tools carry no doc_id: an id without '#' is its own document.
        plain = [d for d in doc_ids if "#" not in d]
        if plain:
            found.update(dict.fromkeys(self._retrieve(plain, payload=False)))
        return list(found)

    def _count(self) -> int:
        if not self._ready():
            return 0
        return int(self._call("counting points", lambda: self.client.count(self.collection, exact=True)).count)

    # ------------------------------------------------------------- the state
    def _load_state(self, key: str) -> dict[str, Any] | None:
        name = f"{self.collection}{STATE_SUFFIX}"
        if not self._state_ready and not self._call("reading the index state",
                                                    lambda: self.client.collection_exists(name)):
            return None
        self._state_ready = True
        points = self._call("reading the index state", lambda: self.client.retrieve(
            name, ids=[point_id(f"akasha-state:{key}")], with_payload=True))
        return json.loads(points[0].payload["state"]) if points else None

    def _save_state(self, key: str, state: dict[str, Any]) -> None:
        m = self._models
        name = f"{self.collection}{STATE_SUFFIX}"
        if not self._state_ready:
            if not self._call("opening the state collection", lambda: self.client.collection_exists(name)):
                self._call("creating the state collection", lambda: self.client.create_collection(
                    collection_name=name, vectors_config=m.VectorParams(size=1, distance=m.Distance.DOT)))
            self._state_ready = True
        point = m.PointStruct(id=point_id(f"akasha-state:{key}"), vector=[1.0],
                              payload={"key": key, "state": json.dumps(state, ensure_ascii=False)})
        self._call("committing the index state", lambda: self.client.upsert(name, points=[point], wait=True))

    def close(self) -> None:
        """Close the client (an in-process folder is released for other clients)."""
        if self._client is not None:
            self._client.close()
            self._client = None


def make_qdrant_store(config: dict[str, Any], context: Any) -> QdrantStore:
    """Registry factory for ``backend: qdrant``; the vector size is the embedding dimension (no network at build)."""
    url = str(config.get("url") or "http://localhost:6333")
    return QdrantStore(dimension=context.dimension, collection=str(config.get("collection") or "astromesh"),
                       url=url, api_key=config.get("api_key"), lazy=url != ":memory:")


__all__ = ["QdrantStore", "make_qdrant_store", "point_id"]
