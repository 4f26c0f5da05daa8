"""The metadata keys akasha writes on chunks, kept apart from a document's own keys of the same names.

akasha writes ``chunk_index``, ``chunk_id``, ``content_hash``, ``strategy`` and ``source``. Where
a document's metadata uses the same name (a ``source`` URL), its value stays there and akasha's
goes under :data:`PREFIX` + name (``akasha:source``). akasha's bookkeeping reads its own values
with :func:`own`, so a document saying ``content_hash: "x"`` is still re-embedded when its text
changes. A document's own keys starting with :data:`PREFIX` are dropped (logged at WARNING).
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
    """Write akasha's ``value`` of ``key`` into ``metadata`` without overwriting a document's own value (a
    different value already under ``key`` is the document's: akasha's goes under ``PREFIX + key``)."""
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
