"""Binary-quantised candidate search: one sign bit per dimension, Hamming distance by popcount.

Exact cosine over a million float32 rows is memory-bandwidth bound. The sign bits of the *centred*
vectors are 32x smaller and their Hamming distance tracks the angle, so the nearest codes usually
hold the exact top-k; :class:`~akasha.retrieval.dense.DenseIndex` rescores them exactly.

Codes are stored word-major (``(words, rows)`` uint64): the distance is a few XOR +
``np.bitwise_count`` passes over contiguous arrays, in cache-sized blocks (numpy >= 2.0).
"""

from __future__ import annotations

import numpy as np

_BLOCK = 32_768  # rows per pass: the scratch arrays stay in L2 cache


def n_words(dimension: int) -> int:
    """uint64 words needed for one sign bit per dimension."""
    return (dimension + 63) // 64


def encode(rows: np.ndarray, center: np.ndarray) -> np.ndarray:
    """Sign bits of ``rows - center`` as a word-major ``(words, len(rows))`` uint64 array."""
    rows = np.asarray(rows, dtype=np.float32).reshape(-1, center.shape[0])
    words = n_words(center.shape[0])
    bits = np.packbits(rows > center, axis=1)  # (n, ceil(d / 8)) uint8, big-endian bit order
    pad = words * 8 - bits.shape[1]
    if pad:
        bits = np.concatenate([bits, np.zeros((bits.shape[0], pad), dtype=np.uint8)], axis=1)
    return np.ascontiguousarray(bits.view(np.uint64).T)


class BinaryCodes:
    """Growable word-major sign codes for row slots ``0..n-1`` of a dense matrix."""

    def __init__(self, center: np.ndarray) -> None:
        if not hasattr(np, "bitwise_count"):
            raise RuntimeError(
                f"binary-quantised search needs numpy >= 2.0 (np.bitwise_count); numpy {np.__version__} is "
                "installed. Upgrade numpy, or raise DenseIndex(quantize_above=...) to keep exact search."
            )
        self.center = np.asarray(center, dtype=np.float32).reshape(-1)
        self._codes = np.zeros((n_words(self.center.shape[0]), 0), dtype=np.uint64)
        self.n = 0

    @classmethod
    def build(cls, matrix: np.ndarray, n: int, block: int = 65_536) -> BinaryCodes:
        """Codes for ``matrix[:n]``, centred on its mean (in blocks, so a memory map stays lazy)."""
        total = np.zeros(matrix.shape[1], dtype=np.float64)
        for start in range(0, n, block):
            total += matrix[start : min(n, start + block)].sum(axis=0, dtype=np.float64)
        codes = cls((total / max(n, 1)).astype(np.float32))
        codes._reserve(n)
        for start in range(0, n, block):
            codes.append(matrix[start : min(n, start + block)])
        return codes

    def _reserve(self, need: int) -> None:
        if need > self._codes.shape[1]:
            grown = np.zeros((self._codes.shape[0], max(need, 2 * self._codes.shape[1], 1024)), dtype=np.uint64)
            grown[:, : self.n] = self._codes[:, : self.n]
            self._codes = grown

    def append(self, rows: np.ndarray) -> None:
        """Encode ``rows`` as the next slots."""
        encoded = encode(rows, self.center)
        self._reserve(self.n + encoded.shape[1])
        self._codes[:, self.n : self.n + encoded.shape[1]] = encoded
        self.n += encoded.shape[1]

    def keep(self, slots: np.ndarray) -> None:
        """Keep only ``slots`` (in that order), as :meth:`DenseIndex._compact` does to its rows."""
        self._codes = np.ascontiguousarray(self._codes[:, : self.n][:, slots])
        self.n = self._codes.shape[1]

    @property
    def nbytes(self) -> int:
        return int(self._codes.nbytes)

    def distances(self, query: np.ndarray) -> np.ndarray:
        """Hamming distance (uint16) from the query's code to every slot."""
        q = encode(query, self.center)[:, 0]
        out = np.empty(self.n, dtype=np.uint16)
        xor = np.empty(_BLOCK, dtype=np.uint64)
        count = np.empty(_BLOCK, dtype=np.uint8)
        for start in range(0, self.n, _BLOCK):
            stop = min(self.n, start + _BLOCK)
            size = stop - start
            acc = out[start:stop]
            acc[:] = 0
            for word in range(self._codes.shape[0]):
                np.bitwise_xor(self._codes[word, start:stop], q[word], out=xor[:size])
                np.bitwise_count(xor[:size], out=count[:size])
                np.add(acc, count[:size], out=acc)
        return out


def nearest(distances: np.ndarray, count: int) -> np.ndarray:
    """Slots of (about) the ``count`` smallest distances, ascending: ties at the cut-off (found by a
    histogram) are kept unless they would more than double the set."""
    if count >= len(distances):
        return np.arange(len(distances))
    hist = np.bincount(distances)
    cut = int(np.searchsorted(np.cumsum(hist), count))
    slots = np.flatnonzero(distances <= cut)
    if len(slots) > 2 * count:
        slots = np.sort(slots[np.argpartition(distances[slots], count - 1)[:count]])
    return slots
