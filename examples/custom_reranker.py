"""Rerank with your own function: ``reranker=fn`` where ``fn(query, documents) -> documents``.

Run it from the repository root:

    python examples/custom_reranker.py

The function receives the first-stage candidates (``Hit`` objects, which read like
LangChain documents: ``doc.page_content``, ``doc.metadata``) and returns the same
objects in its preferred order. It may only reorder: akasha checks that every
candidate comes back exactly once before it keeps the best ``rerank_top_k``, and
raises ``OrderingError`` (a ``ValueError``) otherwise. This one puts PDF pages first
(say, because the manuals are authoritative) and keeps the search order otherwise.
"""

from __future__ import annotations

from pathlib import Path

import akasha
from akasha.errors import OrderingError

HERE = Path(__file__).resolve().parent
QUESTION = "What did the seal failure on P-102 cost?"


def pdf_first(query, documents):
    """Stable sort: PDF sources first, the first-stage order kept within each group."""
    return sorted(documents, key=lambda doc: doc.metadata.get("file_type") != ".pdf")


def drops_one(query, documents):
    """Wrong on purpose: a reranker must not drop candidates (rerank_top_k trims, later)."""
    return documents[1:]


def main() -> None:
    rag = akasha.RAG(
        embeddings="hf:all-MiniLM-L6-v2",
        model="extractive",
        reranker=pdf_first,
        rerank_top_k=3,
    )
    answer = rag(str(HERE / "docs"), QUESTION)
    print(answer)
    print(f"\nreranked by {rag.trace[[s['stage'] for s in rag.trace].index('rerank')]['name']}:")
    for hit in rag.docs:
        print(f"  {hit.details['rerank_rank']:.0f}. {hit.citation()}")
    assert len(rag.docs) <= 3
    types = [hit.metadata.get("file_type") for hit in rag.docs]
    assert types == sorted(types, key=lambda t: t != ".pdf"), types

    try:
        rag(str(HERE / "docs"), QUESTION, reranker=drops_one)
    except OrderingError as exc:  # also a ValueError
        print(f"\nA reranker that drops a candidate is refused:\n  {exc}")
    else:
        raise AssertionError("dropping a candidate should raise OrderingError")


if __name__ == "__main__":
    main()
