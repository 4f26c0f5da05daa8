"""The Store contract every vector store implements, and what all of them share.

A :class:`Store` keeps chunk records (id, text, metadata) with one unit-length float32
vector each, keyed by chunk id; it answers cosine searches and its engine's ``query``
(:mod:`akasha.stores.query`), and keeps the JSON state of the index that writes it, for
every machine sharing the store. :class:`BaseStore` checks the arguments once and adds the
older async API the YAML pipeline awaits; a backend implements the ``_``-methods. Filters
are equality on metadata keys; ``doc_id`` is the chunk's id before the last ``#``.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import json
import math
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from akasha.embeddings.base import normalize_rows
from akasha.errors import IndexMismatchError
from akasha.retrieval.fusion import exact_terms
from akasha.stores.query import SearchRequest, rank_hits
from akasha.types import Chunk, Hit

#: Metadata filters: equality on metadata keys; ``doc_id`` matches the document id.
Filters = Mapping[str, Any]

#: Key under which flat-metadata stores (Chroma, Qdrant) keep values they cannot hold as plain keys, as JSON.
EXTRA_KEY = "akasha_json"

#: Key of the previous release's YAML Chroma records: the whole metadata as JSON (still read).
LEGACY_META_KEY = "_akasha"

_SCALARS = (str, int, float, bool)
T = TypeVar("T")


@runtime_checkable
class Store(Protocol):
    """What the content-keyed index needs from a vector store; :class:`BaseStore` documents each method."""

    name: str
    dimension: int | None
    #: What :meth:`query` answers in the store's engine: a subset of ``{"dense", "lexical", "hybrid"}``.
    capabilities: frozenset[str]

    def query(self, request: SearchRequest) -> list[Hit]: ...
    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None: ...
    def remove(self, ids: Sequence[str]) -> int: ...
    def fetch(self, ids: Sequence[str]) -> list[Chunk]: ...
    def vectors_for(self, content_hashes: Sequence[str], embedder: str) -> dict[str, np.ndarray]: ...
    def nearest(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[Chunk, float]]: ...
    def scan(self, batch: int = 1000) -> Iterator[tuple[list[Chunk], np.ndarray]]: ...
    def ids_of_documents(self, doc_ids: Sequence[str]) -> list[str]: ...
    def count(self) -> int: ...
    def load_state(self, key: str) -> dict[str, Any] | None: ...
    def save_state(self, key: str, state: Mapping[str, Any]) -> None: ...
    def lock(self, timeout: float) -> contextlib.AbstractContextManager[None]: ...
    def close(self) -> None: ...


class Count(int):
    """A record count that can also be awaited: the sync contract and the older async API share ``count``."""

    def __await__(self) -> Generator[Any, None, int]:
        return int(self)
        yield  # pragma: no cover  (makes this a generator: awaiting it returns at once)


# --------------------------------------------------------------------- checks
def check_upsert(chunks: Sequence[Chunk], vectors: np.ndarray, dimension: int | None,
                 where: str = "the store") -> np.ndarray:
    """Validate an upsert before anything is written; returns unit-length float32 rows.

    One finite row per chunk, unique non-empty string ids, and the width of the
    store when it has one (IndexMismatchError, a ValueError, naming ``where``).
    """
    matrix = np.asarray(vectors, dtype=np.float32)
    if len(chunks) == 0:
        return np.zeros((0, dimension or 0), dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != len(chunks):
        raise ValueError(f"got {len(chunks)} chunks but vectors of shape {matrix.shape}; need one row per chunk")
    if dimension is not None and matrix.shape[1] != dimension:
        raise IndexMismatchError(
            f"vectors have {matrix.shape[1]} dimensions but {where} holds {dimension}-dimensional ones; "
            "use the embedder the store was built with, or another collection/table for this one")
    if matrix.shape[1] == 0:
        raise ValueError("got vectors with 0 dimensions")
    if not np.isfinite(matrix).all():
        raise ValueError("got vectors containing NaN or infinity")
    ids = [c.id for c in chunks]
    bad = [i for i in ids if not isinstance(i, str) or not i]
    if bad:
        raise ValueError(f"chunk ids must be non-empty strings, got {bad[:3]!r}")
    if len(set(ids)) != len(ids):
        raise ValueError("got duplicate chunk ids in one write")
    return normalize_rows(matrix)


def check_query(vector: np.ndarray, dimension: int | None) -> np.ndarray:
    """A query vector as one unit-length float32 row of the store's width."""
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    if dimension is not None and query.shape[0] != dimension:
        raise IndexMismatchError(f"query vector has {query.shape[0]} dimensions, the store {dimension}")
    if not np.isfinite(query).all():
        raise ValueError("query vector contains NaN or infinity")
    return normalize_rows(query.reshape(1, -1))[0]


