"""Chunking: documents in, chunks (the unit that is embedded and retrieved) out. The default strategy is
:mod:`akasha.chunking.recursive`; ``fixed``, ``sentence`` and ``semantic`` live in their own modules."""

from __future__ import annotations

from akasha.chunking.recursive import (
    DEFAULT_SEPARATORS,
    chunk_documents,
    default_overlap,
    document_id,
    split_text,
    validate_chunking,
)

__all__ = ["DEFAULT_SEPARATORS", "chunk_documents", "default_overlap", "document_id", "split_text",
           "validate_chunking"]
