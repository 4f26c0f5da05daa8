"""A LangChain retriever over a :class:`akasha.RAG`: ``rag.as_langchain_retriever(data_source, k=4)``.

Each call indexes ``data_source`` (an unchanged folder embeds nothing), runs akasha's retrieval
and reranker as configured, and returns the ``k`` best chunks as LangChain ``Document`` objects:
``page_content`` the chunk text; ``metadata`` the chunk's own (``source``, ``page`` for PDFs,
``chunk_index``, ...) plus ``id`` (the chunk id), ``score`` (the last stage's score), ``scores``
(every score collected: ``vector``, ``bm25``, ``rrf``, ``rerank``, ...) and ``retriever``.

A real ``BaseRetriever``: LCEL chains, ``invoke``/``ainvoke``/``batch``, LangChain callbacks.
Needs ``langchain-core`` (``pip install 'akasha-rag[langchain]'``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from akasha.adapters.metadata import hit_metadata, positive_k
from akasha.errors import MissingExtraError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from akasha.rag import RAG
    from akasha.types import Hit


def _import_langchain() -> tuple[Any, Any]:
    """``(BaseRetriever, Document)`` from langchain-core, or MissingExtraError naming the extra."""
    try:
        from langchain_core.documents import Document
        from langchain_core.retrievers import BaseRetriever
    except ImportError as exc:
        raise MissingExtraError("langchain-core", "langchain", "rag.as_langchain_retriever()") from exc
    return BaseRetriever, Document


def hit_to_document(hit: Hit) -> Any:
    """One akasha hit as a LangChain ``Document`` (see the module docstring for the metadata)."""
    _, document = _import_langchain()
    return document(page_content=hit.chunk.text, metadata=hit_metadata(hit, id=hit.chunk.id), id=hit.chunk.id)


@functools.cache
def _retriever_class() -> Any:
    """The ``BaseRetriever`` subclass, defined once langchain-core is importable."""
    base, _ = _import_langchain()
    from pydantic import ConfigDict

    # base is imported at run time (an optional dependency): mypy cannot check a class built on it.
    class AkashaRetriever(base):  # type: ignore[misc, valid-type]
        """LangChain retriever that answers with a :class:`akasha.RAG`'s retrieval (and reranking)."""

        model_config = ConfigDict(arbitrary_types_allowed=True)

        rag: Any
        """The :class:`akasha.RAG` whose index, search settings and reranker are used."""
        data_source: Any
        """What to search: a folder, file, list of paths, or documents, as for ``rag(...)``."""
        k: int = 4
        """How many documents each call returns."""
        overrides: dict[str, Any] = {}
        """RAG options for these calls only (``search_type``, ``reranker``, ...)."""

        def _call(self, k: int | None) -> tuple[Any, int]:
            """The pipeline of these options, and how many documents this call returns."""
            pipeline = self.rag.pipeline(self.rag.options.merged(**self.overrides), self.data_source)
            return pipeline, positive_k(self.k if k is None else k, "documents")

        def _get_relevant_documents(self, query: str, *, run_manager: Any, k: int | None = None) -> list[Any]:
            """``k`` (``retriever.invoke(q, k=3)``, LangChain's standard keyword) overrides ``self.k`` for one call."""
            pipeline, k = self._call(k)
            return [hit_to_document(hit) for hit in pipeline.retrieve(self.data_source, query, k)]

        async def _aget_relevant_documents(self, query: str, *, run_manager: Any, k: int | None = None) -> list[Any]:
            pipeline, k = self._call(k)
            return [hit_to_document(hit) for hit in await pipeline.aretrieve(self.data_source, query, k)]

    return AkashaRetriever


def langchain_retriever(rag: RAG, data_source: Any, k: int = 4, overrides: Mapping[str, Any] | None = None) -> Any:
    """A ``langchain_core`` ``BaseRetriever`` returning ``rag``'s ``k`` best chunks of ``data_source``
    (``overrides`` are checked by the caller, :meth:`akasha.RAG.as_langchain_retriever`)."""
    return _retriever_class()(rag=rag, data_source=data_source, k=positive_k(k, "documents"),
                              overrides=dict(overrides or {}), tags=["akasha"])


__all__ = ["hit_to_document", "langchain_retriever"]
