"""Shared-index backends: the index of a CorpusIndex on a server that several machines use.

``CorpusIndex(embedder, vector_store="chroma://host:port/collection")`` or
``vector_store="postgresql://user:pass@host:port/db?table=name"`` (see
:mod:`akasha.index.servers` and docs/servers.md). Each backend offers the
local Manifest's method set plus ``write_lock`` and ``knn``; chromadb and
psycopg are imported only when such a backend is opened.
"""

from __future__ import annotations

from akasha.index.backends.base import Retry, ServerAuthError, ServerError, ServerUnavailableError

BACKENDS: dict[str, str] = {
    "chroma": "akasha.index.backends.chroma_server:ChromaServerBackend",
    "postgresql": "akasha.index.backends.postgres:PgVectorBackend",
}

__all__ = ["BACKENDS", "Retry", "ServerAuthError", "ServerError", "ServerUnavailableError"]
