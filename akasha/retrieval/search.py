"""Search types: one function ranks chunks for a question over BM25 + dense indexes.

``search_type`` is one of :data:`SEARCH_TYPES` or a callable:

* ``"auto"``   BM25 and dense candidates fused by :func:`fuse_adaptive` (weighted RRF, passage
  vectors, hub discount, neighbour smoothing), then the exact-match rule
  (:func:`akasha.retrieval.fusion.exact_match_first`); docs/quality.md measures each piece.
  ``SearchSettings.auto_fusion="rrf"`` restores plain RRF (k=60) without any of them;
* ``"knn"``    cosine similarity over the normalised vectors;
* ``"bm25"``   Okapi BM25 only;
* ``"mmr"``    maximal marginal relevance over the dense candidates;
* ``"hybrid"`` weighted fusion of min-max normalised scores (``hybrid_weights``: vector, bm25; 0.5/0.5);
* a callable ``fn(query, query_vector, chunks, vectors, k) -> list[(index, score)]`` over the live
  chunks and their aligned normalised ``(n, d)`` float32 matrix (``index``: a position in both).

Every :class:`~akasha.types.Hit` carries ``details`` with every score collected (``vector``, ``bm25``,
``rrf`` or ``fused``, ``mmr``) and ``source``, the retrievers that found it (``bm25+vector`` ...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from akasha.errors import ConfigError
from akasha.retrieval import fusion, hubness
from akasha.retrieval import passages as passages_module
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex
from akasha.retrieval.mmr import mmr
from akasha.types import Chunk, Hit

SEARCH_TYPES: tuple[str, ...] = ("auto", "knn", "bm25", "mmr", "hybrid")

#: fn(query, query_vector, chunks, vectors, k) -> [(row index, score)], best first.
SearchFunction = Callable[[str, np.ndarray, list[Chunk], np.ndarray, int], Sequence[tuple[int, float]]]
SearchType = str | SearchFunction


def validate_search_type(search_type: object) -> SearchType:
    """Return ``search_type`` if known (a name or a callable), else raise ConfigError listing the names."""
    if callable(search_type):
        return search_type
    if isinstance(search_type, str) and search_type.strip().lower() in SEARCH_TYPES:
        return search_type.strip().lower()
    raise ConfigError(
        f"unknown search_type {search_type!r}; known: {', '.join(SEARCH_TYPES)}, "
        "or a callable fn(query, query_vector, chunks, vectors, k) -> [(index, score)]"
    )


@dataclass
class SearchSettings:
    """Knobs of the search types; the defaults suit corpora of a few to a million chunks."""

    candidates: int = 50  # per retriever, before fusion (at least 4 * k)
    rrf_k: int = fusion.RRF_K  # plain RRF (auto_fusion="rrf")
    auto_fusion: str = "adaptive"  # "adaptive" or "rrf"
    adaptive_k: int = fusion.ADAPTIVE_K
    adaptive_weights: tuple[float, float] = fusion.ADAPTIVE_WEIGHTS  # (vector, bm25) before the signals
    neighbour_weight: float = fusion.NEIGHBOUR_WEIGHT  # auto: share of the best neighbour's fused score; 0 = off
    hub_weight: float = hubness.HUB_WEIGHT  # auto: dense candidates ranked by cosine - this * hub score; 0 = off
    #: auto: dense candidates re-scored by their best passage vector; 0: off (none computed or stored).
    passage_fetch: int = passages_module.PASSAGE_FETCH
    #: auto on a CJK question: does the embedder read it? None asks it (akasha.retrieval.reading); a bool tells.
    embedder_reads_cjk: bool | None = None
    hybrid_weights: tuple[float, float] = (0.5, 0.5)  # (vector, bm25); also auto's, on a CJK question read
    mmr_lambda: float = 0.5
    mmr_fetch: int = 20  # candidates for mmr (at least 4 * k)


def search(
    query: str,
    query_vector: np.ndarray | None,
    k: int,
    search_type: SearchType,
    *,
    bm25: BM25Index,
    dense: DenseIndex,
    chunks: Mapping[str, Chunk],
    settings: SearchSettings | None = None,
    dense_reads: bool | None = None,
    hubs: hubness.HubLookup | None = None,
    passages: passages_module.PassageScores | None = None,
) -> list[Hit]:
    """Rank chunks for ``query``; ``chunks`` maps the ids held by both indexes to chunks.

    For ``auto`` only: ``dense_reads`` whether the embedder reads the question (None: the lists'
    agreement decides), ``hubs`` the hub scores (None: ``dense``'s own), ``passages`` best passage cosines.
    """
    search_type = validate_search_type(search_type)
    settings = settings or SearchSettings()
    if k <= 0:
        return []
    if search_type == "bm25":
        return [Hit(chunks[i], s, "bm25", {"bm25": s}) for i, s in bm25.search(query, k)]
    if query_vector is None:
        raise ValueError(f"search_type {search_type!r} needs the question's vector")
    if callable(search_type):
        return _custom(search_type, query, query_vector, k, dense, chunks)
    if search_type == "knn":
        return [Hit(chunks[i], s, "vector", {"vector": s}) for i, s in dense.search(query_vector, k)]
    if search_type == "mmr":
        return _mmr(query_vector, k, dense, chunks, settings)
    n_cand = max(settings.candidates, 4 * k)
    adaptive = search_type == "auto" and settings.auto_fusion == "adaptive"
    vec, raw, best_passage = dense_candidates(dense, query_vector, n_cand, settings, passages if adaptive else None)
    lex = bm25.search(query, n_cand)
    if adaptive:
        if hubs is None:
            hubs = getattr(dense, "hub_scores", None)
        fused = fuse_adaptive(query, vec, lex, len(chunks), settings, dense_reads=dense_reads, hubs=hubs)
        # the exact-match rule; the YAML door does the same (Pipeline._adaptive)
        if lex and bm25.sole_holder(fusion.exact_terms(query, bm25.tokenize(query)), str(lex[0][0])):
            fused = fusion.exact_match_first(fused, lex[0][0])
        key = "rrf"
    elif search_type == "auto":
        if settings.auto_fusion != "rrf":
            raise ConfigError(f"unknown auto_fusion {settings.auto_fusion!r}; known: adaptive, rrf")
        fused = fusion.rrf([vec, lex], k=settings.rrf_k)
        key = "rrf"
    else:
        fused = fusion.weighted([vec, lex], list(settings.hybrid_weights))
        key = "fused"
    in_vec, lex_scores = {i for i, _ in vec}, dict(lex)
    hits = []
    for doc_id, score in fused[:k]:
        details: dict[str, float] = {}
        if doc_id in in_vec:
            details["vector"] = raw[doc_id]
            if doc_id in best_passage:
                details["passage"] = best_passage[doc_id]
        if doc_id in lex_scores:
            details["bm25"] = lex_scores[doc_id]
        details[key] = float(score)
        source = "+".join(name for name, found in (("bm25", doc_id in lex_scores), ("vector", doc_id in in_vec))
                          if found) or "bm25"
        hits.append(Hit(chunks[doc_id], float(score), source, details))
    return hits


def dense_candidates(dense: DenseIndex, query_vector: np.ndarray, n: int, settings: SearchSettings,
                     passages: passages_module.PassageScores | None = None
                     ) -> tuple[list[tuple[str, float]], dict[str, float], dict[str, float]]:
    """The ``n`` dense candidates: ``(ranked (id, score), id -> chunk cosine, id -> best passage cosine)``.

    Without ``passages`` (or with ``SearchSettings.passage_fetch=0``) the ``n`` best chunk cosines;
    with them the ``passage_fetch`` best, re-scored by :func:`akasha.retrieval.passages.rescore`.
    """
    if passages is None or not settings.passage_fetch:
        ranked = dense.search(query_vector, n)
        return ranked, dict(ranked), {}
    deep = dense.search(query_vector, max(n, settings.passage_fetch))
    rescored = passages_module.rescore(deep, query_vector, passages)
    if rescored is None:
        return deep[:n], dict(deep), {}
    ranked, best = rescored
    return ranked[:n], dict(deep), best


def fuse_adaptive(query: str, vector: fusion.Ranked, lexical: fusion.Ranked, population: int,
                  settings: SearchSettings, *, dense_reads: bool | None = None,
                  hubs: hubness.HubLookup | None = None) -> list[tuple[Any, float]]:
    """``auto``'s fusion of a dense and a BM25 list: hub discount, adaptive weighted RRF, neighbour smoothing.

    Also a YAML pattern's ``fusion: adaptive``. ``population``: the chunks searched; ``dense_reads``
    as in :func:`search`; ``hubs``: the dense ids' hub scores (None: no discount). A CJK question the
    embedder reads is fused by score, as ``hybrid`` fuses.
    """
    if vector and lexical and _fused_by_scores(query, dense_reads):
        return fusion.weighted([vector, lexical], list(settings.hybrid_weights))
    if hubs is not None and settings.hub_weight and fusion.cjk_share(query) < fusion.CJK_SHARE:
        # not for CJK questions (docs/quality.md); ignore[arg-type]: dense ids are str, Ranked admits any Hashable
        vector = hubness.discount(list(vector), hubs, settings.hub_weight, lexical)  # type: ignore[arg-type]
    fused = fusion.adaptive(query, vector, lexical, population, k=settings.adaptive_k,
                            weights=settings.adaptive_weights, dense_reads=dense_reads)
    if settings.neighbour_weight:
        fused = fusion.smooth_neighbours(fused, settings.neighbour_weight)
    return fused


def _fused_by_scores(query: str, dense_reads: bool | None) -> bool:
    """Whether ``auto`` fuses ``query``'s lists by score: a Chinese, Japanese or Korean question the embedder reads."""
    return bool(dense_reads) and fusion.cjk_share(query) >= fusion.CJK_SHARE


def _mmr(query_vector: Any, k: int, dense: DenseIndex, chunks: Mapping[str, Chunk],
         settings: SearchSettings) -> list[Hit]:
    cands = dense.search(query_vector, max(settings.mmr_fetch, 4 * k))
    if not cands:
        return []
    ids = [i for i, _ in cands]
    picked = mmr(query_vector, dense.vectors(ids), k, settings.mmr_lambda)
    return [
        Hit(chunks[ids[row]], score, "vector", {"vector": cands[row][1], "mmr": score})
        for row, score in picked
    ]


def _custom(fn: SearchFunction, query: str, query_vector: Any, k: int, dense: DenseIndex,
            chunks: Mapping[str, Chunk]) -> list[Hit]:
    ids = dense.ids
    live = [chunks[i] for i in ids]
    ranked = fn(query, query_vector, live, dense.matrix(), k)
    hits = []
    for row, score in list(ranked)[:k]:
        if not 0 <= int(row) < len(live):
            raise ValueError(f"custom search_type returned row {row}, outside 0..{len(live) - 1}")
        hits.append(Hit(live[int(row)], float(score), "custom", {"custom": float(score)}))
    return hits
