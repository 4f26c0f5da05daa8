"""The metadata every framework adapter gives a hit: the chunk's own, plus its scores, source and page."""

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


__all__ = ["hit_metadata"]
