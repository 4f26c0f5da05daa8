"""``backend: qdrant``: a Qdrant collection with cosine distance.

Keys: ``collection`` (astromesh), ``url`` (http://localhost:6333; ``":memory:"``
runs an in-process instance), ``api_key``. The collection is created if it does
not exist. Point ids are UUIDv5 (namespace URL) of the chunk id; the payload holds
``chunk_id``, ``doc_id``, ``text`` and ``metadata``. Needs the ``qdrant`` extra.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from akasha.errors import MissingExtraError
from akasha.stores.base import Filters, SyncStore, doc_id_of
from akasha.types import Chunk


def point_id(chunk_id: str) -> str:
    """The Qdrant point id of a chunk: UUIDv5 of the chunk id in the URL namespace."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, chunk_id))


def _import_qdrant() -> Any:
    try:
        import qdrant_client
    except ImportError:
        raise MissingExtraError("qdrant-client", "qdrant", "vector_store backend 'qdrant'") from None
    return qdrant_client


class QdrantStore(SyncStore):
    """Chunks as Qdrant points; filters become payload conditions on ``metadata.<key>``."""

    name = "qdrant"

    def __init__(self, dimension: int, collection: str = "astromesh", url: str = "http://localhost:6333", api_key: str | None = None) -> None:
        _import_qdrant()
        from qdrant_client import models

        self._models = models
        self.dimension = int(dimension)
        self.collection = collection
        self._url, self._api_key = url, api_key
        self._client: Any = None
        self._ready = False
        if url == ":memory:":
            self._ensure()

    @property
    def client(self) -> Any:
        """The Qdrant client, created on first use (a remote server is not contacted at build)."""
        if self._client is None:
            import qdrant_client

            if self._url == ":memory:":
                self._client = qdrant_client.QdrantClient(location=":memory:")
            else:
                self._client = qdrant_client.QdrantClient(url=self._url, api_key=self._api_key)
        return self._client

    def _ensure(self) -> None:
        """Create the collection with cosine distance on first use if it does not exist."""
        if self._ready:
            return
        models = self._models
        if not self.client.collection_exists(self.collection):
            self.client.create_collection(
                collection_name=self.collection,
                vectors_config=models.VectorParams(size=self.dimension, distance=models.Distance.COSINE),
            )
        self._ready = True

    def _filter(self, filters: Filters | None) -> Any:
        if not filters:
            return None
        m = self._models
        must = [
            m.FieldCondition(key="doc_id" if key == "doc_id" else f"metadata.{key}", match=m.MatchValue(value=value))
            for key, value in filters.items()
        ]
        return m.Filter(must=must)

    def _doc_filter(self, doc_ids: Sequence[str]) -> Any:
        m = self._models
        return m.Filter(must=[m.FieldCondition(key="doc_id", match=m.MatchAny(any=list(doc_ids)))])

    def _replace(self, doc_ids: Sequence[str], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        self._ensure()
        m = self._models
        new_ids = [point_id(c.id) for c in chunks]
        if chunks:
            # New version first (one request, applied as a whole); then the stale points.
            points = [
                m.PointStruct(
                    id=pid,
                    vector=row.tolist(),
                    payload={"chunk_id": c.id, "doc_id": doc_id_of(c), "text": c.text, "metadata": dict(c.metadata)},
                )
                for pid, c, row in zip(new_ids, chunks, vectors, strict=True)
            ]
            self.client.upsert(collection_name=self.collection, points=points, wait=True)
        stale = self._doc_filter(doc_ids)
        if new_ids:
            stale = m.Filter(must=stale.must, must_not=[m.HasIdCondition(has_id=new_ids)])
        self.client.delete(collection_name=self.collection, points_selector=m.FilterSelector(filter=stale), wait=True)

    def _delete(self, doc_ids: Sequence[str]) -> int:
        self._ensure()
        m = self._models
        flt = self._doc_filter(doc_ids)
        count = self.client.count(collection_name=self.collection, count_filter=flt, exact=True).count
        self.client.delete(collection_name=self.collection, points_selector=m.FilterSelector(filter=flt), wait=True)
        return int(count)

    @staticmethod
    def _chunk(payload: dict[str, Any]) -> Chunk:
        return Chunk(id=payload["chunk_id"], text=payload.get("text", ""), metadata=dict(payload.get("metadata") or {}))

    def _search(self, vector: np.ndarray, k: int, filters: Filters | None) -> list[tuple[Chunk, float]]:
        self._ensure()
        response = self.client.query_points(
            collection_name=self.collection,
            query=vector.tolist(),
            limit=k,
            query_filter=self._filter(filters),
            with_payload=True,
        )
        return [(self._chunk(p.payload), float(p.score)) for p in response.points]

    def _get(self, ids: Sequence[str]) -> list[Chunk]:
        self._ensure()
        points = self.client.retrieve(collection_name=self.collection, ids=[point_id(i) for i in ids], with_payload=True)
        found = {p.payload["chunk_id"]: self._chunk(p.payload) for p in points}
        return [found[i] for i in ids if i in found]

    def _count(self) -> int:
        self._ensure()
        return int(self.client.count(collection_name=self.collection, exact=True).count)

    async def aclose(self) -> None:
        if self._client is not None:
            self._client.close()


def make_qdrant_store(config: dict[str, Any], context: Any) -> QdrantStore:
    """Registry factory for ``backend: qdrant``; the vector size is the embedding dimension."""
    return QdrantStore(
        dimension=context.dimension,
        collection=str(config.get("collection") or "astromesh"),
        url=str(config.get("url") or "http://localhost:6333"),
        api_key=config.get("api_key"),
    )


__all__ = ["QdrantStore", "make_qdrant_store", "point_id"]
