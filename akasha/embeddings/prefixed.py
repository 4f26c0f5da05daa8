"""Role prefixes for embedding models trained with them (e5, bge): questions and passages embedded apart.

e5 models want ``"query: "`` before a question and ``"passage: "`` before a document, bge-en-v1.5
an instruction before questions only. OpenAI-compatible servers (TEI, vLLM, llama.cpp) do not add
them, so :class:`PrefixedEmbedder` does::

    from akasha.embeddings.prefixed import PrefixedEmbedder
    embedder = PrefixedEmbedder("openai:multilingual-e5-small@http://127.0.0.1:8000/v1",
                                query_prefix="query: ", document_prefix="passage: ")
    rag = akasha.RAG(embeddings=embedder)

or as a model string: ``"prefixed:e5:openai:multilingual-e5-small@http://..."`` (:data:`ROLE_PREFIXES`).
The prefixes are part of ``name``, so vectors with other prefixes, or none, never share a cache.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from akasha.errors import ConfigError

#: family -> (query prefix, document prefix), as the models' own cards give them.
ROLE_PREFIXES: dict[str, tuple[str, str]] = {
    "e5": ("query: ", "passage: "),  # intfloat/e5-*, multilingual-e5-* (not the -instruct ones)
    "bge": ("Represent this sentence for searching relevant passages: ", ""),  # BAAI/bge-*-en-v1.5
}


class PrefixedEmbedder:
    """An embedder that puts ``query_prefix`` before questions and ``document_prefix`` before chunks.
    ``inner`` is anything :func:`akasha.embeddings.resolve_embedder` accepts; ``name`` is its name plus the prefixes."""

    def __init__(self, inner: Any, query_prefix: str = "", document_prefix: str = "", **options: Any) -> None:
        from akasha.embeddings import resolve_embedder

        if not isinstance(query_prefix, str) or not isinstance(document_prefix, str):
            raise ConfigError("query_prefix and document_prefix must be strings")
        if not (query_prefix or document_prefix):
            raise ConfigError("PrefixedEmbedder needs a query_prefix, a document_prefix or both")
        self.inner = resolve_embedder(inner, **options)
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.name = (f"{self.inner.name};query_prefix={json.dumps(query_prefix, ensure_ascii=False)}"
                     f";document_prefix={json.dumps(document_prefix, ensure_ascii=False)}")

    def __repr__(self) -> str:
        return f"PrefixedEmbedder(name={self.name!r})"

    @property
    def dimension(self) -> int | None:
        return self.inner.dimension

    @property
    def batch_size(self) -> int:
        return self.inner.batch_size

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_documents([self.document_prefix + text for text in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(self.query_prefix + text)


def split_family(rest: str) -> tuple[str, str]:
    """``"e5:openai:m@http://..."`` -> ``("e5", "openai:m@http://...")``; ConfigError for an unknown family."""
    family, _, inner = rest.partition(":")
    family = family.strip().lower()
    if family not in ROLE_PREFIXES or not inner.strip():
        raise ConfigError(
            f"'prefixed:{rest}': write 'prefixed:<family>:<embeddings>' with a family from "
            f"{', '.join(sorted(ROLE_PREFIXES))} (for example 'prefixed:e5:openai:multilingual-e5-small@"
            "http://127.0.0.1:8000/v1'), or build akasha.embeddings.prefixed.PrefixedEmbedder with your own prefixes"
        )
    return family, inner.strip()


def make_prefixed_from_string(rest: str, **options: Any) -> PrefixedEmbedder:
    """The ``prefixed:<family>:<embeddings>`` factory; ``options`` go to the inner embedder."""
    family, inner = split_family(rest)
    query_prefix, document_prefix = ROLE_PREFIXES[family]
    return PrefixedEmbedder(inner, query_prefix, document_prefix, **options)


__all__ = ["PrefixedEmbedder", "ROLE_PREFIXES", "make_prefixed_from_string", "split_family"]
