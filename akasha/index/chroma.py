"""Searching an existing Chroma folder, whoever wrote it (akasha, plain chromadb, LangChain).

:func:`open_chroma_index` (the facade's ``use_chroma=True``) serves every search type over the
folder's records, embedding nothing but the question; it never creates anything.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from akasha.embeddings.base import Embedder
from akasha.errors import IndexMismatchError, SourceNotFoundError

log = logging.getLogger(__name__)


def is_chroma_url(path: object) -> bool:
    """True for ``chroma://`` and ``chromas://`` URLs (a collection on a server), False for folders."""
    return isinstance(path, str) and path.strip().lower().startswith(("chroma://", "chromas://"))


def chroma_folder_of(path: str | os.PathLike[str]) -> Path:
    """The Chroma folder ``path`` names: itself, or the ``chroma/`` folder of an akasha cache folder."""
    where = Path(os.fspath(path)).expanduser()
    if (where / "chroma").is_dir() and not (where / "chroma.sqlite3").exists():
        where = where / "chroma"
    return where


def open_chroma_index(path: str | os.PathLike[str], embedder: Embedder, *, collection: str | None = None,
                      tokenizer: str = "auto") -> Any:
    """Open an existing Chroma folder (or ``chroma://host:port/collection``) as a searchable index.

    Picks the collection built with ``embedder.name``, or ``collection`` (a lone collection of unknown
    origin is used as it is). Raises SourceNotFoundError when ``path`` is not a Chroma folder (nothing
    is written there), IndexMismatchError when the vectors are another model's (or another size).
    """
    from akasha.index.corpus import CorpusIndex
    from akasha.stores.chroma import MODEL_KEY, ChromaStore, import_chromadb, open_chroma_folder

    if is_chroma_url(path):  # a collection on a Chroma server: opened as it is, never created
        from akasha.stores.urls import open_store

        server = open_store(str(path), embedder=embedder.name, create_collection=False)
        index = CorpusIndex(embedder, cache_dir=":memory:", store=server, tokenizer=tokenizer)
        report = index.load_store()
        log.info("opened %s (%d chunks)", server.name, report.chunks)
        return index
    import_chromadb(local=True)  # a light install (chromadb-client) is told what to install before anything else
    where = chroma_folder_of(path)
    if not where.is_dir():
        raise SourceNotFoundError(f"Chroma store {str(where)!r} does not exist; build it first with "
                                  "CorpusIndex(embedder, cache_dir=..., store='chroma').sync(folder)")
    client = open_chroma_folder(where, create=False)
    collections = [client.get_collection(c if isinstance(c, str) else c.name) for c in client.list_collections()]
    if collection is None:
        chosen = [c for c in collections if (c.metadata or {}).get(MODEL_KEY) == embedder.name]
        if not chosen and len(collections) == 1 and MODEL_KEY not in (collections[0].metadata or {}):
            chosen = collections
        if not chosen:
            models = sorted({str((c.metadata or {}).get(MODEL_KEY, "unknown")) for c in collections})
            raise IndexMismatchError(
                f"Chroma store {str(where)!r} was built with embedding model(s) {', '.join(models) or 'none'}, "
                f"not {embedder.name!r}; use the same embeddings setting, name a collection, or rebuild the store"
            )
        collection = chosen[0].name
    store = ChromaStore(collection, client=client, create_collection=False, embedder=embedder.name,
                        display=f"chroma:{where}/{collection}")
    index = CorpusIndex(embedder, cache_dir=":memory:", store=store, tokenizer=tokenizer)
    report = index.load_store()
    log.info("opened Chroma collection %s (%d chunks) from %s", collection, report.chunks, where)
    return index


__all__ = ["chroma_folder_of", "is_chroma_url", "open_chroma_index"]
