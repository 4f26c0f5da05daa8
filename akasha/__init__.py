"""akasha: question answering over your own documents.

>>> import akasha
>>> rag = akasha.RAG(embeddings="hf:all-MiniLM-L6-v2", model="extractive")
>>> answer = rag("./docs", "What are the maintenance risks?")  # doctest: +SKIP

Public names are imported lazily so ``import akasha`` stays fast and never
loads a model, touches the network or configures logging.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from akasha._version import __version__

logging.getLogger(__name__).addHandler(logging.NullHandler())

#: Public name -> the module it is imported from on first use.
_LAZY: dict[str, str] = {
    "RAG": "akasha.rag",
    **dict.fromkeys(("Document", "Chunk", "Hit", "QueryResult"), "akasha.types"),
    **dict.fromkeys(("load_spec", "load_spec_file", "build"), "akasha.spec"),
    **dict.fromkeys(("AkashaError", "RAGError", "SpecError", "MissingExtraError", "StageError", "MissingAPIKeyError",
                     "ProviderError"), "akasha.errors"),
}

# Written out (not built from _LAZY) so linters and type checkers see the public names;
# tests/test_package_metadata.py checks that it lists exactly the lazy names.
__all__ = ["__version__", "RAG", "Document", "Chunk", "Hit", "QueryResult", "load_spec", "load_spec_file", "build",
           "AkashaError", "RAGError", "SpecError", "MissingExtraError", "StageError", "MissingAPIKeyError",
           "ProviderError"]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from akasha.errors import (
        AkashaError,
        MissingAPIKeyError,
        MissingExtraError,
        ProviderError,
        RAGError,
        SpecError,
        StageError,
    )
    from akasha.rag import RAG
    from akasha.spec import build, load_spec, load_spec_file
    from akasha.types import Chunk, Document, Hit, QueryResult


def __getattr__(name: str) -> Any:
    try:
        module_name = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'akasha' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
