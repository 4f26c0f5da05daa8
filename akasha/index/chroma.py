"""Chroma-backed persistence: mirror a corpus into Chroma, or open an existing Chroma store.

``CorpusIndex(..., store="chroma")`` keeps its content-keyed manifest in SQLite
(stat cache, chunk cache, embedding cache) and mirrors the current corpus
(ids, texts, metadata, vectors) into a Chroma collection in cosine space whose
metadata records the embedding model and chunk settings. Other tools can then
read the corpus from Chroma, and :func:`open_chroma_index` can search it later.

:func:`open_chroma_index` (the facade's ``use_chroma=True``) opens an existing
Chroma directory, refuses a collection built with another embedding model
(IndexMismatchError), and serves every search type from memory: exact cosine
over the stored vectors plus a BM25 index built once from the stored texts.
chromadb is imported only here, when a Chroma store is actually used.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from akasha.embeddings.base import Embedder
from akasha.errors import AkashaError, IndexMismatchError, MissingExtraError, SourceNotFoundError
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex
from akasha.retrieval.search import SearchSettings, SearchType, search, validate_search_type
from akasha.types import Chunk, Hit

log = logging.getLogger(__name__)

MODEL_KEY = "embedding_model"
_BATCH = 2000


def _client(path: Path | None) -> Any:
    try:
        import chromadb
        from chromadb.config import Settings
    except ImportError:
        raise MissingExtraError("chromadb", "light", "the Chroma index store") from None
    settings = Settings(anonymized_telemetry=False)
    if path is None:
        return chromadb.EphemeralClient(settings=settings)
    try:
        return chromadb.PersistentClient(path=str(path), settings=settings)
    except ValueError:  # this process already opened the folder with other settings: share that client
        return chromadb.PersistentClient(path=str(path))


def collection_name(model: str, settings: dict[str, Any]) -> str:
    """A Chroma-safe collection name unique to (model, chunk settings)."""
    key = f"{model}|{sorted(settings.items())}"
    return "akasha-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def _scalar_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if isinstance(v, (str, int, float, bool))}


class ChromaMirror:
    """Keeps one Chroma collection equal to the corpus of a CorpusIndex."""

    def __init__(self, path: Path | None, model: str, settings: dict[str, Any]) -> None:
        self.path = path
        self.model = model
        self._client = _client(path)
        metadata = {"hnsw:space": "cosine", MODEL_KEY: model, "akasha_format": 1,
                    **{k: v for k, v in settings.items() if v is not None}}
        name = collection_name(model, settings)
        if path is None:  # in-memory clients share one process-wide system: keep each mirror apart
            import uuid

            name = f"{name}-{uuid.uuid4().hex[:8]}"
        self.collection = self._client.get_or_create_collection(name, metadata=metadata)
        found = (self.collection.metadata or {}).get(MODEL_KEY)
        if found != model:
            raise IndexMismatchError(f"Chroma collection {self.collection.name} at {path} holds vectors of "
                                     f"{found!r}, not {model!r}")

    def apply(self, added: Sequence[Chunk], vectors: Sequence[np.ndarray], current_ids: set[str]) -> None:
        """Upsert ``added`` and delete every stored id not in ``current_ids``."""
        for start in range(0, len(added), _BATCH):
            part = added[start : start + _BATCH]
            self.collection.upsert(
                ids=[c.id for c in part],
                embeddings=np.stack([np.asarray(v, dtype=np.float32) for v in vectors[start : start + _BATCH]]),
                documents=[c.text for c in part],
                metadatas=[_scalar_metadata(c.metadata) for c in part],
            )
        stored = self.collection.get(include=[])["ids"]
        stale = [i for i in stored if i not in current_ids]
        for start in range(0, len(stale), _BATCH):
            self.collection.delete(ids=stale[start : start + _BATCH])

    def count(self) -> int:
        return int(self.collection.count())


class ChromaIndex:
    """A read-only searchable view of one Chroma collection (see :func:`open_chroma_index`)."""

    def __init__(self, embedder: Embedder, chunks: list[Chunk], vectors: np.ndarray, *, tokenizer: str = "auto",
                 search_settings: SearchSettings | None = None, name: str = "") -> None:
        self.embedder = embedder
        self.name = name
        self.search_settings = search_settings or SearchSettings()
        self._chunks = {c.id: c for c in chunks}
        ids = list(self._chunks)
        self._bm25 = BM25Index(tokenizer=tokenizer)
        self._bm25.add(ids, [c.text for c in chunks])
        self._dense = DenseIndex.from_matrix(ids, vectors) if len(ids) else DenseIndex()

    @property
    def chunks(self) -> list[Chunk]:
        return list(self._chunks.values())

    def __len__(self) -> int:
        return len(self._chunks)

    def search(self, query: str, k: int = 5, search_type: SearchType = "auto") -> list[Hit]:
        """Rank the stored chunks for ``query`` (same search types as CorpusIndex)."""
        search_type = validate_search_type(search_type)
        if not self._chunks:
            return []
        vector = None if search_type == "bm25" else self.embedder.embed_query(query)
        return search(query, vector, k, search_type, bm25=self._bm25, dense=self._dense, chunks=self._chunks,
                      settings=self.search_settings)


def open_chroma_index(path: str | os.PathLike[str], embedder: Embedder, *, collection: str | None = None,
                      tokenizer: str = "auto") -> ChromaIndex:
    """Open an existing Chroma directory and return a searchable index over it.

    Picks the collection built with ``embedder.name`` (or the one named
    ``collection``). Raises SourceNotFoundError when ``path`` does not exist and
    IndexMismatchError when the store was built with another embedding model
    (or with vectors of another size, for stores without a recorded model).
    """
    where = Path(os.fspath(path)).expanduser()
    if not where.is_dir():
        raise SourceNotFoundError(f"Chroma store {str(where)!r} does not exist; build it first with "
                                  "CorpusIndex(embedder, cache_dir=..., store='chroma').sync(folder)")
    client = _client(where)
    collections = [client.get_collection(c if isinstance(c, str) else c.name) for c in client.list_collections()]
    if collection is not None:
        chosen = [c for c in collections if c.name == collection]
        if not chosen:
            raise IndexMismatchError(f"Chroma store {str(where)!r} has no collection {collection!r}; it has: "
                                     f"{', '.join(c.name for c in collections) or 'none'}")
    else:
        chosen = [c for c in collections if (c.metadata or {}).get(MODEL_KEY) == embedder.name]
        if not chosen:
            unlabelled = [c for c in collections if MODEL_KEY not in (c.metadata or {})]
            if len(unlabelled) == 1 and len(collections) == 1:
                chosen = unlabelled
            else:
                models = sorted({str((c.metadata or {}).get(MODEL_KEY, "unknown")) for c in collections})
                raise IndexMismatchError(
                    f"Chroma store {str(where)!r} was built with embedding model(s) {', '.join(models) or 'none'}, "
                    f"not {embedder.name!r}; use the same embeddings setting or rebuild the store"
                )
    target = chosen[0]
    recorded = (target.metadata or {}).get(MODEL_KEY)
    if recorded is not None and recorded != embedder.name:
        raise IndexMismatchError(f"Chroma collection {target.name!r} in {str(where)!r} was built with "
                                 f"{recorded!r}, not {embedder.name!r}")
    data = target.get(include=["documents", "metadatas", "embeddings"])
    ids = list(data["ids"])
    vectors = np.asarray(data["embeddings"] if data["embeddings"] is not None else np.zeros((0, 0)),
                         dtype=np.float32)
    if len(ids) and embedder.dimension is not None and vectors.shape[1] != embedder.dimension:
        raise IndexMismatchError(f"Chroma collection {target.name!r} holds {vectors.shape[1]}-dimensional vectors; "
                                 f"{embedder.name!r} makes {embedder.dimension}-dimensional ones")
    if not ids:
        raise AkashaError(f"Chroma collection {target.name!r} in {str(where)!r} is empty")
    chunks = [Chunk(i, doc or "", dict(meta or {})) for i, doc, meta in
              zip(ids, data["documents"], data["metadatas"], strict=True)]
    log.info("opened Chroma collection %s (%d chunks) from %s", target.name, len(chunks), where)
    return ChromaIndex(embedder, chunks, vectors, tokenizer=tokenizer, name=target.name)