def matches(chunk: Chunk, filters: Filters | None) -> bool:
    """True when every filter key equals the chunk's metadata value (``doc_id`` is the document id)."""
    for key, value in (filters or {}).items():
        actual = chunk.doc_id if key == "doc_id" else chunk.metadata.get(key)
        if actual != value or isinstance(actual, bool) != isinstance(value, bool):  # True == 1, but a flag is no number
            return False
    return True


def first_matching(found: Iterable[tuple[Chunk | None, float]], filters: Filters | None,
                   k: int) -> list[tuple[Chunk, float]]:
    """The first ``k`` of ``found`` (best first) whose chunk is there and :func:`matches` ``filters``."""
    kept = ((chunk, float(score)) for chunk, score in found if chunk is not None and matches(chunk, filters))
    return list(itertools.islice(kept, k))


def scalar_filters(filters: Filters | None) -> bool:
    """True when every filter value is a plain scalar a server can match (str, int, float, bool)."""
    return all(isinstance(v, _SCALARS) for v in (filters or {}).values())


def is_scalar(value: Any) -> bool:
    """A value every flat-metadata store keeps as is: str, int, bool, or a finite float."""
    return isinstance(value, _SCALARS) and not (isinstance(value, float) and not math.isfinite(value))


def flat_metadata(chunk: Chunk, *, keep: Callable[[Any], bool] = is_scalar,
                  reserved: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A chunk's metadata as flat record metadata (Chroma metadatas, Qdrant payloads).

    Values ``keep`` accepts stay plain keys the store's tools and filters see; ``doc_id`` is the chunk's
    document id. The rest (other values, ``reserved`` names, a user ``doc_id`` that differs) goes to
    :data:`EXTRA_KEY` as JSON, so :func:`metadata_from_flat` gives the metadata back.
    """
    doc = chunk.doc_id
    row: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in chunk.metadata.items():
        if (key in reserved or key in (EXTRA_KEY, LEGACY_META_KEY) or not isinstance(key, str)
                or (key == "doc_id" and value != doc) or not keep(value)):
            extra[str(key)] = value
        else:
            row[key] = value
    row["doc_id"] = doc
    if extra:
        row[EXTRA_KEY] = json.dumps(extra, default=str, ensure_ascii=False)
    return row


def metadata_from_flat(row: Mapping[str, Any] | None) -> dict[str, Any]:
    """The chunk metadata of a flat record (see :func:`flat_metadata`); also reads the previous release's format."""
    meta = dict(row or {})
    legacy = meta.pop(LEGACY_META_KEY, None)
    if isinstance(legacy, str):
        with contextlib.suppress(ValueError):
            found = json.loads(legacy)
            if isinstance(found, dict):
                return found
    extra = meta.pop(EXTRA_KEY, None)
    if isinstance(extra, str):
        with contextlib.suppress(ValueError):
            found = json.loads(extra)
            if isinstance(found, dict):
                meta.update(found)
    return meta


def json_state(key: str, state: Mapping[str, Any]) -> dict[str, Any]:
    """A deep JSON copy of ``state`` (so a store never keeps a reference to the caller's dict)."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"state key must be a non-empty string, got {key!r}")
    if not isinstance(state, Mapping):
        raise TypeError(f"state for {key!r} must be a mapping, got {type(state).__name__}")
    try:
        return json.loads(json.dumps(dict(state), ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"state for {key!r} must be JSON-serialisable: {exc}") from None


def batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest scores, best first (ties by position)."""
    k = min(int(k), scores.shape[0])
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    idx = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(scores.shape[0])
    return idx[np.lexsort((idx, -scores[idx]))]


# ---------------------------------------------------------------- the base
class BaseStore:
    """Checks and the older async API, shared by every store; ``name`` is safe to log.

    ``dimension`` and ``embedder`` (the identity of the vectors held, one embedder a store) are None
    until learned from the first write or from an existing collection.
    """

    name: str = "store"
    dimension: int | None = None
    embedder: str | None = None
    #: What :meth:`query` answers in the store's own engine (see :data:`akasha.stores.query.CAPABILITIES`);
    #: a request for a side the store lacks is answered by that side alone, or not at all.
    capabilities: frozenset[str] = frozenset({"dense"})
    #: Whether the default :meth:`query` asks :meth:`_lexical` for the lexical side (else that side is empty);
    #: not ``"lexical" in capabilities``: the memory store leaves an index's searches to the index's engine.
    lexical_side: bool = False
    #: The BM25 tokenizer (:func:`akasha.retrieval.tokenize.resolve_tokenizer` id) of the lexical side.
    lexical_tokenizer: str = "auto"
    #: The embedder the store was opened for (``embedder=``), checked against every write.
    _expected: str | None = None

    def __init__(self, dimension: int | None = None, embedder: str | None = None) -> None:
        self.dimension = int(dimension) if dimension else None
        self.embedder = None
        self._expected = embedder

    # ------------------------------------------------ what a backend implements
    def _upsert(self, chunks: list[Chunk], matrix: np.ndarray) -> None:
        raise NotImplementedError

    def _remove(self, ids: list[str]) -> int:
        raise NotImplementedError

    def _fetch(self, ids: list[str]) -> list[Chunk]:
        raise NotImplementedError

    def _vectors_for(self, hashes: list[str], embedder: str) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _nearest(self, query: np.ndarray, k: int, filters: dict[str, Any] | None) -> list[tuple[Chunk, float]]:
        raise NotImplementedError

    def _scan(self, batch: int) -> Iterator[tuple[list[Chunk], np.ndarray]]:
        raise NotImplementedError

    def _ids_of_documents(self, doc_ids: list[str]) -> list[str]:
        raise NotImplementedError

    def _count(self) -> int:
        raise NotImplementedError

    def _load_state(self, key: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def _save_state(self, key: str, state: dict[str, Any]) -> None:
        raise NotImplementedError

    def _lexical(self, tokens: tuple[str, ...], k: int, filters: dict[str, Any] | None) -> list[tuple[Chunk, float]]:
        """The ``k`` best lexical matches for ``tokens``, best first (stores whose :attr:`lexical_side` is true)."""
        raise NotImplementedError

    def _record_embedder(self, embedder: str, dimension: int) -> None:
        """Remember what the store holds (a backend with collection metadata writes it there)."""

    def _adopt(self, what: str, width: int | None, recorded: Any, other: str) -> None:
        """Take the width and embedder of an existing ``what``, or IndexMismatchError (name another ``other``).

        The embedder is compared first: when both differ, the model is the cause the user can act on."""
        if recorded and self._expected and recorded != self._expected:
            raise IndexMismatchError(f"{what} holds vectors of {recorded!r}, not {self._expected!r}; open it with "
                                     f"that embedder, or name another {other} for this one")
        if width and self.dimension and int(width) != self.dimension:
            raise IndexMismatchError(
                f"{what} holds {int(width)}-dimensional vectors, not {self.dimension}-dimensional ones; use the "
                f"embedder it was built with, or name another {other}")
        if width:
            self.dimension = int(width)
        self.embedder = str(recorded) if recorded else None

    # ------------------------------------------------------- the sync contract
    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Write ``chunks`` (replacing records of the same id) after validating every row."""
        chunks = list(chunks)
        matrix = check_upsert(chunks, vectors, self.dimension, where=self.name)
        if not chunks:
            return
        embedder = self._check_embedder(chunks)
        self._upsert(chunks, matrix)
        learned = self.dimension is None or (embedder is not None and self.embedder is None)
        self.dimension = self.dimension or int(matrix.shape[1])
        self.embedder = self.embedder if self.embedder is not None else embedder
        if learned and self.embedder is not None:
            self._record_embedder(self.embedder, self.dimension)

    def _check_embedder(self, chunks: Sequence[Chunk]) -> str | None:
        found = {c.metadata.get("embedder") for c in chunks} - {None}
        if len(found) > 1:
            raise ValueError(f"one write mixes vectors of several embedders ({', '.join(sorted(map(str, found)))}); "
                             "a store holds the vectors of one embedder")
        if not found:
            return None
        embedder = str(found.pop())
        held = self.embedder if self.embedder is not None else self._expected
        if held is not None and embedder != held:
            raise IndexMismatchError(f"{self.name} holds vectors of {held!r}, not {embedder!r}; use the same "
                                     "embedder, or another collection/table for this one")
        return embedder

    def remove(self, ids: Sequence[str]) -> int:
        """Delete the records with these ids; returns how many existed."""
        wanted = list(dict.fromkeys(ids))
        return self._remove(wanted) if wanted else 0

    def fetch(self, ids: Sequence[str]) -> list[Chunk]:
        """The stored chunks with these ids, in the given order (missing ids skipped)."""
        wanted = list(ids)
        return self._fetch(wanted) if wanted else []

    def vectors_for(self, content_hashes: Sequence[str], embedder: str) -> dict[str, np.ndarray]:
        """Stored unit vectors of chunk texts with these sha256 hashes, made by ``embedder``."""
        wanted = list(dict.fromkeys(content_hashes))
        return self._vectors_for(wanted, str(embedder)) if wanted else {}

    def nearest(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[Chunk, float]]:
        """The ``k`` most cosine-similar chunks, best first, as ``(chunk, cosine)``."""
        k = int(k)
        if k <= 0:
            return []
        query = check_query(vector, self.dimension)
        if self.dimension is None:  # nothing written yet
            return []
        return self._nearest(query, k, dict(filters) if filters else None)

    def query(self, request: SearchRequest) -> list[Hit]:
        """Rank chunks for ``request`` with the store's engine: each side's ``pool`` candidates, fused.

        Stores whose engine fuses (PostgreSQL) override this; the rest fetch each side they can answer
        (:meth:`_nearest`, :meth:`_lexical`) and fuse here: never more than the pool per side in memory.
        """
        filters = dict(request.filters) if request.filters else None
        dense: list[tuple[Chunk, float]] = []
        lexical: list[tuple[Chunk, float]] = []
        if request.mode in ("dense", "hybrid") and request.vector is not None and self.dimension is not None:
            dense = self._nearest(check_query(request.vector, self.dimension), request.pool, filters)
        if request.mode in ("lexical", "hybrid") and self.lexical_side:
            lexical = self._lexical(request.tokens, request.pool, filters)
        exact = None
        if request.mode == "hybrid" and lexical and self._holds_alone(exact_terms(request.text, request.tokens),
                                                                      lexical[0][0].id):
            exact = lexical[0][0].id
        return rank_hits(dense, lexical, request, exact)

    def _holds_alone(self, tokens: Sequence[str], chunk_id: str) -> bool:
        """Whether ``chunk_id`` is the only chunk holding one of ``tokens`` (a store whose lexical side knows)."""
        return False

    def scan(self, batch: int = 1000) -> Iterator[tuple[list[Chunk], np.ndarray]]:
        """Every record with its unit vector, ``batch`` records at a time."""
        if int(batch) <= 0:
            raise ValueError(f"scan batch must be positive, got {batch!r}")
        return self._scan(int(batch))

    def ids_of_documents(self, doc_ids: Sequence[str]) -> list[str]:
        """The ids of every record of these documents (``doc_id`` = chunk id before the last ``#``)."""
        wanted = list(dict.fromkeys(doc_ids))
        return self._ids_of_documents(wanted) if wanted else []

    def count(self) -> int:
        """How many records the store holds (also awaitable, for the async API)."""
        return Count(self._count())

    def load_state(self, key: str) -> dict[str, Any] | None:
        """The JSON state saved under ``key`` by :meth:`save_state`, or None."""
        if not isinstance(key, str) or not key:
            raise ValueError(f"state key must be a non-empty string, got {key!r}")
        return self._load_state(key)

    def save_state(self, key: str, state: Mapping[str, Any]) -> None:
        """Replace the JSON state under ``key``; readers see the old state or the new one, never a mix."""
        self._save_state(key, json_state(key, state))

    def lock(self, timeout: float) -> contextlib.AbstractContextManager[None]:
        """The store's cross-machine writer lock; stores without one return a no-op."""
        return contextlib.nullcontext()

    def close(self) -> None:
        """Release connections; the default has nothing to release."""

    # ------------------------------------------------------- shared helpers
    def _nearest_by_scan(self, query: np.ndarray, k: int, filters: dict[str, Any] | None) -> list[tuple[Chunk, float]]:
        """Exact cosine over :meth:`scan` (for filters a server cannot evaluate)."""
        best: list[tuple[float, int, Chunk]] = []
        seen = 0
        for chunks, matrix in self._scan(1000):
            keep = [i for i, c in enumerate(chunks) if matches(c, filters)]
            scores = matrix[keep] @ query
            for j, score in zip(keep, scores.tolist(), strict=True):
                item = (float(score), -(seen + j), chunks[j])
                if len(best) < k:
                    heapq.heappush(best, item)
                elif item[:2] > best[0][:2]:
                    heapq.heapreplace(best, item)
            seen += len(chunks)
        return [(c, s) for s, _, c in sorted(best, key=lambda t: (-t[0], -t[1]))]

    @staticmethod
    def _by_cosine(chunks: Sequence[Chunk], vectors: Any, query: np.ndarray, k: int) -> list[tuple[Chunk, float]]:
        """The ``k`` of ``chunks`` nearest ``query`` by cosine (candidates of a collection in l2 or dot distance)."""
        if not chunks:
            return []
        scores = normalize_rows(np.asarray(vectors, dtype=np.float32).reshape(len(chunks), -1)) @ query
        return [(chunks[j], float(scores[j])) for j in top_k(scores, k)]

    # ----------------------------------------------- the async API (pipelines)
    async def replace(self, doc_ids: Sequence[str], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Give ``doc_ids`` exactly ``chunks``: upsert the new records, then remove that document's stale ids.

        Everything is validated first; a write that fails leaves the previous version in place.
        """
        chunks = list(chunks)
        check_upsert(chunks, vectors, self.dimension)
        wanted = set(doc_ids)
        stray = [c.id for c in chunks if c.doc_id not in wanted]
        if stray:
            raise ValueError(f"chunks {stray[:3]} do not belong to the documents being replaced")
        if not doc_ids:
            return
        old = self.ids_of_documents(list(doc_ids))
        if chunks:
            self.upsert(chunks, vectors)
        keep = {c.id for c in chunks}
        stale = [i for i in old if i not in keep]
        if stale:
            self.remove(stale)

    async def delete(self, doc_ids: Sequence[str]) -> int:
        """Remove every record of ``doc_ids``; returns how many went."""
        return self.remove(self.ids_of_documents(list(doc_ids)))

    async def search(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[Chunk, float]]:
        """Async twin of :meth:`nearest`."""
        return self.nearest(vector, k, filters)

    async def get(self, ids: Sequence[str]) -> list[Chunk]:
        """Async twin of :meth:`fetch`."""
        return self.fetch(ids)

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        self.close()

    def __enter__(self) -> BaseStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

__all__ = [
    "EXTRA_KEY", "BaseStore", "Count", "Filters", "Store", "batches", "check_query", "check_upsert", "first_matching",
    "flat_metadata", "is_scalar", "json_state", "matches", "metadata_from_flat", "scalar_filters", "top_k",
]
