"""The embedder contract every embedding provider implements: texts in, float32 row vectors out;
``name`` namespaces the index cache, so two models never mix vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Texts in, one float32 vector per text out."""

    #: Stable identity used to namespace cached vectors, e.g. ``"hf:all-MiniLM-L6-v2"``.
    name: str
    #: Vector size when known without calling the model, else ``None``.
    dimension: int | None
    #: How many texts one provider request may carry.
    batch_size: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed many texts; returns an array of shape ``(len(texts), dimension)``."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one question; returns a vector of shape ``(dimension,)``."""
        ...


def as_matrix(vectors: object, expected_rows: int, who: str) -> np.ndarray:
    """Coerce what a provider returned into a 2-D float32 array, checking the row count."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1 and expected_rows == 1:
        matrix = matrix.reshape(1, -1)
    if matrix.ndim != 2 or matrix.shape[0] != expected_rows:
        raise ValueError(
            f"embedder {who!r} returned shape {matrix.shape} for {expected_rows} texts; "
            "expected one vector per text"
        )
    if not np.isfinite(matrix).all():  # checked before anything is cached: a bad reply is never kept
        raise ValueError(f"embedder {who!r} returned NaN or infinite values; nothing was cached: check the "
                         "embeddings server, then run the same call again")
    return matrix


def embed_question(embedder: Embedder, query: str | np.ndarray) -> np.ndarray:
    """``query``'s float32 vector: the embedder's for a question, else the vector given."""
    return np.asarray(embedder.embed_query(query) if isinstance(query, str) else query, dtype=np.float32)


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale rows to unit length (zero rows stay zero) so a dot product is a cosine."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms
