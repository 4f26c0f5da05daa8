"""``backend: memory``: vectors in a growing numpy matrix inside the process.

No extra needed. Writes are amortised O(chunks written) (the matrix doubles its
capacity; deleted rows become free slots), so ingesting many small batches
stays linear. A search is one matrix-vector product over the live rows. The
index's state is kept in memory too: nothing survives the process.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from akasha.stores.base import BaseStore, doc_id_of, json_state, matches, top_k
from akasha.types import Chunk


class MemoryStore(BaseStore):
    """Exact cosine search over unit vectors held in memory."""

    name = "memory"

    def __init__(self, dimension: int | None = None, *, embedder: str | None = None) -> None:
        self.dimension = int(dimension) if dimension else None
        self.embedder = None
        self._expected = embedder
        self._matrix: np.ndarray | None = None  # (capacity, dim), rows unit length
        self._live = np.zeros(0, dtype=bool)
        self._chunks: list[Chunk | None] = []
        self._slot: dict[str, int] = {}  # chunk id -> row
        self._by_doc: dict[str, set[str]] = {}  # doc id -> chunk ids
        self._by_hash: dict[str, set[str]] = {}  # content hash -> chunk ids
        self._free: list[int] = []
        self._states: dict[str, dict[str, Any]] = {}

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

    def _index(self, chunk: Chunk) -> None:
        self._by_doc.setdefault(doc_id_of(chunk), set()).add(chunk.id)
        content_hash = chunk.metadata.get("content_hash")
        if isinstance(content_hash, str):
            self._by_hash.setdefault(content_hash, set()).add(chunk.id)

    def _unindex(self, chunk: Chunk) -> None:
        for table, key in ((self._by_doc, doc_id_of(chunk)), (self._by_hash, chunk.metadata.get("content_hash"))):
            ids = table.get(key) if isinstance(key, str) else None
            if ids is not None:
                ids.discard(chunk.id)
                if not ids:
                    del table[key]

    def _upsert(self, chunks: list[Chunk], matrix: np.ndarray) -> None:
        self._ensure_capacity(len(chunks), int(matrix.shape[1]))
        assert self._matrix is not None
        # Validation is done; nothing below can fail, so a write is all or nothing.
        for chunk, row in zip(chunks, matrix, strict=True):
            slot = self._slot.get(chunk.id)
            if slot is not None:
                old = self._chunks[slot]
                assert old is not None
                self._unindex(old)
            elif self._free:
                slot = self._free.pop()
            else:
                slot = len(self._chunks)
                self._chunks.append(None)
            stored = Chunk(chunk.id, chunk.text, dict(chunk.metadata))
            self._chunks[slot] = stored
            self._matrix[slot] = row
            self._live[slot] = True
            self._slot[chunk.id] = slot
            self._index(stored)

    def _remove(self, ids: list[str]) -> int:
        removed = 0
        for chunk_id in ids:
            slot = self._slot.pop(chunk_id, None)
            if slot is None:
                continue
            chunk = self._chunks[slot]
            assert chunk is not None
            self._unindex(chunk)
            self._chunks[slot] = None
            self._live[slot] = False
            self._free.append(slot)
            removed += 1
        return removed

    def _fetch(self, ids: list[str]) -> list[Chunk]:
        return [self._chunks[self._slot[i]] for i in ids if i in self._slot]  # type: ignore[misc]

    def _vectors_for(self, hashes: list[str], embedder: str) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        assert self._matrix is not None or not self._slot
        for content_hash in hashes:
            for chunk_id in sorted(self._by_hash.get(content_hash, ())):
                slot = self._slot[chunk_id]
                chunk = self._chunks[slot]
                assert chunk is not None and self._matrix is not None
                if chunk.metadata.get("embedder", self.embedder) == embedder:
                    out[content_hash] = self._matrix[slot].copy()
                    break
        return out

    def _nearest(self, query: np.ndarray, k: int, filters: dict[str, Any] | None) -> list[tuple[Chunk, float]]:
        if self._matrix is None or not self._slot:
            return []
        n = len(self._chunks)
        mask = self._live[:n].copy()
        if filters:
            for slot in np.flatnonzero(mask):
                chunk = self._chunks[slot]
                assert chunk is not None
                if not matches(chunk.metadata, doc_id_of(chunk), filters):
                    mask[slot] = False
        live = int(mask.sum())
        if live == 0:
            return []
        scores = np.where(mask, self._matrix[:n] @ query, -np.inf)
        return [(self._chunks[i], float(scores[i])) for i in top_k(scores, min(k, live))]  # type: ignore[misc]

    def _scan(self, batch: int) -> Iterator[tuple[list[Chunk], np.ndarray]]:
        slots = sorted(self._slot.values())
        for start in range(0, len(slots), batch):
            part = slots[start : start + batch]
            assert self._matrix is not None
            yield [self._chunks[s] for s in part], self._matrix[part].copy()  # type: ignore[misc]

    def _ids_of_documents(self, doc_ids: list[str]) -> list[str]:
        return [i for d in doc_ids for i in sorted(self._by_doc.get(d, ()))]

    def _count(self) -> int:
        return len(self._slot)

    def _load_state(self, key: str) -> dict[str, Any] | None:
        found = self._states.get(key)
        return json_state(key, found) if found is not None else None

    def _save_state(self, key: str, state: dict[str, Any]) -> None:
        self._states[key] = state


def make_memory_store(config: dict[str, Any], context: Any) -> MemoryStore:
    """Registry factory for ``backend: memory`` (no keys)."""
    return MemoryStore(dimension=None)


__all__ = ["MemoryStore", "make_memory_store"]
