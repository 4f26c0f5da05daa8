"""Exact cosine search over one in-memory float32 matrix.

Vectors are normalised once when added, so a query is one matrix-vector
product (``np.einsum``, single-threaded and copy-free) plus ``argpartition`` (no full sort, no copy of the matrix). Rows are
kept in a preallocated buffer that grows by doubling; removals are masked and
compacted away when dead rows outnumber live ones. A read-only memory-mapped
``.npy`` can be passed to :meth:`DenseIndex.from_matrix` for large corpora.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from akasha.embeddings.base import normalize_rows
from akasha.retrieval.bm25 import top_k


class DenseIndex:
    """Normalised row vectors keyed by string ids; exact inner-product search."""

    def __init__(self, dimension: int | None = None) -> None:
        self.dimension = dimension
        self._m = np.zeros((0, dimension or 0), dtype=np.float32)
        self._n = 0  # rows in use (live + dead)
        self._ids: list[str | None] = []
        self._slot: dict[str, int] = {}
        self._alive = np.zeros(0, dtype=bool)
        self._n_live = 0

    @classmethod
    def from_matrix(cls, ids: Sequence[str], matrix: np.ndarray, *, normalized: bool = False) -> DenseIndex:
        """Wrap an existing ``(n, d)`` matrix (memory-mapped is fine) without copying it when normalised."""
        index = cls(int(matrix.shape[1]))
        matrix = matrix if normalized and matrix.dtype == np.float32 else normalize_rows(matrix)
        index._m = matrix
        index._n = len(ids)
        index._ids = list(ids)
        index._slot = {doc_id: i for i, doc_id in enumerate(index._ids)}  # type: ignore[misc]
        if len(index._slot) != len(index._ids):
            raise ValueError("DenseIndex.from_matrix got duplicate ids")
        index._alive = np.ones(len(ids), dtype=bool)
        index._n_live = len(ids)
        return index

    def __len__(self) -> int:
        return self._n_live

    def __contains__(self, item: object) -> bool:
        return item in self._slot

    @property
    def ids(self) -> list[str]:
        """Live ids in row order."""
        return [i for i in self._ids if i is not None]

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Add (or replace) rows; ``vectors`` is ``(len(ids), d)`` and gets normalised."""
        ids = list(ids)
        if not ids:
            return
        vectors = normalize_rows(np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1))
        if self.dimension is None:
            self.dimension = int(vectors.shape[1])
            self._m = np.zeros((0, self.dimension), dtype=np.float32)
        if vectors.shape[1] != self.dimension:
            raise ValueError(f"vectors have {vectors.shape[1]} dimensions, this index holds {self.dimension}")
        self.remove([i for i in ids if i in self._slot])
        need = self._n + len(ids)
        if need > self._m.shape[0] or not self._m.flags.writeable:
            grown = np.empty((max(need, 2 * self._m.shape[0], 64), self.dimension), dtype=np.float32)
            grown[: self._n] = self._m[: self._n]
            self._m = grown
            alive = np.zeros(grown.shape[0], dtype=bool)
            alive[: self._n] = self._alive[: self._n]
            self._alive = alive
        self._m[self._n : need] = vectors
        self._alive[self._n : need] = True
        for offset, doc_id in enumerate(ids):
            self._slot[doc_id] = self._n + offset
        self._ids.extend(ids)
        self._n = need
        self._n_live += len(ids)

    def remove(self, ids: Iterable[str]) -> None:
        """Forget ``ids``; unknown ids are ignored."""
        for doc_id in ids:
            slot = self._slot.pop(doc_id, None)
            if slot is None:
                continue
            self._alive[slot] = False
            self._ids[slot] = None
            self._n_live -= 1
        if self._n - self._n_live > max(1000, self._n_live):
            self._compact()

    def _compact(self) -> None:
        live = np.flatnonzero(self._alive[: self._n])
        self._m = np.ascontiguousarray(self._m[live])
        self._ids = [self._ids[s] for s in live]
        self._slot = {doc_id: i for i, doc_id in enumerate(self._ids)}  # type: ignore[misc]
        self._n = len(live)
        self._alive = np.ones(self._n, dtype=bool)

    def matrix(self) -> np.ndarray:
        """The live rows as one ``(n, d)`` array, aligned with :attr:`ids` (a view when nothing is deleted)."""
        if self._n_live == self._n:
            return self._m[: self._n]
        return self._m[: self._n][self._alive[: self._n]]

    def vector(self, doc_id: str) -> np.ndarray:
        """The normalised vector stored for ``doc_id``."""
        return self._m[self._slot[doc_id]]

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Normalised vectors for ``ids`` (one row each)."""
        return self._m[[self._slot[i] for i in ids]]

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        """Cosine of the query with every row slot (dead rows get ``-inf``)."""
        q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dimension:
            raise ValueError(f"query vector has {q.shape[0]} dimensions, this index holds {self.dimension}")
        norm = float(np.linalg.norm(q))
        if norm:
            q = q / norm
        # einsum runs in numpy's own SIMD loop: on a busy 2-core machine it beats a multi-threaded
        # BLAS gemv, whose worker threads fight the caller for the cores (measured in bench/index_speed.py).
        out = np.einsum("ij,j->i", self._m[: self._n], q)
        if self._n_live != self._n:
            out[~self._alive[: self._n]] = -np.inf
        return out

    def search(self, query_vector: np.ndarray, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` most similar ``(id, cosine)`` pairs, best first."""
        if k <= 0 or not self._n_live:
            return []
        scores = self.scores(query_vector)
        top = top_k(scores, min(k, self._n_live))
        return [(self._ids[s], float(scores[s])) for s in top.tolist()]  # type: ignore[misc]
