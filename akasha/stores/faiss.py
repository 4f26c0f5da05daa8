"""``backend: faiss``: exact in-process search, IndexFlatIP over unit vectors (cosine).

Keys: ``dimensions`` (plural, as the reference spells it; default the embedding
dimension). Not persisted: records and the index's state live in the process.
Needs the ``faiss`` extra (``faiss-cpu``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from akasha.errors import MissingExtraError, SpecError
from akasha.stores.base import BaseStore, doc_id_of, json_state, matches
from akasha.types import Chunk


def _import_faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise MissingExtraError("faiss-cpu", "faiss", "vector_store backend 'faiss'") from None
    return faiss


class FaissStore(BaseStore):
    """IndexIDMap2(IndexFlatIP) keyed by an int64 label per chunk (created at the first write when no dimension)."""

    name = "faiss"

    def __init__(self, dimension: int | None = None, *, embedder: str | None = None) -> None:
        self._faiss = _import_faiss()
        self.dimension = None
        self.embedder = None
        self._expected = embedder
        self._index: Any = None
        self._next_label = 0
        self._label: dict[str, int] = {}
        self._chunks: dict[int, Chunk] = {}
        self._by_doc: dict[str, set[str]] = {}
        self._by_hash: dict[str, set[str]] = {}
        self._states: dict[str, dict[str, Any]] = {}
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
        self._remove([c.id for c in chunks if c.id in self._label])
        self._index.add_with_ids(np.ascontiguousarray(matrix, dtype=np.float32), labels)
        self._next_label += len(chunks)
        for chunk, label in zip(chunks, labels.tolist(), strict=True):
            stored = Chunk(chunk.id, chunk.text, dict(chunk.metadata))
            self._label[chunk.id] = label
            self._chunks[label] = stored
            self._by_doc.setdefault(doc_id_of(stored), set()).add(chunk.id)
            content_hash = stored.metadata.get("content_hash")
            if isinstance(content_hash, str):
                self._by_hash.setdefault(content_hash, set()).add(chunk.id)

    def _remove(self, ids: list[str]) -> int:
        labels = []
        for chunk_id in ids:
            label = self._label.pop(chunk_id, None)
            if label is None:
                continue
            chunk = self._chunks.pop(label)
            for table, key in ((self._by_doc, doc_id_of(chunk)), (self._by_hash, chunk.metadata.get("content_hash"))):
                found = table.get(key) if isinstance(key, str) else None
                if found is not None:
                    found.discard(chunk_id)
                    if not found:
                        del table[key]
            labels.append(label)
        if labels:
            self._index.remove_ids(np.asarray(labels, dtype=np.int64))
        return len(labels)

    def _fetch(self, ids: list[str]) -> list[Chunk]:
        return [self._chunks[self._label[i]] for i in ids if i in self._label]

    def _vectors_for(self, hashes: list[str], embedder: str) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for content_hash in hashes:
            for chunk_id in sorted(self._by_hash.get(content_hash, ())):
                label = self._label[chunk_id]
                if self._chunks[label].metadata.get("embedder", self.embedder) == embedder:
                    out[content_hash] = np.asarray(self._index.reconstruct(label), dtype=np.float32)
                    break
        return out

    def _nearest(self, query: np.ndarray, k: int, filters: dict[str, Any] | None) -> list[tuple[Chunk, float]]:
        total = 0 if self._index is None else self._index.ntotal
        if total == 0:
            return []
        fetch = total if filters else min(k, total)
        scores, labels = self._index.search(query.reshape(1, -1).astype(np.float32), fetch)
        out: list[tuple[Chunk, float]] = []
        for score, label in zip(scores[0].tolist(), labels[0].tolist(), strict=True):
            chunk = self._chunks.get(label)
            if chunk is None or not matches(chunk.metadata, doc_id_of(chunk), filters):
                continue
            out.append((chunk, float(score)))
            if len(out) == k:
                break
        return out

    def _scan(self, batch: int) -> Iterator[tuple[list[Chunk], np.ndarray]]:
        labels = sorted(self._chunks)
        for start in range(0, len(labels), batch):
            part = labels[start : start + batch]
            matrix = np.stack([self._index.reconstruct(label) for label in part]).astype(np.float32)
            yield [self._chunks[label] for label in part], matrix

    def _ids_of_documents(self, doc_ids: list[str]) -> list[str]:
        return [i for d in doc_ids for i in sorted(self._by_doc.get(d, ()))]

    def _count(self) -> int:
        return len(self._label)

    def _load_state(self, key: str) -> dict[str, Any] | None:
        found = self._states.get(key)
        return json_state(key, found) if found is not None else None

    def _save_state(self, key: str, state: dict[str, Any]) -> None:
        self._states[key] = state


def make_faiss_store(config: dict[str, Any], context: Any) -> FaissStore:
    """Registry factory for ``backend: faiss``: ``dimensions`` defaults to the embedding dimension."""
    dimension = config.get("dimensions", context.dimension)
    if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension <= 0:
        raise SpecError(f"vector_store.dimensions must be a positive integer, got {dimension!r}")
    return FaissStore(dimension)


__all__ = ["FaissStore", "make_faiss_store"]
