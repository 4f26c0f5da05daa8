"""What the framework adapters share: a hit's metadata (the chunk's own, plus its scores, source and page), ``k``."""

from __future__ import annotations

from typing import Any

from akasha.types import Hit


def hit_metadata(hit: Hit, **extra: Any) -> dict[str, Any]:
    """``hit``'s chunk metadata with ``extra``, ``score``, ``scores`` (per retriever) and ``retriever`` set, and
    ``source`` (the document id when the chunk has none) and ``page`` (None) always present."""
    metadata = dict(hit.chunk.metadata)
    metadata.update(
        extra,
        score=float(hit.score),
        scores={name: float(value) for name, value in hit.details.items()},
        retriever=hit.source,
    )
    metadata.setdefault("source", hit.chunk.doc_id)
    metadata.setdefault("page", None)
    return metadata


def positive_k(k: object, what: str) -> int:
    """``k`` when it is a positive integer (``what`` per call), else ValueError saying so."""
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise ValueError(f"k must be a positive integer ({what} per call), got {k!r}")
    return k


__all__ = ["hit_metadata", "positive_k"]
