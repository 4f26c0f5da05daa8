"""The vector-store contract every ``vector_store.backend`` implements.

A store keeps chunks (id, text, metadata) with one vector each and answers
cosine-similarity searches. Writes are per document: :meth:`VectorStore.replace`
swaps *all* chunks of the given documents for the new ones, so the index never
holds two versions of one document, and a write that fails leaves the previous
version in place.

Synchronous backends subclass :class:`SyncStore` and implement the ``_``-methods;
the async methods the pipeline awaits wrap them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from akasha.embeddings.base import normalize_rows
from akasha.types import Chunk

#: Metadata filters: equality on metadata keys; ``doc_id`` matches the document id.
Filters = Mapping[str, Any]


@runtime_checkable
class VectorStore(Protocol):
    """What the pipeline needs from a vector index."""

    name: str

    async def replace(self, doc_ids: Sequence[str], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Atomically replace every chunk of ``doc_ids`` with ``chunks`` (which may be empty)."""
        ...

    async def delete(self, doc_ids: Sequence[str]) -> int:
        """Remove every chunk of ``doc_ids``; returns how many chunks went."""
        ...

    async def search(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[Chunk, float]]:
        """The ``k`` most cosine-similar chunks, best first, as ``(chunk, cosine)``."""
        ...

    async def get(self, ids: Sequence[str]) -> list[Chunk]:
        """The stored chunks with these ids (missing ids are skipped), in the given order."""
        ...

    async def count(self) -> int:
        """How many chunks the store holds."""
        ...


def doc_id_of(chunk: Chunk) -> str:
    """The document a chunk belongs to: the part of its id before the last ``#``.

    A ``doc_id`` key in the chunk's metadata is user data and is not consulted.
    """
    return chunk.doc_id


def check_write(doc_ids: Sequence[str], chunks: Sequence[Chunk], vectors: np.ndarray, dimension: int | None) -> np.ndarray:
    """Validate a replace() call before anything is written; returns unit-length float32 rows.

    Every chunk must belong to one of ``doc_ids``, there must be one finite vector per
    chunk, and the width must match the store's ``dimension`` when it has one.
    """
    matrix = np.asarray(vectors, dtype=np.float32)
    if len(chunks) == 0:
        return np.zeros((0, dimension or 0), dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != len(chunks):
        raise ValueError(f"replace() got {len(chunks)} chunks but vectors of shape {matrix.shape}; need one row per chunk")
    if dimension is not None and matrix.shape[1] != dimension:
        raise ValueError(
            f"vectors have {matrix.shape[1]} dimensions but the index was created for {dimension}; "
            "set embeddings.dimension (or faiss dimensions) to the embedder's output size"
        )
    if not np.isfinite(matrix).all():
        raise ValueError("replace() got vectors containing NaN or infinity")
    wanted = set(doc_ids)
    ids = [c.id for c in chunks]
    if len(set(ids)) != len(ids):
        raise ValueError("replace() got duplicate chunk ids")
    stray = [c.id for c in chunks if doc_id_of(c) not in wanted]
    if stray:
        raise ValueError(f"chunks {stray[:3]} do not belong to the documents being replaced")
    return normalize_rows(matrix)


def matches(metadata: Mapping[str, Any], doc_id: str, filters: Filters | None) -> bool:
    """True when every filter key equals the chunk's metadata value (``doc_id`` is the document id)."""
    if not filters:
        return True
    for key, value in filters.items():
        actual = doc_id if key == "doc_id" else metadata.get(key)
        if actual != value:
            return False
    return True


def dump_metadata(metadata: Mapping[str, Any]) -> str:
    """Metadata as JSON for stores that keep it as a string (non-JSON values become strings)."""
    return json.dumps(dict(metadata), default=str, ensure_ascii=False)


class SyncStore:
    """Base for backends whose client is synchronous: async wrappers over ``_``-methods."""

    name = "store"
    dimension: int | None = None

    def _replace(self, doc_ids: Sequence[str], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        raise NotImplementedError

    def _delete(self, doc_ids: Sequence[str]) -> int:
        raise NotImplementedError

    def _search(self, vector: np.ndarray, k: int, filters: Filters | None) -> list[tuple[Chunk, float]]:
        raise NotImplementedError

    def _get(self, ids: Sequence[str]) -> list[Chunk]:
        raise NotImplementedError

    def _count(self) -> int:
        raise NotImplementedError

    async def replace(self, doc_ids: Sequence[str], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        matrix = check_write(doc_ids, chunks, vectors, self.dimension)
        if not doc_ids:
            return
        self._replace(list(doc_ids), list(chunks), matrix)
        if chunks and self.dimension is None:
            self.dimension = int(matrix.shape[1])  # learned from the first write

    async def delete(self, doc_ids: Sequence[str]) -> int:
        return self._delete(list(doc_ids)) if doc_ids else 0

    async def search(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[Chunk, float]]:
        if k <= 0:
            return []
        query = normalize_rows(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]
        if self.dimension is not None and query.shape[0] != self.dimension:
            raise ValueError(f"query vector has {query.shape[0]} dimensions, the index {self.dimension}")
        return self._search(query, k, dict(filters) if filters else None)

    async def get(self, ids: Sequence[str]) -> list[Chunk]:
        return self._get(list(ids)) if ids else []

    async def count(self) -> int:
        return self._count()

    async def aclose(self) -> None:
        """Release connections; the default has nothing to release."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


__all__ = ["VectorStore", "SyncStore", "Filters", "check_write", "doc_id_of", "matches", "dump_metadata"]
