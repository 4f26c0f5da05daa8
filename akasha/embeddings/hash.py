"""A deterministic, offline embedder for tests: each token is hashed into one of ``dimension`` buckets
with a sign, so texts that share words get similar vectors (quality far below a real model's)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from akasha.embeddings.base import normalize_rows
from akasha.retrieval.tokenize import tokenize


class HashEmbedder:
    """Deterministic feature-hashing embedder (64 dimensions unless told otherwise)."""

    batch_size = 1024

    def __init__(self, dimension: int = 64) -> None:
        if dimension <= 0:
            raise ValueError(f"hash embedder dimension must be positive, got {dimension}")
        self.dimension = dimension
        self.name = "hash" if dimension == 64 else f"hash:{dimension}"
        #: A fixed function of the text names its vectors itself: no probe texts are embedded to fingerprint it.
        self.vector_identity = self.name
        self.calls = 0  # embed_documents calls, so tests can assert "no re-embedding"
        self.texts_embedded = 0

    def _bucket(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dimension, (1.0 if (value >> 63) & 1 else -1.0)

    def _embed_one(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimension, dtype=np.float32)
        for token in tokenize(text):
            bucket, sign = self._bucket(token)
            vector[bucket] += sign
        if not vector.any():
            # Texts without tokens still get a deterministic, non-zero vector.
            bucket, sign = self._bucket("\x00" + text)
            vector[bucket] = sign
        return vector

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return normalize_rows(np.stack([self._embed_one(t) for t in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        return normalize_rows(self._embed_one(text)[None, :])[0]

    def __repr__(self) -> str:
        return f"HashEmbedder(dimension={self.dimension})"


def make_hash_embedder(rest: str = "", **_: object) -> HashEmbedder:
    """Factory for ``"hash"`` (64 dimensions) and ``"hash:<dimension>"``."""
    if not rest:
        return HashEmbedder()
    try:
        return HashEmbedder(int(rest))
    except ValueError:
        raise ValueError(f"'hash:{rest}': the part after 'hash:' must be a dimension such as 'hash:256'") from None
