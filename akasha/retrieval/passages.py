"""Passage vectors: the encoder's own view of each short stretch of a chunk, for ``auto``'s dense ranking.

A chunk's vector (the mean of its token states) is diluted by everything around the sentence that
answers a question; means over windows of :data:`PASSAGE_TOKENS` tokens every :data:`PASSAGE_STRIDE`
give a vector per short passage, for no extra encoder work. ``auto`` scores each of the
:data:`PASSAGE_FETCH` best dense candidates by the better of its chunk and best passage cosine.

Stored as int8 with one float32 scale per vector (:func:`pack`). Only local mean-pooling models give
them; otherwise, or where some chunk has none, ``auto`` ranks by chunk vectors alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

#: Tokens per passage window, and the step between windows (both measured on four question sets).
PASSAGE_TOKENS = 16
PASSAGE_STRIDE = 8
#: Dense candidates (best chunk cosines) that ``auto`` re-scores with their passages.
PASSAGE_FETCH = 200

#: ``scores(ids, query_vector) -> best passage cosine of each id``, or None when some id has no passages.
PassageScores = Callable[[Sequence[str], np.ndarray], "np.ndarray | None"]


def window_vectors(states: np.ndarray, tokens: int = PASSAGE_TOKENS, stride: int = PASSAGE_STRIDE) -> np.ndarray:
    """Unit vectors of the mean of ``states`` (one row per real token) over windows of ``tokens``, every ``stride``.

    The last window ends at the last token; a text shorter than a window gets one vector, its mean.
    """
    states = np.asarray(states, dtype=np.float32)
    n = states.shape[0]
    if n == 0:
        return np.zeros((0, states.shape[1]), dtype=np.float32)
    width = min(tokens, n)
    starts = list(range(0, n - width + 1, stride))
    if starts[-1] + width < n:
        starts.append(n - width)
    sums = np.vstack([np.zeros((1, states.shape[1]), dtype=np.float64), np.cumsum(states, axis=0, dtype=np.float64)])
    first = np.asarray(starts)
    windows = (sums[first + width] - sums[first]).astype(np.float32)
    windows /= np.maximum(np.linalg.norm(windows, axis=1, keepdims=True), 1e-12)
    return windows


def pack(vectors: np.ndarray) -> bytes:
    """``(m, d)`` unit vectors as bytes: m float32 scales, then m * d int8 codes (``vector ~ codes * scale``)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    scales = np.maximum(np.abs(vectors).max(axis=1), 1e-12) / 127.0
    codes = np.clip(np.rint(vectors / scales[:, None]), -127, 127).astype(np.int8)
    return scales.astype(np.float32).tobytes() + codes.tobytes()


def unpack(blob: bytes, dimension: int) -> tuple[np.ndarray, np.ndarray]:
    """``(codes (m, d) int8, scales (m,) float32)`` of a :func:`pack`; ValueError when the size does not fit."""
    count, rest = divmod(len(blob), 4 + dimension)
    if rest or not count:
        raise ValueError(f"{len(blob)} bytes are not passage vectors of {dimension} dimensions")
    scales = np.frombuffer(blob, dtype=np.float32, count=count)
    codes = np.frombuffer(blob, dtype=np.int8, offset=4 * count).reshape(count, dimension)
    return codes, scales


