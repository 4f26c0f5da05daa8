"""Cosine search over one float32 matrix: exact below a size threshold, binary-quantised above it.

Vectors are normalised once when added, so an exact query is one matrix-vector product plus
``argpartition``. Rows live in a buffer that grows by doubling; removals are masked and compacted
away when dead rows outnumber live ones. :meth:`DenseIndex.from_matrix` takes a memory-mapped ``.npy``.

From ``quantize_above`` live rows a query ranks every row by the Hamming distance of sign codes
(:mod:`akasha.retrieval.quantized`) and rescores the nearest :meth:`~DenseIndex.rescore_count`
exactly. Returned scores are always exact cosines.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from akasha.embeddings.base import normalize_rows
from akasha.retrieval import hubness
from akasha.retrieval.bm25 import top_k
from akasha.retrieval.passages import PassageTable
from akasha.retrieval.quantized import BinaryCodes, nearest

log = logging.getLogger(__name__)

#: Up to this many matrix elements the product goes to BLAS (single-threaded at these sizes, faster than
#: einsum); above it OpenBLAS threads fight the caller for the cores, so numpy's single-threaded einsum does it.
BLAS_MAX_ELEMENTS = 2_000_000


def _matvec(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` by whichever kernel is faster at this size (see :data:`BLAS_MAX_ELEMENTS`)."""
    if matrix.size <= BLAS_MAX_ELEMENTS:
        return matrix @ vector
    return np.einsum("ij,j->i", matrix, vector)

#: Live rows from which search switches from the exact scan to quantised candidates + exact rescoring
#: (below it the exact scan stays inside the latency target).
QUANTIZE_ABOVE = 200_000
#: Candidates rescored exactly: max(RESCORE_MIN, RESCORE_PER_K * k, min(RESCORE_FRACTION * rows, RESCORE_MAX));
#: recall against exact search rises with the corpus at a fixed fraction, so the fraction is capped.
RESCORE_MIN = 2_000
RESCORE_PER_K = 40
RESCORE_FRACTION = 0.02
RESCORE_MAX = 10_000


