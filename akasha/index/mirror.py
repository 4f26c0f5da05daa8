"""The Chroma collection ``CorpusIndex(..., store="chroma")`` writes beside its cache.

One plain record per chunk (document = chunk text, metadata = source, page,
chunk index, content hash, embedder), so chromadb, LangChain's ``Chroma`` or any
other Chroma tool can read the corpus; the collection name is the one earlier
releases used, so their collections are reused.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any


def collection_name(model: str, settings: dict[str, Any]) -> str:
    """A Chroma-safe collection name unique to (model, chunk settings); the same as earlier releases used."""
    key = f"{model}|{sorted(settings.items())}"
    return "akasha-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def mirror_collection(cache_dir: Path | None, model: str, chunk_size: int, chunk_overlap: int) -> Any:
    """The Chroma store ``store="chroma"`` writes: ``<cache_dir>/chroma``, or memory without a cache folder."""
    from akasha.stores.chroma import ChromaStore

    name = collection_name(model, {"chunk_size": chunk_size, "chunk_overlap": chunk_overlap})
    where = cache_dir / "chroma" if cache_dir is not None else None
    return ChromaStore(name, path=where, create=True)  # the index checks whose vectors it holds


__all__ = ["collection_name", "mirror_collection"]
