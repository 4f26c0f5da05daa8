"""A user function ``(query, documents) -> documents`` as a reranker.

The function receives the candidate :class:`~akasha.types.Hit` objects (they read
like LangChain documents: ``page_content``, ``metadata``) and must return the
same objects, each exactly once, in its preferred order. It cannot drop
candidates itself: ``rerank_top_k`` does the trimming after validation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from akasha.rerank import Ranking
from akasha.rerank.ordering import identity_positions
from akasha.types import Hit


class CallableReranker:
    """Wraps ``fn(query, documents) -> documents``."""

    def __init__(self, fn: Callable[[str, list[Hit]], Sequence[Hit]]) -> None:
        self.fn = fn
        self.name = f"callable:{getattr(fn, '__name__', type(fn).__name__)}"

    def rank(self, query: str, hits: Sequence[Hit]) -> Ranking:
        candidates = list(hits)
        returned = self.fn(query, list(candidates))
        return Ranking(identity_positions(candidates, returned, self.name))
