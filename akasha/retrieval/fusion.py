"""Fusing ranked lists from several retrievers into one ranking.

RRF scores each item ``sum(weight / (k + rank))`` over the lists it appears in (rank from 1), so it
needs no score calibration; weighted fusion min-max normalises each list to 0..1 and adds the
weighted scores. ``auto`` uses weighted RRF (:func:`adaptive`), neighbour smoothing
(:func:`smooth_neighbours`) and the exact-match rule (:func:`exact_match_first`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from typing import Any

RRF_K = 60

Ranked = Sequence[tuple[Hashable, float]]  # (item id, score), best first


def rrf(lists: Sequence[Ranked], k: int = RRF_K,
        weights: Sequence[float] | None = None) -> list[tuple[Hashable, float]]:
    """Reciprocal-rank fusion of ranked lists; returns (id, fused score), best first."""
    return sorted(_rrf_scores(lists, k, weights).items(), key=lambda pair: -pair[1])


def _rrf_scores(lists: Sequence[Ranked], k: int, weights: Sequence[float] | None) -> dict[Hashable, float]:
    """Each item's RRF score, items in the order first seen (the order :func:`rrf` keeps for ties)."""
    weights = weights or [1.0] * len(lists)
    scores: dict[Hashable, float] = {}
    for ranked, weight in zip(lists, weights, strict=True):
        for rank, (item, _score) in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


def min_max(ranked: Ranked) -> list[tuple[Hashable, float]]:
    """Scale scores to 0..1; an all-equal list maps to 1.0."""
    if not ranked:
        return []
    values = [score for _, score in ranked]
    low, high = min(values), max(values)
    if high == low:
        return [(item, 1.0) for item, _ in ranked]
    span = high - low
    return [(item, (score - low) / span) for item, score in ranked]


def weighted(lists: Sequence[Ranked], weights: Sequence[float]) -> list[tuple[Hashable, float]]:
    """Min-max normalise each list and add the weighted scores; returns best first."""
    if len(weights) != len(lists):
        raise ValueError(f"weighted fusion needs one weight per list: {len(lists)} lists, {len(weights)} weights")
    scores: dict[Hashable, float] = {}
    for ranked, weight in zip(lists, weights, strict=True):
        for item, score in min_max(ranked):
            scores[item] = scores.get(item, 0.0) + weight * score
    return sorted(scores.items(), key=lambda pair: -pair[1])

def fuse_ranked(dense: Sequence[tuple[Any, float]], lexical: Sequence[tuple[Any, float]],
                weights: Sequence[float], rrf_k: int) -> list[tuple[Any, float]]:
    """:func:`rrf` of a dense and a lexical list of ``(id, score)`` with ``weights``, best first, ties by id.

    The fusion of ``auto``, of a YAML ``fusion: adaptive`` pattern and of the stores' hybrid queries.
    """
    scores = _rrf_scores([dense, lexical], rrf_k, (float(weights[0]), float(weights[1])))
    return sorted(scores.items(), key=lambda pair: (-pair[1], str(pair[0])))  # full ties: first seen first


#: A question of at most this many words may be a name: an identifier, an error code, an option, a CJK phrase.
EXACT_MAX_WORDS = 3


def names_one_thing(question: str) -> bool:
    """Whether ``question`` has at most :data:`EXACT_MAX_WORDS` words (a CJK run: a word per two characters)."""
    cjk = len(_CJK_RE.findall(question))
    return len(_CJK_RE.sub(" ", question).split()) + cjk // 2 <= EXACT_MAX_WORDS


#: Inside a term: a joint (``_``, or a ``.`` between word characters).
_JOINT_RE = re.compile(r"\w_\w|\w\.\w")
#: Letters and digits together (``e4711``, ``sha256``), in a term of at least :data:`CODE_MIN_CHARS`
#: characters: shorter ones are ordinary words of a sentence ("l1" cache, "x86", "mp3").
_CODE_RE = re.compile(r"[^\W\d_]\d|\d[^\W\d_]")
CODE_MIN_CHARS = 4


def identifier_shaped(term: str) -> bool:
    """Whether a lexical term is written like code: ``retry_max_delay``, ``os.path.join``, ``e4711``, ``3.11``."""
    return bool(_JOINT_RE.search(term)) or (len(term) >= CODE_MIN_CHARS and bool(_CODE_RE.search(term)))


def exact_terms(question: str, terms: Sequence[str]) -> list[str]:
    """The ``terms`` (as the index tokenized ``question``) the exact-match rule looks up.

    All of a short question's (:func:`names_one_thing`); else only :func:`identifier_shaped` ones: a plain
    word that happens to occur in one chunk says little about the answer.
    """
    if names_one_thing(question):
        return list(terms)
    return [term for term in terms if identifier_shaped(term)]


