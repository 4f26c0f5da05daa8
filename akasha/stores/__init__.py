"""Vector stores behind one small contract: memory, faiss, Chroma, Qdrant and PostgreSQL + pgvector.

:class:`~akasha.stores.base.Store` is the contract; each backend lives in its own
module and imports its client library only when a store is built;
:func:`~akasha.stores.urls.open_store` opens one from a ``vector_store`` URL.
"""

from akasha.stores.base import BaseStore, Store
from akasha.stores.urls import open_store

__all__ = ["BaseStore", "Store", "open_store"]
