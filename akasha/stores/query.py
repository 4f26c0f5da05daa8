"""The Store contract's query verb: one :class:`SearchRequest`, answered by the store's own engine.

A store says what its engine answers natively in ``capabilities`` (a subset of
:data:`CAPABILITIES`) and answers ``query(request) -> list[Hit]``: a store whose engine fuses
(PostgreSQL) returns the fused list; any other fetches each side's candidates (at most ``pool``
each) for :func:`rank_hits` to fuse, so no process holds more than the pool. Each
:class:`~akasha.types.Hit` keeps its scores in ``details`` (``vector``, ``bm25``, ``rrf``) and
in ``source`` the sides that found it, as the in-process search types do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from akasha.errors import ConfigError
from akasha.retrieval.fusion import exact_match_first, fuse_ranked
from akasha.types import Chunk, Hit

#: What a store's engine can answer natively: a dense (vector) side, a lexical side, and both fused.
CAPABILITIES = ("dense", "lexical", "hybrid")
#: RRF's k and the (vector, lexical) weights when a request names none.
DEFAULT_RRF_K = 60
DEFAULT_WEIGHTS = (0.5, 0.5)
#: The chunk length (tokens) BM25's length normalisation assumes in a store whose engine keeps no
#: length statistics (Chroma's text filter, Qdrant's sparse vectors with only the IDF modifier).
AVERAGE_TOKENS = 150


@dataclass(frozen=True)
class SearchRequest:
    """One ranking request for a store (see the module docstring).

    ``vector`` is a unit-length query vector or None (lexical only); ``tokens`` the
    question's lexical terms, already split by akasha's tokenizer (empty: dense only);
    ``pool`` how many candidates each side fetches (at least ``k``); ``rrf_k`` and
    ``weights`` = (vector, lexical) the fusion settings.
    """

    vector: np.ndarray | None = None
    tokens: tuple[str, ...] = ()
    k: int = 10
    pool: int = 50
    filters: Mapping[str, Any] | None = None
    rrf_k: int = DEFAULT_RRF_K
    weights: tuple[float, float] = DEFAULT_WEIGHTS
    text: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k <= 0:
            raise ValueError(f"k must be a positive integer, got {self.k!r}")
        if not isinstance(self.pool, int) or isinstance(self.pool, bool) or self.pool <= 0:
            raise ValueError(f"pool must be a positive integer, got {self.pool!r}")
        if self.pool < self.k:
            object.__setattr__(self, "pool", self.k)
        weights = tuple(float(w) for w in self.weights)
        if len(weights) != 2 or not all(math.isfinite(w) and w >= 0 for w in weights) or sum(weights) <= 0:
            raise ValueError("fusion weights must be two finite non-negative numbers, not both 0; "
                             f"got {self.weights!r}")
        object.__setattr__(self, "weights", weights)
        if not isinstance(self.rrf_k, int) or self.rrf_k < 0:
            raise ValueError(f"rrf_k must be a non-negative integer, got {self.rrf_k!r}")
        object.__setattr__(self, "tokens", tuple(str(t) for t in self.tokens if t))

    @property
    def mode(self) -> str:
        """``"dense"``, ``"lexical"`` or ``"hybrid"``: which sides this request ranks by."""
        has_vector = self.vector is not None and self.weights[0] > 0
        has_tokens = bool(self.tokens) and self.weights[1] > 0
        if has_vector and has_tokens:
            return "hybrid"
        return "dense" if has_vector or not has_tokens else "lexical"


def rank_hits(dense: Sequence[tuple[Chunk, float]], lexical: Sequence[tuple[Chunk, float]],
              request: SearchRequest, exact: str | None = None) -> list[Hit]:
    """Fuse one store's two candidate lists, ``(chunk, score)`` best first, into the request's ``k`` hits.

    A request with one side returns that side's list as hits; a hybrid request is always fused (its
    scores are fused scores even when one side found nothing, as in PostgreSQL's statement).
    """
    if request.mode == "dense":
        return [Hit(c, float(s), "vector", {"vector": float(s)}) for c, s in list(dense)[: request.k]]
    if request.mode == "lexical":
        return [Hit(c, float(s), "bm25", {"bm25": float(s)}) for c, s in list(lexical)[: request.k]]
    return fuse_sides(dense, lexical, request, exact)


def fuse_sides(dense: Sequence[tuple[Chunk, float]], lexical: Sequence[tuple[Chunk, float]],
               request: SearchRequest, exact: str | None = None) -> list[Hit]:
    """Weighted reciprocal-rank fusion (:func:`akasha.retrieval.fusion.fuse_ranked`) of a dense and a lexical list.

    ``exact``, the first lexical chunk when it alone holds one of the question's exact terms, then leads
    (:func:`akasha.retrieval.fusion.exact_match_first`). PostgreSQL computes the same in its query.
    """
    chunks: dict[str, Chunk] = {}
    details: dict[str, dict[str, float]] = {}
    for key, ranked in (("vector", dense), ("bm25", lexical)):
        for chunk, score in ranked:
            chunks.setdefault(chunk.id, chunk)
            details.setdefault(chunk.id, {})[key] = float(score)
    fused = fuse_ranked([(c.id, float(s)) for c, s in dense], [(c.id, float(s)) for c, s in lexical],
                        request.weights, request.rrf_k)
    if exact is not None and exact in chunks:
        fused = exact_match_first(fused, exact)
    hits = []
    for chunk_id, score in fused[: request.k]:
        found = details[str(chunk_id)]
        source = "+".join(name for name in ("bm25", "vector") if name in found)
        hits.append(Hit(chunks[str(chunk_id)], float(score), source, {**found, "rrf": float(score)}))
    return hits


def resolve_tokenizer_id(name: str) -> str:
    """The persisted id of a tokenizer name (``auto`` -> what it means in this process); ids pass through."""
    from akasha.retrieval.tokenize import TOKENIZER_NAMES, resolve_tokenizer

    return resolve_tokenizer(name)[0] if name in TOKENIZER_NAMES else name


def lexical_tokenizer(tokenizer_id: str) -> Callable[[str], list[str]]:
    """The tokenizer function for a name (``auto``, ``jieba``, ``bigram``) or a persisted tokenizer id.

    A store tokenizes its texts and the question with the same one, so a query worker ranks with the
    very terms the indexing process stored. ConfigError when this process cannot reproduce the id.
    """
    from akasha.retrieval.tokenize import TOKENIZER_NAMES, resolve_tokenizer, tokenizer_from_id

    if tokenizer_id in TOKENIZER_NAMES:
        return resolve_tokenizer(tokenizer_id)[1]
    found = tokenizer_from_id(tokenizer_id)
    if found is None:
        raise ConfigError(f"the store's lexical terms were made by tokenizer {tokenizer_id!r}, which this process "
                          "cannot reproduce; install what it needs (jieba's words: rjieba, in the 'full' extra) "
                          "or re-index")
    return found


__all__ = [
    "AVERAGE_TOKENS", "CAPABILITIES", "DEFAULT_RRF_K", "DEFAULT_WEIGHTS", "SearchRequest", "fuse_ranked",
    "fuse_sides", "lexical_tokenizer", "rank_hits", "resolve_tokenizer_id",
]