class PassageTable:
    """Each chunk id's passage vectors (int8 codes and scales), for scoring a few candidates at a time.

    All codes lie in one growing int8 matrix; arrays and the id -> rows map are swapped together, as one
    tuple, so a search beside an edit reads a consistent pair.
    """

    def __init__(self, dimension: int) -> None:
        self.dimension = int(dimension)
        # (codes, scales, chunk id -> (first row, count))
        self._arrays: tuple[np.ndarray, np.ndarray, dict[str, tuple[int, int]]] = (
            np.zeros((0, self.dimension), dtype=np.int8), np.zeros(0, dtype=np.float32), {})
        self._used = 0  # rows of the arrays in use (live or dead)
        self._live_rows = 0

    def __len__(self) -> int:
        return len(self._arrays[2])

    def add(self, ids: Sequence[str], blobs: Sequence[bytes | None]) -> None:
        """Set (or replace) the passages of ``ids``; a None or malformed blob leaves that id without any."""
        self.remove(ids)
        decoded = []
        for chunk_id, blob in zip(ids, blobs, strict=True):
            if blob:
                try:
                    decoded.append((chunk_id, *unpack(blob, self.dimension)))
                except ValueError:
                    continue
        need = self._used + sum(len(scales) for _, _, scales in decoded)
        if need > len(self._arrays[0]) or not self._arrays[0].flags.writeable:
            self._rebuild(max(need, 2 * len(self._arrays[0]), 1024))
        all_codes, all_scales, where = self._arrays
        for chunk_id, codes, scales in decoded:
            first = self._used
            all_codes[first : first + len(scales)] = codes
            all_scales[first : first + len(scales)] = scales
            where[chunk_id] = (first, len(scales))  # rows written first: a reader never sees unwritten rows
            self._used += len(scales)
            self._live_rows += len(scales)

    def remove(self, ids: Iterable[str]) -> None:
        """Forget the passages of ``ids`` (unknown ids are ignored); space is reclaimed once half is dead."""
        where = self._arrays[2]
        for chunk_id in ids:
            place = where.pop(chunk_id, None)
            if place is not None:
                self._live_rows -= place[1]
        if self._used > 2 * self._live_rows + 1024:
            self._rebuild(max(2 * self._live_rows, 1024))

    def _rebuild(self, rows: int) -> None:
        """Copy the live rows, in order, into new arrays of ``rows`` rows (dropping removed ones); swap at once."""
        old_codes, old_scales, old_where = self._arrays
        codes = np.zeros((rows, self.dimension), dtype=np.int8)
        scales = np.zeros(rows, dtype=np.float32)
        where: dict[str, tuple[int, int]] = {}
        used = 0
        for chunk_id, (first, count) in old_where.items():
            codes[used : used + count] = old_codes[first : first + count]
            scales[used : used + count] = old_scales[first : first + count]
            where[chunk_id] = (used, count)
            used += count
        self._arrays, self._used = (codes, scales, where), used

    def _rows(self, ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """(codes, scales, every passage row of ``ids`` in order, each id's count); None when one has no passages."""
        codes, scales, where = self._arrays
        try:
            places = [where[i] for i in ids]
        except KeyError:
            return None
        firsts = np.fromiter((f for f, _ in places), dtype=np.int64, count=len(places))
        counts = np.fromiter((c for _, c in places), dtype=np.int64, count=len(places))
        offsets = np.cumsum(counts) - counts
        rows = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(firsts - offsets, counts)
        return codes, scales, rows, counts

    def best(self, ids: Sequence[str], query: np.ndarray) -> np.ndarray | None:
        """The best passage cosine of each of ``ids`` with the unit vector ``query``; None if one has no passages."""
        found = self._rows(ids)
        if found is None:
            return None
        codes, scales, rows, counts = found
        if not len(counts):
            return np.zeros(0, dtype=np.float32)
        # int8 codes straight into einsum: cheaper than converting the gathered rows to float32 first
        cosines = np.einsum("ij,j->i", codes[rows], np.asarray(query, dtype=np.float32)) * scales[rows]
        return np.maximum.reduceat(cosines, np.cumsum(counts) - counts).astype(np.float32)

    def state(self, ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``(codes, scales, counts)`` of ``ids`` in order, one flat array each (a snapshot); None if one has none."""
        found = self._rows(ids)
        if found is None or not len(found[3]):
            return None
        codes, scales, rows, counts = found
        return codes[rows], scales[rows], counts

    @classmethod
    def from_state(cls, ids: Sequence[str], codes: np.ndarray, scales: np.ndarray, counts: np.ndarray
                   ) -> PassageTable | None:
        """The table :meth:`state` described (its arrays used as they are), or None when they do not fit ``ids``."""
        counts = np.asarray(counts, dtype=np.int64)
        if codes.ndim != 2 or codes.dtype != np.int8 or len(counts) != len(ids) or (counts < 1).any() \
                or int(counts.sum()) != len(codes) or len(scales) != len(codes):
            return None
        table = cls(codes.shape[1])
        firsts = (np.cumsum(counts) - counts).tolist()
        where = {chunk_id: (first, count) for chunk_id, first, count in zip(ids, firsts, counts.tolist(), strict=True)}
        table._arrays = (codes, np.asarray(scales, dtype=np.float32), where)
        table._used = table._live_rows = len(codes)
        return table


def rescore(ranked: Sequence[tuple[str, float]], query: np.ndarray, scores: PassageScores
            ) -> tuple[list[tuple[str, float]], dict[str, float]] | None:
    """``ranked`` (id, chunk cosine) re-sorted by the better of the chunk and its best passage cosine.

    Returns that list (ties in ``ranked``'s order) and each id's best passage cosine; None if one has none.
    """
    ids = [i for i, _ in ranked]
    best = scores(ids, query)
    if best is None:
        return None
    merged = [(i, max(float(c), float(b))) for (i, c), b in zip(ranked, best.tolist(), strict=True)]
    order = sorted(range(len(merged)), key=lambda n: -merged[n][1])
    return [merged[n] for n in order], dict(zip(ids, best.tolist(), strict=True))


__all__ = ["PASSAGE_FETCH", "PASSAGE_STRIDE", "PASSAGE_TOKENS", "PassageScores", "PassageTable", "pack",
           "rescore", "unpack", "window_vectors"]
