"""Plugging a shared-index backend into a CorpusIndex (``CorpusIndex(..., vector_store=URL)``).

:func:`attach` swaps the index's local manifest for the server's (keeping the
local one for the per-machine stat cache), so parsed chunks, vectors and the
committed corpus state are read from and written to the server; a second
machine on the same server therefore sees the corpus as indexed and embeds
nothing. The local cache folder still holds the stat cache and the search
snapshot, which only save work on that machine.

Search: BM25 stays in akasha (over the chunks stored on the server), so
``"auto"`` stays hybrid. The dense side is exact cosine over the in-memory
matrix every CorpusIndex keeps anyway (default), or, with ``server_knn=True``,
the server's HNSW index via :class:`ServerDense` (lower latency on large
corpora, approximate: bench/server_index.py measures its recall). ``mmr`` and
custom search types always use the in-memory matrix.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from akasha.retrieval.dense import DenseIndex
from akasha.types import Chunk


def attach(index: Any, vector_store: str, *, server_knn: bool = False, **options: Any) -> Any:
    """Point ``index`` (a CorpusIndex) at the shared index ``vector_store``; returns the backend.

    ``options`` go to :func:`akasha.index.servers.open_backend` (``token``, ``retry``, ...).
    """
    from akasha.index.servers import open_backend

    backend = open_backend(vector_store, local=index._manifest, **options)
    index._manifest = backend
    index._shared = backend
    index._server_knn = server_knn
    index.vector_store = backend.path
    return backend


@contextlib.contextmanager
def shared_write_lock(local_lock: Any, backend: Any, timeout: float) -> Iterator[None]:
    """The local file lock (this machine's cache folder) plus the server's writer lock."""
    with local_lock, backend.write_lock(timeout):
        yield


class ServerDense:
    """A DenseIndex look-alike whose ``search`` asks the server (HNSW) and keeps only this corpus's chunks.

    Everything else (``vectors``, ``ids``, ``matrix`` ...) comes from the local
    DenseIndex. The server may hold vectors of other corpora or older edits, so
    ``search`` over-fetches and widens until it has ``k`` hits of this corpus.
    """

    def __init__(self, backend: Any, model: str, local: DenseIndex, chunks: Mapping[str, Chunk]) -> None:
        self.backend = backend
        self.model = model
        self.local = local
        self.by_hash: dict[str, list[str]] = {}
        for chunk_id, chunk in chunks.items():
            self.by_hash.setdefault(chunk.metadata["content_hash"], []).append(chunk_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.local, name)

    def __len__(self) -> int:
        return len(self.local)

    def search(self, query_vector: np.ndarray, k: int = 10) -> list[tuple[str, float]]:
        k = min(int(k), len(self.local))
        if k <= 0:
            return []
        fetch = max(k + 10, math.ceil(k * 1.5))
        while True:
            found = self.backend.knn(self.model, query_vector, fetch)
            hits: list[tuple[str, float]] = []
            for text_hash, score in found:
                for chunk_id in self.by_hash.get(text_hash, ()):
                    hits.append((chunk_id, float(score)))
            if len(hits) >= k or len(found) < fetch or fetch >= 10 * len(self.local) + 100:
                return hits[:k]
            fetch *= 4


def server_dense(index: Any) -> Any:
    """The dense index ``index.search`` should use: a cached :class:`ServerDense` per corpus state."""
    if getattr(index, "_shared", None) is None or not getattr(index, "_server_knn", False):
        return index._dense
    cached = getattr(index, "_server_dense", None)
    if cached is None or cached[0] != index._state_key or cached[1].local is not index._dense:
        cached = (index._state_key, ServerDense(index._shared, index.embedder.name, index._dense, index._chunks))
        index._server_dense = cached
    return cached[1]
