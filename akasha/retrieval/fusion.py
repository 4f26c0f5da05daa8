"""Fusing ranked lists from several retrievers into one ranking.

RRF scores each item ``sum(1 / (k + rank))`` over the lists it appears in
(rank starting at 1), so it needs no score calibration. Weighted fusion
min-max normalises each list to 0..1 (a list whose scores are all equal
normalises to 1.0) and adds the weighted scores.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

RRF_K = 60

Ranked = Sequence[tuple[Hashable, float]]  # (item id, score), best first


def rrf(lists: Sequence[Ranked], k: int = RRF_K, weights: Sequence[float] | None = None) -> list[tuple[Hashable, float]]:
    """Reciprocal-rank fusion of ranked lists; returns (id, fused score), best first."""
    weights = weights or [1.0] * len(lists)
    scores: dict[Hashable, float] = {}
    for ranked, weight in zip(lists, weights, strict=True):
        for rank, (item, _score) in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])


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
