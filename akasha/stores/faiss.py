"""``backend: faiss``: exact in-process search, IndexFlatIP over unit vectors (cosine).

Keys: ``dimensions`` (plural, as the reference spells it; default the embedding
dimension). Not persisted. Needs the ``faiss`` extra (``faiss-cpu``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from akasha.errors import MissingExtraError, SpecError
from akasha.stores.base import Filters, SyncStore, doc_id_of, matches
from akasha.types import Chunk


def _import_faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise MissingExtraError("faiss-cpu", "faiss", "vector_store backend 'faiss'") from None
    return faiss


class FaissStore(SyncStore):
    """IndexIDMap2(IndexFlatIP) keyed by an int64 label per chunk."""

    name = "faiss"

    def __init__(self, dimension: int) -> None:
        faiss = _import_faiss()
        self.dimension = int(dimension)
        self._faiss = faiss
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dimension))
        self._next_label = 0
        self._label: dict[str, int] = {}
        self._chunks: dict[int, Chunk] = {}
        self._by_doc: dict[str, list[str]] = {}

    def _replace(self, doc_ids: Sequence[str], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        labels = np.arange(self._next_label, self._next_label + len(chunks), dtype=np.int64)
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        # Everything was validated by check_write; remove then add cannot fail half way.
        self._delete(doc_ids)
        if len(chunks):
            self._index.add_with_ids(matrix, labels)
        self._next_label += len(chunks)
        for chunk, label in zip(chunks, labels.tolist(), strict=True):
            self._label[chunk.id] = label
            self._chunks[label] = chunk
            self._by_doc.setdefault(doc_id_of(chunk), []).append(chunk.id)

    def _delete(self, doc_ids: Sequence[str]) -> int:
        labels = []
        for doc_id in doc_ids:
            for chunk_id in self._by_doc.pop(doc_id, []):
                label = self._label.pop(chunk_id)
                self._chunks.pop(label, None)
                labels.append(label)
        if labels:
            self._index.remove_ids(np.asarray(labels, dtype=np.int64))
        return len(labels)

    def _search(self, vector: np.ndarray, k: int, filters: Filters | None) -> list[tuple[Chunk, float]]:
        total = self._index.ntotal
        if total == 0:
            return []
        fetch = total if filters else min(k, total)
        scores, labels = self._index.search(vector.reshape(1, -1).astype(np.float32), fetch)
        out: list[tuple[Chunk, float]] = []
        for score, label in zip(scores[0].tolist(), labels[0].tolist(), strict=True):
            chunk = self._chunks.get(label)
            if chunk is None or not matches(chunk.metadata, doc_id_of(chunk), filters):
                continue
            out.append((chunk, float(score)))
            if len(out) == k:
                break
        return out

    def _get(self, ids: Sequence[str]) -> list[Chunk]:
        return [self._chunks[self._label[i]] for i in ids if i in self._label]

    def _count(self) -> int:
        return len(self._label)


def make_faiss_store(config: dict[str, Any], context: Any) -> FaissStore:
    """Registry factory for ``backend: faiss``: ``dimensions`` defaults to the embedding dimension."""
    dimension = config.get("dimensions", context.dimension)
    if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension <= 0:
        raise SpecError(f"vector_store.dimensions must be a positive integer, got {dimension!r}")
    return FaissStore(dimension)


__all__ = ["FaissStore", "make_faiss_store"]
