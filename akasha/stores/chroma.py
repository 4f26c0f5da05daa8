"""``backend: chroma``: a Chroma collection in cosine space.

Keys: ``collection`` (astromesh), ``host`` + ``port`` (8000) to use a server,
else ``persist_directory`` to store on disk, else in memory. Needs the
``chroma`` extra. The full chunk metadata is kept as JSON under ``_akasha``;
scalar values are also stored as plain keys so filters work server-side.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from akasha.errors import MissingExtraError
from akasha.stores.base import Filters, SyncStore, doc_id_of, dump_metadata
from akasha.types import Chunk

_META = "_akasha"


def _import_chromadb() -> Any:
    try:
        import chromadb
    except ImportError:
        raise MissingExtraError("chromadb", "chroma", "vector_store backend 'chroma'") from None
    return chromadb


def _where(filters: Filters | None) -> dict[str, Any] | None:
    if not filters:
        return None
    clauses = [{key: {"$eq": value}} for key, value in filters.items()]
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _chunk(chunk_id: str, text: str | None, meta: dict[str, Any] | None) -> Chunk:
    metadata = json.loads(meta[_META]) if meta and _META in meta else {}
    return Chunk(id=chunk_id, text=text or "", metadata=metadata)


class ChromaStore(SyncStore):
    """Chunks in a Chroma collection created with ``hnsw:space = cosine``."""

    name = "chroma"

    def __init__(
        self,
        collection: str = "astromesh",
        *,
        host: str | None = None,
        port: int = 8000,
        persist_directory: str | None = None,
        client: Any = None,
    ) -> None:
        chromadb = _import_chromadb()
        if client is None:
            from chromadb.config import Settings

            # The same settings as akasha.index.chroma: Chroma refuses two in-process clients
            # whose settings differ, and telemetry stays off.
            settings = Settings(anonymized_telemetry=False)
            if host:
                client = chromadb.HttpClient(host=host, port=int(port), settings=settings)
            elif persist_directory:
                client = chromadb.PersistentClient(path=str(persist_directory), settings=settings)
            else:
                client = chromadb.EphemeralClient(settings=settings)
        self.client = client
        self.collection_name = collection
        self.collection = client.get_or_create_collection(name=collection, metadata={"hnsw:space": "cosine"})
        self.dimension = self._existing_dimension()

    def _existing_dimension(self) -> int | None:
        """The vector width of an existing, non-empty collection (so bad writes fail before any change)."""
        try:
            peek = self.collection.get(limit=1, include=["embeddings"])
            rows = peek.get("embeddings")
            return int(len(rows[0])) if rows is not None and len(rows) else None
        except Exception:
            return None

    @staticmethod
    def _row_metadata(chunk: Chunk) -> dict[str, Any]:
        row: dict[str, Any] = {
            key: value
            for key, value in chunk.metadata.items()
            if isinstance(value, (str, int, float, bool)) and not key.startswith(_META)
        }
        row["doc_id"] = doc_id_of(chunk)
        row[_META] = dump_metadata(chunk.metadata)
        return row

    def _ids_of(self, doc_ids: Sequence[str]) -> list[str]:
        got = self.collection.get(where={"doc_id": {"$in": list(doc_ids)}}, include=[])
        return list(got["ids"])

    def _replace(self, doc_ids: Sequence[str], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        old = set(self._ids_of(doc_ids))
        new_ids = [c.id for c in chunks]
        if chunks:
            # Write the new version first: if this fails, the old one is untouched.
            self.collection.upsert(
                ids=new_ids,
                embeddings=vectors.tolist(),
                documents=[c.text for c in chunks],
                metadatas=[self._row_metadata(c) for c in chunks],
            )
        stale = sorted(old - set(new_ids))
        if stale:
            self.collection.delete(ids=stale)

    def _delete(self, doc_ids: Sequence[str]) -> int:
        ids = self._ids_of(doc_ids)
        if ids:
            self.collection.delete(ids=ids)
        return len(ids)

    def _search(self, vector: np.ndarray, k: int, filters: Filters | None) -> list[tuple[Chunk, float]]:
        total = self.collection.count()
        if total == 0:
            return []
        result = self.collection.query(
            query_embeddings=[vector.tolist()],
            n_results=min(k, total),
            where=_where(filters),
            include=["documents", "metadatas", "distances"],
        )
        ids, docs, metas, dists = (result[key][0] for key in ("ids", "documents", "metadatas", "distances"))
        # Chroma's cosine distance is 1 - cosine.
        return [(_chunk(i, d, m), 1.0 - float(dist)) for i, d, m, dist in zip(ids, docs, metas, dists, strict=True)]

    def _get(self, ids: Sequence[str]) -> list[Chunk]:
        got = self.collection.get(ids=list(ids), include=["documents", "metadatas"])
        found = {i: _chunk(i, d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)}
        return [found[i] for i in ids if i in found]

    def _count(self) -> int:
        return int(self.collection.count())


def make_chroma_store(config: dict[str, Any], context: Any) -> ChromaStore:
    """Registry factory for ``backend: chroma``."""
    return ChromaStore(
        collection=str(config.get("collection") or "astromesh"),
        host=config.get("host"),
        port=int(config.get("port") or 8000),
        persist_directory=config.get("persist_directory"),
    )


__all__ = ["ChromaStore", "make_chroma_store"]
