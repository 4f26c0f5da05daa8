"""The metadata keys akasha writes on chunks, kept apart from a document's own keys of the same names.

akasha writes ``chunk_index``, ``chunk_id``, ``content_hash`` and ``strategy`` on
every chunk, and the index adds ``source`` (the document's key). A document's
own metadata may use the same names (a user's ``content_hash`` from another
system, a ``source`` URL): its values are kept under those names, as given, and
akasha's value goes under the same name prefixed with :data:`PREFIX`
(``akasha:content_hash``). Without a collision akasha's value is under the
plain name, so most chunks carry no prefixed key.

akasha's bookkeeping (the embeddings cache, the store's records, change
detection) reads its values with :func:`own`, never a document's value: a
document whose metadata says ``content_hash: "x"`` is still re-embedded when
its text changes. A document's own keys that start with :data:`PREFIX` are
reserved and dropped (logged at WARNING).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

#: akasha's value of a key a document's metadata also uses lives under ``PREFIX + key``.
PREFIX = "akasha:"


def own(metadata: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """akasha's value of ``key`` in a chunk's ``metadata`` (the prefixed key when a document used the name)."""
    if PREFIX + key in metadata:
        return metadata[PREFIX + key]
    return metadata.get(key, default)


def put_own(metadata: dict[str, Any], key: str, value: Any) -> None:
    """Write akasha's ``value`` of ``key`` into ``metadata`` without overwriting a document's own value.

    A different value already under ``key`` is the document's: akasha's goes under ``PREFIX + key``.
    """
    if key in metadata and metadata[key] != value:
        metadata[PREFIX + key] = value
    else:
        metadata[key] = value
        metadata.pop(PREFIX + key, None)


def drop_own(metadata: dict[str, Any], key: str) -> None:
    """Remove akasha's value of ``key`` (the prefixed one when there is one), keeping a document's own."""
    if PREFIX + key in metadata:
        del metadata[PREFIX + key]
    else:
        metadata.pop(key, None)


def chunk_metadata(stored: Mapping[str, Any], source: str, chunk_id: str) -> dict[str, Any]:
    """A chunk's metadata from what the index stored: akasha's ``source`` (the document key) and
    ``chunk_id`` added without overwriting a document's own keys of those names."""
    metadata = {"source": source, **stored} if "source" not in stored else dict(stored)
    put_own(metadata, "source", source)
    put_own(metadata, "chunk_id", chunk_id)
    return metadata


def document_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A document's metadata as chunks start from it: a copy without reserved ``akasha:`` keys."""
    reserved = [k for k in metadata if isinstance(k, str) and k.startswith(PREFIX)]
    if not reserved:
        return dict(metadata)
    log.warning("metadata keys starting with %r are reserved for akasha; dropped from the document: %s",
                PREFIX, ", ".join(sorted(reserved)))
    return {k: v for k, v in metadata.items() if k not in reserved}


__all__ = ["PREFIX", "chunk_metadata", "document_metadata", "drop_own", "own", "put_own"]
