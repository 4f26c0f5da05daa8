"""``backend: memory``: vectors in a growing numpy matrix inside the process.

No extra needed. Writes are amortised O(chunks written) (the matrix doubles its
capacity; deleted rows become free slots), so ingesting many small batches
stays linear. A search is one matrix-vector product over the live rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from akasha.stores.base import Filters, SyncStore, doc_id_of, matches
from akasha.types import Chunk


class MemoryStore(SyncStore):
    """Exact cosine search over unit vectors held in memory."""

    name = "memory"

    def __init__(self, dimension: int | None = None) -> None:
        self.dimension = dimension
        self._matrix: np.ndarray | None = None  # (capacity, dim), rows unit length
        self._live = np.zeros(0, dtype=bool)
        self._chunks: list[Chunk | None] = []
        self._slot: dict[str, int] = {}  # chunk id -> row
        self._by_doc: dict[str, list[str]] = {}  # doc id -> chunk ids
        self._free: list[int] = []

    def _ensure_capacity(self, extra: int, dim: int) -> None:
        if self._matrix is None:
            self._matrix = np.zeros((max(16, extra), dim), dtype=np.float32)
            self._live = np.zeros(self._matrix.shape[0], dtype=bool)
            return
        need = len(self._chunks) + extra
        if need > self._matrix.shape[0]:
            capacity = max(need, 2 * self._matrix.shape[0])
            grown = np.zeros((capacity, dim), dtype=np.float32)
            grown[: self._matrix.shape[0]] = self._matrix
            live = np.zeros(capacity, dtype=bool)
            live[: self._live.shape[0]] = self._live
            self._matrix, self._live = grown, live

    def _replace(self, doc_ids: Sequence[str], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if chunks and self.dimension is None:
            self.dimension = int(vectors.shape[1])
        if chunks:
            self._ensure_capacity(len(chunks), int(vectors.shape[1]))
        # Validation is done (check_write); nothing below can fail, so the swap is atomic.
        self._delete(doc_ids)
        assert self._matrix is not None or not chunks
        for chunk, row in zip(chunks, vectors, strict=True):
            if self._free:
                slot = self._free.pop()
                self._chunks[slot] = chunk
            else:
                slot = len(self._chunks)
                self._chunks.append(chunk)
            self._matrix[slot] = row  # type: ignore[index]
            self._live[slot] = True
            self._slot[chunk.id] = slot
            self._by_doc.setdefault(doc_id_of(chunk), []).append(chunk.id)

    def _delete(self, doc_ids: Sequence[str]) -> int:
        removed = 0
        for doc_id in doc_ids:
            for chunk_id in self._by_doc.pop(doc_id, []):
                slot = self._slot.pop(chunk_id)
                self._chunks[slot] = None
                self._live[slot] = False
                self._free.append(slot)
                removed += 1
        return removed

    def _search(self, vector: np.ndarray, k: int, filters: Filters | None) -> list[tuple[Chunk, float]]:
        if self._matrix is None or not self._slot:
            return []
        n = len(self._chunks)
        scores = self._matrix[:n] @ vector
        mask = self._live[:n].copy()
        if filters:
            for slot in np.flatnonzero(mask):
                chunk = self._chunks[slot]
                assert chunk is not None
                if not matches(chunk.metadata, doc_id_of(chunk), filters):
                    mask[slot] = False
        scores = np.where(mask, scores, -np.inf)
        live = int(mask.sum())
        top = min(k, live)
        if top == 0:
            return []
        idx = np.argpartition(-scores, top - 1)[:top]
        idx = idx[np.argsort(-scores[idx], kind="stable")]
        return [(self._chunks[i], float(scores[i])) for i in idx]  # type: ignore[misc]

    def _get(self, ids: Sequence[str]) -> list[Chunk]:
        return [self._chunks[self._slot[i]] for i in ids if i in self._slot]  # type: ignore[misc]

    def _count(self) -> int:
        return len(self._slot)


def make_memory_store(config: dict[str, Any], context: Any) -> MemoryStore:
    """Registry factory for ``backend: memory`` (no keys)."""
    return MemoryStore(dimension=None)


__all__ = ["MemoryStore", "make_memory_store"]
