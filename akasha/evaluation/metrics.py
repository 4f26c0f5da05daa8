"""Ranking metrics over binary relevance: recall@k, reciprocal rank (MRR@k) and nDCG@k.

Every function takes ``matches``: for each retrieved result, best first, the *relevance units*
it satisfies (empty when not relevant). A unit is one thing the question needs found: its
reference answer, or each relevant source file; ``n_relevant`` counts them. So an answer split
over three chunks is found with its first chunk, and a second chunk of a found source adds nothing.

- recall@k: distinct units found in the top k / n_relevant.
- reciprocal rank@k: 1 / rank of the first relevant result within the top k, else 0.
- nDCG@k: a result gains 1 when it finds a new unit, else 0; DCG = sum gain_i / log2(i + 1) over
  ranks i = 1..k; nDCG = DCG / the DCG of min(n_relevant, k) gains at ranks 1, 2, ...

Answers are judged by :func:`contains_span`: does the reply quote at least ``SPAN_CHARS`` (80)
consecutive characters of the reference answer, after :func:`normalize_text`?
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Collection, Sequence

Matches = Sequence[Collection[str]]

SPAN_CHARS = 80
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def _check(n_relevant: int, k: int) -> None:
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if n_relevant < 0:
        raise ValueError(f"n_relevant must be >= 0, got {n_relevant}")


def recall_at_k(matches: Matches, n_relevant: int, k: int) -> float:
    """Fraction of the question's relevance units found in the top ``k`` results (0.0 if it has none)."""
    _check(n_relevant, k)
    if n_relevant == 0:
        return 0.0
    found: set[str] = set()
    for units in matches[:k]:
        found.update(units)
    return min(len(found), n_relevant) / n_relevant


def reciprocal_rank(matches: Matches, k: int = 10) -> float:
    """1 / rank of the first relevant result within the top ``k``; 0.0 when none is relevant."""
    _check(0, k)
    for rank, units in enumerate(matches[:k], start=1):
        if units:
            return 1.0 / rank
    return 0.0


def dcg(gains: Sequence[float], k: int) -> float:
    """Discounted cumulative gain: sum of gain_i / log2(i + 1) for ranks i = 1..k."""
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains[:k], start=1))


def ndcg_at_k(matches: Matches, n_relevant: int, k: int = 10) -> float:
    """nDCG@k where a result gains 1 only when it finds a unit not found higher up."""
    _check(n_relevant, k)
    if n_relevant == 0:
        return 0.0
    seen: set[str] = set()
    gains: list[float] = []
    for units in matches[:k]:
        new = set(units) - seen
        gains.append(1.0 if new else 0.0)
        seen.update(new)
    ideal = dcg([1.0] * min(n_relevant, k), k)
    return dcg(gains, k) / ideal


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean; 0.0 for no values (an empty question set scores nothing)."""
    return sum(values) / len(values) if values else 0.0


def normalize_text(text: str) -> str:
    """Lowercased, accent-folded text with every run of punctuation, markup or space as one space."""
    folded = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return _NON_WORD.sub(" ", folded).strip()


def contains_span(reply: str, reference: str, span: int = SPAN_CHARS) -> bool:
    """True when ``reply`` holds ``span`` consecutive characters of ``reference`` (both normalised, so markup,
    case and punctuation do not count); a reference shorter than ``span`` must appear whole."""
    if span <= 0:
        raise ValueError(f"span must be positive, got {span}")
    gold, text = normalize_text(reference), normalize_text(reply)
    if not gold or not text:
        return False
    if len(gold) <= span:
        return gold in text
    return any(gold[i : i + span] in text for i in range(len(gold) - span + 1))
