"""``backend: faiss``: exact in-process search, IndexFlatIP over unit vectors (cosine).

Keys: ``dimensions`` (plural, as the reference spells it; default the embedding dimension).
Nothing persists. Needs the ``faiss`` extra (``faiss-cpu``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from akasha.errors import MissingExtraError, SpecError
from akasha.stores.base import first_matching
from akasha.stores.inprocess import InProcessStore
from akasha.types import Chunk


class FaissStore(InProcessStore):
    """IndexIDMap2(IndexFlatIP) keyed by an int64 label per chunk (created at the first write when no dimension)."""

    name = "faiss"

    def __init__(self, dimension: int | None = None, *, embedder: str | None = None) -> None:
        super().__init__(embedder=embedder)
        try:
            import faiss
        except ImportError:
            raise MissingExtraError("faiss-cpu", "faiss", "vector_store backend 'faiss'") from None
        self._faiss = faiss
        self._index: Any = None
        self._next_label = 0
        if dimension:
            self._create(int(dimension))

    def _create(self, dimension: int) -> None:
        self.dimension = dimension
        self._index = self._faiss.IndexIDMap2(self._faiss.IndexFlatIP(dimension))

    def _upsert(self, chunks: list[Chunk], matrix: np.ndarray) -> None:
        if self._index is None:
            self._create(int(matrix.shape[1]))
        labels = np.arange(self._next_label, self._next_label + len(chunks), dtype=np.int64)
        # Validation is done; removing the old rows then adding cannot fail half way.
        self._remove([c.id for c in chunks])
        self._index.add_with_ids(np.ascontiguousarray(matrix, dtype=np.float32), labels)
        self._next_label += len(chunks)
        for chunk, label in zip(chunks, labels.tolist(), strict=True):
            self._put(chunk, label)

    def _remove(self, ids: list[str]) -> int:
        labels = self._drop(ids)
        if labels:
            self._index.remove_ids(np.asarray(labels, dtype=np.int64))
        return len(labels)

    def _vectors_at(self, rows: list[int]) -> np.ndarray:
        return np.stack([self._index.reconstruct(label) for label in rows]).astype(np.float32)

    def _nearest(self, query: np.ndarray, k: int, filters: dict[str, Any] | None) -> list[tuple[Chunk, float]]:
        total = 0 if self._index is None else self._index.ntotal
        if total == 0:
            return []
        fetch = total if filters else min(k, total)
        scores, labels = self._index.search(query.reshape(1, -1).astype(np.float32), fetch)
        pairs = zip(scores[0].tolist(), labels[0].tolist(), strict=True)
        return first_matching(((self._chunk_at.get(label), score) for score, label in pairs), filters, k)

def make_faiss_store(config: dict[str, Any], context: Any) -> FaissStore:
    """Registry factory for ``backend: faiss``: ``dimensions`` defaults to the embedding dimension."""
    dimension = config.get("dimensions", context.dimension)
    if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension <= 0:
        raise SpecError(f"vector_store.dimensions must be a positive integer, got {dimension!r}")
    return FaissStore(dimension)


__all__ = ["FaissStore", "make_faiss_store"]
