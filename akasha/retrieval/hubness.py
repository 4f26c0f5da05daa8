"""Hub scores: how close each chunk lies to its nearest neighbours, so ``auto`` can discount generic chunks.

Some chunks (a table of contents, boilerplate) sit near everything and push the answer out of the
top five. As in CSLS (Conneau et al. 2018), a chunk's hub score is its mean cosine with its
:data:`HUB_NEIGHBOURS` nearest other chunks; ``auto`` re-sorts the dense candidates by
``cosine - SearchSettings.hub_weight * hub score`` (:func:`discount`), except for a CJK question.

:class:`~akasha.retrieval.dense.DenseIndex` keeps each chunk's nearest neighbours up to date after
a first pass over all pairs; above :data:`HUB_MAX_ROWS` chunks nothing is computed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: Neighbours a hub score averages over (5 and 10 did best of 5-50 on all four question sets).
HUB_NEIGHBOURS = 5
#: ``auto``'s default weight of the hub score (``SearchSettings.hub_weight``); 0.4-0.6 all helped.
HUB_WEIGHT = 0.5
#: Above this many chunks hub scores are not computed (the pass grows with the square of the corpus).
HUB_MAX_ROWS = 20_000
#: The dense first keeps its place when BM25 ranks it this high (:func:`discount`).
AGREE_DEPTH = 5
#: Rows per block of the pairwise pass (a block's cosines are BLOCK x n float32).
BLOCK = 1024

#: ``hubs(ids) -> scores`` (aligned with ``ids``) or None when there are none to give.
HubLookup = Callable[[Sequence[str]], "np.ndarray | None"]


def nearest(queries: np.ndarray, matrix: np.ndarray, own: np.ndarray | None = None,
            neighbours: int = HUB_NEIGHBOURS) -> tuple[np.ndarray, np.ndarray]:
    """``(cosines, rows)``: each query row's ``neighbours`` largest cosines with ``matrix``'s rows, and which rows.

    ``own[i]``: the row of ``matrix`` that query ``i`` is (not its own neighbour), or -1. Both arrays are
    ``(len(queries), neighbours)``, unsorted; spare places hold cosine ``-inf`` and row -1.
    """
    count, n = int(queries.shape[0]), int(matrix.shape[0])
    cosines = np.full((count, neighbours), -np.inf, dtype=np.float32)
    rows = np.full((count, neighbours), -1, dtype=np.int64)
    take = min(neighbours, n)
    if take == 0 or count == 0:
        return cosines, rows
    for start in range(0, count, BLOCK):
        stop = min(start + BLOCK, count)
        block = queries[start:stop] @ matrix.T
        if own is not None:
            mine = own[start:stop]
            hit = mine >= 0
            block[np.flatnonzero(hit), mine[hit]] = -np.inf
        picked = np.argpartition(block, n - take, axis=1)[:, n - take:]
        values = np.take_along_axis(block, picked, axis=1)
        rows[start:stop, :take] = np.where(np.isfinite(values), picked, -1)
        cosines[start:stop, :take] = values
    return cosines, rows


def merge(cosines: np.ndarray, rows: np.ndarray, more_cosines: np.ndarray, more_rows: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray]:
    """The largest ``cosines.shape[1]`` of each row's two candidate sets (``cosines``/``rows``, ``more_`` pair)."""
    width = cosines.shape[1]
    both = np.concatenate([cosines, more_cosines], axis=1)
    which = np.concatenate([rows, more_rows], axis=1)
    picked = np.argpartition(both, both.shape[1] - width, axis=1)[:, both.shape[1] - width:]
    return np.take_along_axis(both, picked, axis=1), np.take_along_axis(which, picked, axis=1)


def mean_cosine(cosines: np.ndarray) -> np.ndarray:
    """Hub scores from :func:`nearest`'s cosines: the mean over each row's real neighbours (0 with none)."""
    real = np.isfinite(cosines)
    total = np.where(real, cosines, 0.0).sum(axis=1)
    count = real.sum(axis=1)
    return np.where(count > 0, total / np.maximum(count, 1), 0.0).astype(np.float32)


def hub_scores(matrix: np.ndarray, neighbours: int = HUB_NEIGHBOURS) -> np.ndarray:
    """Each row's mean cosine with its ``neighbours`` nearest other rows; ``matrix`` is ``(n, d)``, unit rows.

    Exact duplicates count as neighbours; with fewer other rows the mean is over all; a single row scores 0.
    """
    cosines, _rows = nearest(matrix, matrix, np.arange(matrix.shape[0]), neighbours)
    return mean_cosine(cosines)


def discount(ranked: Sequence[tuple[str, float]], hubs: HubLookup, weight: float,
             lexical: Sequence[tuple[Any, float]] = ()) -> list[tuple[str, float]]:
    """``ranked`` (id, cosine) re-sorted by ``cosine - weight * hub score``; unchanged when there are no scores.

    The first pair keeps its place when BM25's ``lexical`` list holds it among its first
    :data:`AGREE_DEPTH` (then it is the match). Pairs keep their raw cosines; ties their input order.
    """
    if ranked and ranked[0][0] in {item for item, _ in lexical[:AGREE_DEPTH]}:
        return [ranked[0], *discount(ranked[1:], hubs, weight)]
    if not ranked or not weight:
        return list(ranked)
    ids = [doc_id for doc_id, _ in ranked]
    scores = hubs(ids)
    if scores is None:
        return list(ranked)
    adjusted = np.asarray([s for _, s in ranked], dtype=np.float64) - weight * np.asarray(scores, dtype=np.float64)
    order = np.argsort(-adjusted, kind="stable")
    return [ranked[i] for i in order.tolist()]


__all__ = ["AGREE_DEPTH", "BLOCK", "HUB_MAX_ROWS", "HUB_NEIGHBOURS", "HUB_WEIGHT", "HubLookup", "discount",
           "hub_scores", "mean_cosine", "merge", "nearest"]
