"""The persistent, content-keyed corpus index (BM25 + dense) and its stores.

``CorpusIndex(embedder, cache_dir=...)`` syncs a data source and searches it;
``open_chroma_index(path, embedder)`` searches an existing Chroma store (Chroma imported only then).
"""

from __future__ import annotations

from akasha.index.chroma import open_chroma_index
from akasha.index.corpus import STORES, CorpusIndex
from akasha.index.paths import MEMORY, default_cache_dir
from akasha.index.reports import PruneReport, SyncReport

__all__ = ["MEMORY", "STORES", "CorpusIndex", "PruneReport", "SyncReport", "default_cache_dir", "open_chroma_index"]
