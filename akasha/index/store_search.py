"""Searches an external store's engine answers itself (its ``query`` verb), not this process.

A store names the sides its engine ranks in ``capabilities`` (dense, lexical); for those the
index sends one :class:`~akasha.stores.query.SearchRequest` and returns the store's hits,
holding no copy of the corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from akasha.embeddings.base import Embedder, embed_question
from akasha.errors import EmptyStoreError
from akasha.index.store_link import StoreLink
from akasha.retrieval.search import SearchSettings
from akasha.types import Chunk, Hit

#: The search types an external store's engine answers (mmr and callables rank in this process).
STORE_SEARCH_TYPES = ("auto", "hybrid", "knn", "bm25")


class StoreSearch:
    """Builds the store's search requests for one index: its embedder, settings (both read at every
    search, as :class:`~akasha.index.local_search.LocalSearch` reads them), corpus and tokenizer."""

    def __init__(self, link: StoreLink | None, embedder: Callable[[], Embedder], settings: Callable[[], SearchSettings],
                 corpus: str, tokenizer_id: str) -> None:
        self.link = link
        self.embedder = embedder
        self.settings = settings
        self.corpus = corpus
        self.tokenizer_id = tokenizer_id  # this index's BM25 terms, used unless the store adopted others
        #: (tokenizer id, function) of the store's lexical terms, resolved once (see tokenize)
        self._tokenizer: tuple[str, Callable[[str], list[str]]] | None = None
        self.checked = False  # a query worker found records in the store

    def answers(self, sides: str) -> bool:
        """Whether the store's engine answers ``sides`` itself: ``knn``, ``bm25``, else both (``auto``, ``hybrid``)."""
        store = self.link.store if self.link is not None else None
        if store is None or not callable(getattr(store, "query", None)):
            return False
        able = set(getattr(store, "capabilities", ()) or ())
        wanted = {"knn": {"dense"}, "bm25": {"lexical"}}.get(sides, {"dense", "lexical"})
        return wanted <= able

    def search(self, query: str, k: int, search_type: str) -> list[Hit]:
        """A search type answered by the store's engine: knn, bm25, or both fused (hybrid, auto)."""
        settings = self.settings()
        if search_type == "auto":
            weights, rrf_k = settings.adaptive_weights, settings.adaptive_k
        else:
            weights, rrf_k = settings.hybrid_weights, settings.rrf_k
        sides = search_type if search_type in ("knn", "bm25") else "both"
        return self.query(query, k, sides, None, weights, rrf_k)

    def pairs(self, query: str | np.ndarray, k: int, side: str, filters: Mapping[str, Any] | None
              ) -> list[tuple[Chunk, float]]:
        """One side (``knn`` or ``bm25``) alone: the ``k`` best (chunk, score) pairs."""
        weights = (1.0, 0.0) if side == "knn" else (0.0, 1.0)
        return [(hit.chunk, float(hit.score))
                for hit in self.query(query, k, side, filters, weights, self.settings().rrf_k)]

    def query(self, query: str | np.ndarray, k: int, sides: str, filters: Mapping[str, Any] | None,
              weights: tuple[float, float], rrf_k: int) -> list[Hit]:
        """One :class:`~akasha.stores.query.SearchRequest` (``sides``: knn, bm25, both) sent to the store."""
        from akasha.stores.query import SearchRequest

        assert self.link is not None  # called only where answers() found a store
        vector = None if sides == "bm25" else embed_question(self.embedder(), query)
        tokens: tuple[str, ...] = ()
        if sides != "knn" and isinstance(query, str):
            tokens = tuple(self.tokenize()(query))
        wanted = dict(filters or {})
        if self.corpus:
            wanted.setdefault("corpus", self.corpus)
        pool = max(self.settings().candidates, 4 * k)
        return list(self.link.store.query(SearchRequest(
            vector=vector, tokens=tokens, k=k, pool=pool, filters=wanted or None, rrf_k=rrf_k, weights=weights,
            text=query if isinstance(query, str) else "")))

    def tokenize(self) -> Callable[[str], list[str]]:
        """The tokenizer of the store's lexical terms, resolved again only when the store adopted another id
        (a PostgreSQL table adopts its first writer's); ConfigError when this process cannot reproduce it."""
        from akasha.stores.query import lexical_tokenizer

        assert self.link is not None  # called only where answers() found a store
        tokenizer_id = str(getattr(self.link.store, "lexical_tokenizer", self.tokenizer_id))
        if self._tokenizer is None or self._tokenizer[0] != tokenizer_id:
            self._tokenizer = (tokenizer_id, lexical_tokenizer(tokenizer_id))
        return self._tokenizer[1]

    def check_holds_records(self) -> None:
        """A query worker's first search: EmptyStoreError when the store holds nothing to search."""
        link = self.link
        if self.checked or link is None:
            return
        if link.last_source() is None and not int(link.store.count()):
            raise EmptyStoreError(
                f"data_source is None, so akasha answers from the store {link.name}, and it holds no chunks: "
                "index a folder into it first (rag(folder, question) or `akasha index FOLDER --vector-store URL`)")
        self.checked = True