class DenseIndex:
    """Normalised row vectors keyed by string ids; exact inner-product search."""

    def __init__(self, dimension: int | None = None, *, quantize_above: int | None = QUANTIZE_ABOVE,
                 rescore_fraction: float = RESCORE_FRACTION, rescore_min: int = RESCORE_MIN,
                 rescore_max: int = RESCORE_MAX) -> None:
        """``quantize_above=None`` keeps exact search at every size; see the module docstring."""
        self.dimension = dimension
        self.quantize_above = quantize_above
        self.rescore_fraction = float(rescore_fraction)
        self.rescore_min = int(rescore_min)
        self.rescore_max = int(rescore_max)
        self._codes: BinaryCodes | None = None
        self._m = np.zeros((0, dimension or 0), dtype=np.float32)
        self._n = 0  # rows in use (live + dead)
        self._ids: list[str | None] = []
        self._slot: dict[str, int] = {}
        self._alive = np.zeros(0, dtype=bool)
        self._n_live = 0
        # Each slot's nearest other live rows (cosines, slots), kept up to date once asked for
        # (:meth:`hubs`); slots whose neighbour list names a removed row are recomputed on the next ask.
        self._near: tuple[np.ndarray, np.ndarray] | None = None
        self._stale = np.zeros(0, dtype=bool)
        # Each row's passage vectors (akasha.retrieval.passages), for the rows that came with them.
        self._passages: PassageTable | None = None

    @classmethod
    def from_matrix(cls, ids: Sequence[str], matrix: np.ndarray, *, normalized: bool = False,
                    neighbours: tuple[np.ndarray, np.ndarray] | None = None,
                    passages: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                    **options: Any) -> DenseIndex:
        """Wrap an ``(n, d)`` matrix (memory-mapped is fine), uncopied when normalised; ``options``: the constructor's.

        ``neighbours``/``passages``: :meth:`neighbour_state`/:meth:`passage_state` of these rows, ignored if unfit.
        """
        index = cls(int(matrix.shape[1]), **options)
        matrix = matrix if normalized and matrix.dtype == np.float32 else normalize_rows(matrix)
        index._m = matrix
        index._n = len(ids)
        index._ids = list(ids)
        index._slot = {doc_id: i for i, doc_id in enumerate(ids)}
        if len(index._slot) != len(index._ids):
            raise ValueError("DenseIndex.from_matrix got duplicate ids")
        index._alive = np.ones(len(ids), dtype=bool)
        index._n_live = len(ids)
        if neighbours is not None:
            index._restore_neighbours(*neighbours)
        if passages is not None:
            index._passages = PassageTable.from_state(ids, *passages)
        return index

    def __len__(self) -> int:
        return self._n_live

    def __contains__(self, item: object) -> bool:
        return item in self._slot

    @property
    def ids(self) -> list[str]:
        """Live ids in row order."""
        return [i for i in self._ids if i is not None]

    def add(self, ids: Sequence[str], vectors: np.ndarray, passages: Sequence[bytes | None] | None = None) -> None:
        """Add (or replace) rows: ``vectors`` ``(len(ids), d)``, normalised; ``passages``: each ``pack()`` or None."""
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
        first = self._n
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
        if self._codes is not None and self._codes.n == self._n:
            self._codes.append(vectors)
        else:
            self._codes = None
        for offset, doc_id in enumerate(ids):
            self._slot[doc_id] = self._n + offset
        self._ids.extend(ids)
        self._n = need
        self._n_live += len(ids)
        if self._near is not None:
            self._add_neighbours(first)
        if passages is not None and any(passages):
            if self._passages is None:
                self._passages = PassageTable(self.dimension)
            self._passages.add(ids, passages)
        if self._quantized():
            self._ensure_codes()  # pay for the codes at build time, not on the first query

    def remove(self, ids: Iterable[str]) -> None:
        """Forget ``ids``; unknown ids are ignored."""
        removed, removed_ids = [], []
        for doc_id in ids:
            slot = self._slot.pop(doc_id, None)
            if slot is None:
                continue
            self._alive[slot] = False
            self._ids[slot] = None
            self._n_live -= 1
            removed.append(slot)
            removed_ids.append(doc_id)
        if self._passages is not None:
            self._passages.remove(removed_ids)  # one call: the table decides once whether to compact
        if removed and self._near is not None:
            self._stale |= np.isin(self._near[1], removed).any(axis=1)
        if self._n - self._n_live > max(1000, self._n_live):
            self._compact()

    def _compact(self) -> None:
        live = np.flatnonzero(self._alive[: self._n])
        self._m = np.ascontiguousarray(self._m[live])
        self._near = None  # slots are renumbered: recomputed on the next ask
        if self._codes is not None:
            self._codes.keep(live)
        self._ids = [self._ids[s] for s in live]
        self._slot = {doc_id: i for i, doc_id in enumerate(self._ids) if doc_id is not None}
        self._n = len(live)
        self._alive = np.ones(self._n, dtype=bool)

    def matrix(self) -> np.ndarray:
        """The live rows as one ``(n, d)`` array, aligned with :attr:`ids` (a view when nothing is deleted)."""
        if self._n_live == self._n:
            return self._m[: self._n]
        return self._m[: self._n][self._alive[: self._n]]

    def hubs(self) -> np.ndarray | None:
        """The live rows' hub scores, aligned with :meth:`matrix` (:func:`akasha.retrieval.hubness.hub_scores`).

        The first call finds every row's nearest neighbours (``n^2 * d`` work), kept up to date after; None
        above :data:`~akasha.retrieval.hubness.HUB_MAX_ROWS` live rows.
        """
        near = self._neighbours()
        return None if near is None else hubness.mean_cosine(near[0][: self._n][self._alive[: self._n]])

    def has_hubs(self) -> bool:
        """True when the hub scores are up to date without any computing (a snapshot can then keep them)."""
        return self._near is not None and not self._stale.any()

    def hub_scores(self, ids: Sequence[str]) -> np.ndarray | None:
        """Hub scores of ``ids`` (known ids only), or None where :meth:`hubs` gives none."""
        near = self._neighbours()
        return None if near is None else hubness.mean_cosine(near[0][[self._slot[i] for i in ids]])

    def neighbour_state(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Snapshot of the live rows' nearest neighbours: ``(cosines, rows)`` (rows as in :meth:`matrix`), or None."""
        near = self._neighbours()
        if near is None:
            return None
        live = np.flatnonzero(self._alive[: self._n])
        row_of = self._live_rows(live)
        slots = near[1][live]
        return near[0][live].copy(), np.where(slots >= 0, row_of[np.maximum(slots, 0)], -1)

    def _neighbours(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Every row's nearest neighbours ``(cosines, slots)``, brought up to date (see :meth:`hubs`), or None."""
        if self._n_live > hubness.HUB_MAX_ROWS:
            self._near = None
            return None
        if self._near is not None and not self._stale.any():
            return self._near
        live = np.flatnonzero(self._alive[: self._n])
        if self._near is None:
            width = hubness.HUB_NEIGHBOURS
            near = (np.full((self._n, width), -np.inf, dtype=np.float32), np.full((self._n, width), -1, dtype=np.int64))
            self._find_nearest(live, live, near)
            self._stale = np.zeros(self._n, dtype=bool)
            self._near = near  # complete before a concurrent search can see it
        else:
            self._find_nearest(live[self._stale[live]], live, self._near)
            self._stale = np.zeros(self._n, dtype=bool)
        return self._near

    def _live_rows(self, live: np.ndarray) -> np.ndarray:
        """Slot -> its row among the live rows ``live`` (-1 for a dead slot)."""
        rows = np.full(self._n, -1, dtype=np.int64)
        rows[live] = np.arange(len(live))
        return rows

    def _find_nearest(self, slots: np.ndarray, live: np.ndarray, near: tuple[np.ndarray, np.ndarray]) -> None:
        """Write into ``near`` the nearest neighbours of the rows at ``slots`` among the live rows ``live``."""
        cosines, rows = hubness.nearest(self._m[slots], self._m[live], self._live_rows(live)[slots],
                                        hubness.HUB_NEIGHBOURS)
        near[0][slots], near[1][slots] = cosines, np.where(rows >= 0, live[np.maximum(rows, 0)], -1)

    def _restore_neighbours(self, cosines: np.ndarray, rows: np.ndarray) -> None:
        """Take a snapshot's :meth:`neighbour_state` (every row live, so rows are slots) if it fits this index."""
        shape = (self._n, hubness.HUB_NEIGHBOURS)
        if np.shape(cosines) != shape or np.shape(rows) != shape or self._n != self._n_live:
            return
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and (rows.max() >= self._n or rows.min() < -1):
            return
        self._near = (np.array(cosines, dtype=np.float32), rows.copy())
        self._stale = np.zeros(self._n, dtype=bool)

    def _add_neighbours(self, first: int) -> None:
        """Rows ``first..`` were just added: their nearest neighbours, and theirs as new neighbours of the rest."""
        assert self._near is not None
        grow, width = self._n - self._near[0].shape[0], hubness.HUB_NEIGHBOURS
        if grow > 0:
            self._near = (np.vstack([self._near[0], np.full((grow, width), -np.inf, dtype=np.float32)]),
                          np.vstack([self._near[1], np.full((grow, width), -1, dtype=np.int64)]))
            self._stale = np.concatenate([self._stale, np.zeros(grow, dtype=bool)])
        if self._n_live > hubness.HUB_MAX_ROWS:
            self._near = None
            return
        live = np.flatnonzero(self._alive[: self._n])
        new = np.arange(first, self._n)
        self._find_nearest(new, live, self._near)
        old = live[live < first]
        if not len(old):
            return
        for start in range(0, len(new), hubness.BLOCK):
            block = new[start : start + hubness.BLOCK]
            more = self._m[old] @ self._m[block].T
            merged = hubness.merge(self._near[0][old], self._near[1][old], more,
                                   np.broadcast_to(block, more.shape).astype(np.int64))
            self._near[0][old], self._near[1][old] = merged

    def has_passages(self) -> bool:
        """True when every live row has passage vectors (``auto`` then re-scores its dense candidates with them)."""
        return self._passages is not None and self._n_live > 0 and len(self._passages) == self._n_live

    def passage_rows(self) -> int:
        """How many live rows have passage vectors."""
        return 0 if self._passages is None else len(self._passages)

    def passage_scores(self, ids: Sequence[str], query_vector: np.ndarray) -> np.ndarray | None:
        """The best passage cosine of each of ``ids`` with the query; None when one of them has no passages."""
        if self._passages is None:
            return None
        return self._passages.best(ids, self._unit_query(query_vector))

    def passage_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``(codes, scales, counts)`` of the live rows' passages in :attr:`ids` order; None if one lacks them."""
        if not self.has_passages():
            return None
        assert self._passages is not None
        return self._passages.state(self.ids)

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Normalised vectors for ``ids`` (one row each)."""
        return self._m[[self._slot[i] for i in ids]]

    def _unit_query(self, query_vector: np.ndarray) -> np.ndarray:
        """The query as a unit float32 vector, checked against this index's dimension."""
        q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dimension:
            raise ValueError(f"query vector has {q.shape[0]} dimensions, this index holds {self.dimension}")
        norm = float(np.linalg.norm(q))
        return q / norm if norm else q

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        """Cosine of the query with every row slot (dead rows get ``-inf``)."""
        q = self._unit_query(query_vector)
        out = _matvec(self._m[: self._n], q)
        if self._n_live != self._n:
            out[~self._alive[: self._n]] = -np.inf
        return out

    def search(self, query_vector: np.ndarray, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` most similar ``(id, cosine)`` pairs, best first (quantised candidates above the threshold)."""
        if k <= 0 or not self._n_live:
            return []
        n_cand = self.rescore_count(k)
        if self._quantized() and n_cand < self._n_live:
            return self._search_quantized(query_vector, k, n_cand)
        scores = self.scores(query_vector)
        # equal scores rank by row, as on the quantised path, so both paths agree on ties
        top = top_k(scores, min(k, self._n_live), tiebreak=np.arange(len(scores)))
        return [(self._ids[s], float(scores[s])) for s in top.tolist()]

    # ------------------------------------------------------------ quantised path
    def _quantized(self) -> bool:
        return self.quantize_above is not None and self._n_live >= self.quantize_above

    def rescore_count(self, k: int) -> int:
        """How many quantised candidates are rescored exactly for a top-``k`` query."""
        by_size = min(math.ceil(self.rescore_fraction * self._n_live), self.rescore_max)
        return max(self.rescore_min, RESCORE_PER_K * k, by_size)

    def _ensure_codes(self) -> BinaryCodes:
        if self._codes is None or self._codes.n != self._n:
            log.debug("building binary codes for %d vectors", self._n)
            self._codes = BinaryCodes.build(self._m, self._n)
        return self._codes

    def _search_quantized(self, query_vector: np.ndarray, k: int, n_cand: int) -> list[tuple[str, float]]:
        q = self._unit_query(query_vector)
        distances = self._ensure_codes().distances(q)
        if self._n_live != self._n:
            distances[~self._alive[: self._n]] = np.iinfo(distances.dtype).max
        slots = nearest(distances, n_cand)
        if self._n_live != self._n:
            slots = slots[self._alive[slots]]
        scores = _matvec(self._m[slots], q)
        top = top_k(scores, min(k, len(slots)), tiebreak=slots)
        return [(self._ids[s], float(scores[i])) for i, s in zip(top.tolist(), slots[top].tolist(), strict=True)]