def exact_match_first(fused: Sequence[tuple[Any, float]], item: Any) -> list[tuple[Any, float]]:
    """``fused`` with ``item`` (the chunk alone holding an :func:`exact_terms` term) first, just above the best."""
    rest = [pair for pair in fused if pair[0] != item]
    top = max((score for _, score in fused), default=0.0)
    return [(item, top + 1e-9), *rest]


ADAPTIVE_K = 10
#: Weights (vector, bm25) when both lists are informative: the dense list leads.
ADAPTIVE_WEIGHTS = (0.6, 0.4)
#: A question with at least this share of CJK characters among its letters and digits is checked ...
CJK_SHARE = 0.1
#: ... and, with ``dense_reads`` None, its dense list counts only when the two top-``AGREEMENT_DEPTH``
#: lists share at least this many times the items two random lists would.
MIN_LIFT = 5.0
AGREEMENT_DEPTH = 50
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_WORD_RE = re.compile(r"\w", re.UNICODE)


def cjk_share(text: str) -> float:
    """Share of Chinese, Japanese or Korean characters among the letters and digits of ``text``."""
    letters = len(_WORD_RE.findall(text))
    return len(_CJK_RE.findall(text)) / letters if letters else 0.0


def agreement_lift(a: Ranked, b: Ranked, population: int, depth: int = AGREEMENT_DEPTH) -> float:
    """How many times more items the two top-``depth`` lists share than two random lists of ``population`` would.

    (A dense list from a model that cannot read the question agrees with BM25 about as often as chance.)
    """
    top_a = {item for item, _ in a[:depth]}
    top_b = {item for item, _ in b[:depth]}
    if not top_a or not top_b or population <= 0:
        return 0.0
    expected = len(top_a) * len(top_b) / population
    return len(top_a & top_b) / expected


def adaptive_weights(query: str, vector: Ranked, lexical: Ranked, population: int, *,
                     weights: Sequence[float] = ADAPTIVE_WEIGHTS, dense_reads: bool | None = None
                     ) -> tuple[float, float]:
    """(vector, bm25) weights for one question: ``weights``, or the dense list's at 0 where it is blind.

    Only a mostly CJK question is checked: ``dense_reads`` says whether the embedder reads it; when
    None, the dense list is dropped if it agrees with BM25 less than :data:`MIN_LIFT` times chance.
    """
    if not vector or not lexical:
        return (1.0, 0.0) if vector else (0.0, 1.0)
    w_vec, w_lex = float(weights[0]), float(weights[1])
    if cjk_share(query) >= CJK_SHARE:
        blind = (not dense_reads if dense_reads is not None
                 else agreement_lift(vector, lexical, population) < MIN_LIFT)
        if blind:
            w_vec = 0.0
    total = w_vec + w_lex
    return (w_vec / total, w_lex / total) if total > 0 else (0.5, 0.5)


def adaptive(query: str, vector: Ranked, lexical: Ranked, population: int, *, k: int = ADAPTIVE_K,
             weights: Sequence[float] = ADAPTIVE_WEIGHTS, dense_reads: bool | None = None
             ) -> list[tuple[Hashable, float]]:
    """:func:`fuse_ranked` of a dense and a BM25 list with the question's :func:`adaptive_weights`; best first."""
    w_vec, w_lex = adaptive_weights(query, vector, lexical, population, weights=weights, dense_reads=dense_reads)
    return fuse_ranked(vector, lexical, (w_vec, w_lex), k)


#: Share of its best neighbour's fused score ``auto`` adds to a chunk's (:func:`smooth_neighbours`); 0: off.
NEIGHBOUR_WEIGHT = 0.1


def chunk_position(chunk_id: Hashable) -> tuple[str, int] | None:
    """``(document, n)`` of an id shaped ``<document>#<n>`` (akasha's chunk ids), else None (no neighbours)."""
    if not isinstance(chunk_id, str):
        return None
    doc, sep, number = chunk_id.rpartition("#")
    if not sep or not number.isdigit():
        return None
    return doc, int(number)


def smooth_neighbours(fused: Ranked, weight: float = NEIGHBOUR_WEIGHT,
                      position: Callable[[Hashable], tuple[Hashable, int] | None] = chunk_position
                      ) -> list[tuple[Hashable, float]]:
    """Add ``weight`` times the best fused score among each item's neighbours to its own; returns best first.

    An answer often spans two chunks. ``position(item)`` gives ``(group, n)`` (neighbours: ``n - 1`` and
    ``n + 1`` in the same group) or None. Only items in ``fused`` count as neighbours; ties keep its order.
    """
    if weight == 0 or not fused:
        return list(fused)
    keys = [position(item) for item, _ in fused]
    at = {key: score for key, (_, score) in zip(keys, fused, strict=True) if key is not None}
    get = at.get
    out = []
    for key, (item, score) in zip(keys, fused, strict=True):
        if key is not None:
            group, n = key
            before, after = get((group, n - 1), 0.0), get((group, n + 1), 0.0)
            score = score + weight * (before if before > after else after)
        out.append((item, score))
    out.sort(key=lambda pair: -pair[1])
    return out
