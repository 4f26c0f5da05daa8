"""``backend: memory``: vectors in a growing numpy matrix inside the process (no extra; nothing persists).

Writes are amortised O(chunks written): the matrix doubles its capacity and deleted rows become
free slots. A search is one matrix-vector product over the live rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from akasha.stores.base import matches, top_k
from akasha.stores.inprocess import InProcessStore
from akasha.types import Chunk


class MemoryStore(InProcessStore):
    """Exact cosine search over unit vectors held in memory.

    An index over it searches with its own in-process engine (``capabilities`` is empty);
    :meth:`query` still answers callers that use the store alone.
    """

    name = "memory"
    capabilities = frozenset()

    def __init__(self, dimension: int | None = None, *, embedder: str | None = None) -> None:
        super().__init__(dimension, embedder)
        self._matrix: np.ndarray | None = None  # (capacity, dim), rows unit length
        self._live = np.zeros(0, dtype=bool)
        self._used = 0  # rows handed out so far (live or free)
        self._free: list[int] = []

    def _ensure_capacity(self, extra: int, dim: int) -> None:
        if self._matrix is None:
            self._matrix = np.zeros((max(16, extra), dim), dtype=np.float32)
            self._live = np.zeros(self._matrix.shape[0], dtype=bool)
            return
        need = self._used + extra
        if need > self._matrix.shape[0]:
            capacity = max(need, 2 * self._matrix.shape[0])
            grown = np.zeros((capacity, dim), dtype=np.float32)
            grown[: self._matrix.shape[0]] = self._matrix
            live = np.zeros(capacity, dtype=bool)
            live[: self._live.shape[0]] = self._live
            self._matrix, self._live = grown, live

    def _upsert(self, chunks: list[Chunk], matrix: np.ndarray) -> None:
        self._ensure_capacity(len(chunks), int(matrix.shape[1]))
        assert self._matrix is not None
        # Validation is done; nothing below can fail, so a write is all or nothing.
        for chunk, row in zip(chunks, matrix, strict=True):
            replaced = self._drop([chunk.id])  # a record of the same id keeps its row
            slot = replaced[0] if replaced else self._free.pop() if self._free else self._used
            self._used = max(self._used, slot + 1)  # a new row extends the rows handed out
            self._matrix[slot] = row
            self._live[slot] = True
            self._put(chunk, slot)

    def _remove(self, ids: list[str]) -> int:
        slots = self._drop(ids)
        self._live[slots] = False
        self._free.extend(slots)
        return len(slots)

    def _vectors_at(self, rows: list[int]) -> np.ndarray:
        assert self._matrix is not None  # a stored row implies a matrix
        return self._matrix[rows]  # a copy (fancy indexing)

    def _nearest(self, query: np.ndarray, k: int, filters: dict[str, Any] | None) -> list[tuple[Chunk, float]]:
        if self._matrix is None or not self._row_of:
            return []
        n = self._used
        mask = self._live[:n].copy()
        for slot in np.flatnonzero(mask) if filters else ():
            mask[slot] = matches(self._chunk_at[int(slot)], filters)
        live = int(mask.sum())
        if live == 0:
            return []
        scores = np.where(mask, self._matrix[:n] @ query, -np.inf)
        return [(self._chunk_at[int(i)], float(scores[i])) for i in top_k(scores, min(k, live))]

def make_memory_store(config: dict[str, Any], context: Any) -> MemoryStore:
    """Registry factory for ``backend: memory`` (no keys)."""
    return MemoryStore(dimension=None)


__all__ = ["MemoryStore", "make_memory_store"]
