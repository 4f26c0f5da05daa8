"""A LlamaIndex retriever over a :class:`akasha.RAG`: ``rag.as_llamaindex_retriever(data_source, k=4)``.

Each call indexes ``data_source`` (an unchanged folder embeds nothing), runs akasha's retrieval
and reranker as configured, and returns the ``k`` best chunks as ``NodeWithScore`` objects:

- ``node``: a ``TextNode`` (``id_`` the chunk id, ``text`` the chunk text, ``ref_doc_id`` its
  document, the source file relative to the folder indexed);
- ``node.metadata``: the names LlamaIndex's own readers use (``file_path``, ``file_name``,
  ``file_type`` as a MIME type, ``page_label`` for a PDF page), the chunk's own metadata
  (``source``, ``page``, ``chunk_index``, ...) plus ``score`` (the last stage's raw score),
  ``scores`` (every score collected) and ``retriever`` (which first-stage retrievers found it);
- ``score``: the hit's relevance next to the call's best hit, in (0, 1] (1.0 for the first): a raw
  fusion score has no meaning of its own, a ratio to the best does, so a
  ``SimilarityPostprocessor(similarity_cutoff=0.5)`` keeps the hits at least half as good.

akasha's bookkeeping keys (:data:`HIDDEN_KEYS`) are hidden from the text LlamaIndex puts in a
prompt (``excluded_llm_metadata_keys``), so a prompt shows ``source`` and ``page``, not scores.
A real ``BaseRetriever`` (``RetrieverQueryEngine``, ``retrieve``/``aretrieve``, callbacks).
Needs ``llama-index-core`` (``pip install 'akasha-rag[llamaindex]'``).
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

#: Metadata keys kept on the node but left out of the text a LlamaIndex LLM or embedder sees.
HIDDEN_KEYS = ("scores", "retriever", "chunk_id", "content_hash", "chunk_index", "score")


def _import_llamaindex() -> tuple[Any, Any, Any]:
    """``(BaseRetriever, NodeWithScore, TextNode)`` from llama-index-core, or MissingExtraError naming the extra."""
    try:
        from llama_index.core.retrievers import BaseRetriever
        from llama_index.core.schema import NodeWithScore, TextNode
    except ImportError as exc:
        raise MissingExtraError("llama-index-core", "llamaindex", "rag.as_llamaindex_retriever()") from exc
    return BaseRetriever, NodeWithScore, TextNode


def reader_metadata(hit: Hit) -> dict[str, Any]:
    """The metadata names LlamaIndex's ``SimpleDirectoryReader`` gives a file's nodes (see the module docstring)."""
    import mimetypes
    import posixpath

    source = str(hit.chunk.metadata.get("source") or hit.chunk.doc_id)
    mime = mimetypes.guess_type(source)[0] or mimetypes.types_map.get(
        str(hit.chunk.metadata.get("file_type") or ""), "text/plain")
    found: dict[str, Any] = {"file_path": source, "file_name": posixpath.basename(source), "file_type": mime}
    page = hit.chunk.metadata.get("page")
    if page is not None:
        found["page_label"] = str(page)
    return found


def hit_to_node(hit: Hit, best: float | None = None) -> Any:
    """One akasha hit as a LlamaIndex ``NodeWithScore`` whose ``score`` is relative to ``best``, the call's
    best hit's score (see the module docstring); the raw score stays in ``metadata["score"]``."""
    _, node_with_score, text_node = _import_llamaindex()
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo

    metadata = {**hit_metadata(hit), **reader_metadata(hit)}
    # akasha's bookkeeping under "akasha:<key>" (a document used the plain name: akasha.metadata) too
    hidden = [key for key in metadata if key in HIDDEN_KEYS or str(key).startswith("akasha:")]
    node = text_node(
        id_=hit.chunk.id,
        text=hit.chunk.text,
        metadata=metadata,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=hidden,
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=hit.chunk.doc_id)},
    )
    top = float(best) if best is not None and best > 0 else None
    score = float(hit.score) / top if top is not None else float(hit.score)
    return node_with_score(node=node, score=score)


def hits_to_nodes(hits: list[Hit]) -> list[Any]:
    """A call's hits as nodes whose ``score`` is relative to the best hit (see :func:`hit_to_node`)."""
    best = max((float(h.score) for h in hits), default=0.0)
    return [hit_to_node(hit, best) for hit in hits]


@functools.cache
def _retriever_class() -> Any:
    """The ``BaseRetriever`` subclass, defined once llama-index-core is importable."""
    base, _, _ = _import_llamaindex()

    # base is imported at run time (an optional dependency): mypy cannot check a class built on it.
    class AkashaLlamaIndexRetriever(base):  # type: ignore[misc, valid-type]
        """LlamaIndex retriever that answers with a :class:`akasha.RAG`'s retrieval (and reranking)."""

        def __init__(self, rag: Any, data_source: Any, k: int, overrides: dict[str, Any], **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.rag = rag
            self.data_source = data_source
            self.k = k
            self.overrides = overrides

        def _pipeline(self) -> Any:
            return self.rag.pipeline(self.rag.options.merged(**self.overrides), self.data_source)

        def _retrieve(self, query_bundle: Any) -> list[Any]:
            return hits_to_nodes(self._pipeline().retrieve(self.data_source, query_bundle.query_str, self.k))

        async def _aretrieve(self, query_bundle: Any) -> list[Any]:
            return hits_to_nodes(await self._pipeline().aretrieve(self.data_source, query_bundle.query_str, self.k))

    return AkashaLlamaIndexRetriever


def llamaindex_retriever(
    rag: RAG, data_source: Any, k: int = 4, overrides: Mapping[str, Any] | None = None, **retriever_options: Any
) -> Any:
    """A ``llama_index.core`` ``BaseRetriever`` returning ``rag``'s ``k`` best chunks of ``data_source``;
    ``overrides`` are checked by the caller, ``retriever_options`` go to ``BaseRetriever``."""
    return _retriever_class()(rag, data_source, positive_k(k, "nodes"), dict(overrides or {}), **retriever_options)


__all__ = ["HIDDEN_KEYS", "hit_to_node", "hits_to_nodes", "llamaindex_retriever", "reader_metadata"]
