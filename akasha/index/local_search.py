"""The in-process engine over :class:`~akasha.index.live.LiveCorpus`, the only search that runs in akasha's process.

The local default keeps its records in SQLite and ranks here (:func:`~akasha.retrieval.search.search`). Its
surface is :class:`~akasha.index.store_search.StoreSearch`'s (``search``, one side's ``pairs``): the index picks one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from akasha.embeddings.base import Embedder, embed_question
from akasha.index.live import LiveCorpus
from akasha.index.manifest import Manifest
from akasha.retrieval.fusion import CJK_SHARE, cjk_share, exact_terms
from akasha.retrieval.passages import rescore as rescore_passages
from akasha.retrieval.reading import reads_question
from akasha.retrieval.search import SearchSettings, SearchType, search
from akasha.types import Chunk, Hit


class LocalSearch:
    """Ranks the corpus in memory with the index's current embedder and settings (read at every search:
    ``bench.ablation`` swaps them); probe verdicts are kept in the ``manifest``."""

    def __init__(self, live: LiveCorpus, embedder: Callable[[], Embedder], settings: Callable[[], SearchSettings],
                 manifest: Manifest) -> None:
        self.live = live
        self.embedder = embedder
        self.settings = settings
        self.manifest = manifest

    def search(self, query: str, k: int, search_type: SearchType) -> list[Hit]:
        """Any search type over the corpus in memory (which holds its vectors unless ``search_type`` is bm25)."""
        live, settings = self.live, self.settings()
        vector = None if search_type == "bm25" else self.embedder().embed_query(query)
        adaptive = search_type == "auto" and settings.auto_fusion == "adaptive"
        reads = self.dense_reads(query) if adaptive else None
        return search(query, vector, k, search_type, bm25=live.bm25, dense=live.dense,
                      chunks=live.chunks, settings=settings, dense_reads=reads,
                      hubs=self.hub_scores if adaptive else None,
                      passages=self.passage_scores if adaptive and live.dense.has_passages() else None)

    def pairs(self, query: str | np.ndarray, k: int, side: str, filters: Mapping[str, Any] | None, *,
              passages: bool = False) -> list[tuple[Chunk, float]]:
        """One side (``knn`` or ``bm25``, which needs a question) alone: the ``k`` best (chunk, score) pairs;
        ``passages=True``: the dense candidates re-scored as ``auto``'s dense list is (see vector_search)."""
        live = self.live
        if side == "bm25":
            return live.filtered(live.bm25.search(cast(str, query), len(live.chunks) if filters else k), k, filters)
        vector = embed_question(self.embedder(), query)
        fetch = self.settings().passage_fetch if passages and live.dense.has_passages() else 0
        nearest = live.dense.search(vector, len(live.chunks) if filters else max(k, fetch))
        if not fetch:
            return live.filtered(nearest, k, filters)
        kept = [(c.id, s) for c, s in live.filtered(nearest, max(k, fetch), filters)]
        rescored = rescore_passages(kept, vector, self.passage_scores)
        best = rescored[0] if rescored is not None else kept
        return [(live.chunks[i], float(s)) for i, s in best[:k]]

    def hub_scores(self, ids: Sequence[str]) -> np.ndarray | None:
        """The hub scores of chunk ``ids`` that ``auto`` discounts dense candidates by
        (:mod:`akasha.retrieval.hubness`); None above its size limit or for unknown ids."""
        dense = self.live.dense
        return dense.hub_scores(ids) if all(i in dense for i in ids) else None

    def passage_scores(self, ids: Sequence[str], query_vector: np.ndarray) -> np.ndarray | None:
        """The best passage cosine of each of ``ids`` with ``query_vector`` (:mod:`akasha.retrieval.passages`);
        None unless every chunk has passage vectors (``auto`` then ranks by chunk vectors alone)."""
        dense = self.live.dense
        return dense.passage_scores(ids, query_vector) if dense.has_passages() else None

    def holds_alone(self, question: str, chunk_id: str) -> bool:
        """Whether ``chunk_id`` alone holds one of ``question``'s exact terms (``auto``'s exact-match rule)."""
        bm25 = self.live.bm25
        return bm25.sole_holder(exact_terms(question, bm25.tokenize(question)), chunk_id)

    def dense_reads(self, question: str) -> bool | None:
        """Whether the embedder reads ``question``'s language: None unless it is mostly Chinese, Japanese or Korean
        (``auto`` then gives the dense list no weight). Probed once (:func:`~akasha.retrieval.reading.reads_question`,
        kept in the manifest) unless ``SearchSettings.embedder_reads_cjk`` gives the answer."""
        known = self.settings().embedder_reads_cjk
        if known is None:
            return reads_question(self.embedder(), question, CJK_SHARE, self.manifest)
        return known if cjk_share(question) >= CJK_SHARE else None
