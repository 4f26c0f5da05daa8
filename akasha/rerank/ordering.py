"""Validation of reranker output: a complete ordering of the candidates, nothing else.

Every reranker returns a permutation of ``range(n)`` (best first), checked here *before*
``rerank_top_k`` trims it, so a reranker can never drop, duplicate or invent candidates.
Violations raise :class:`~akasha.errors.OrderingError` (a ``ValueError``).
"""

from __future__ import annotations

import json
import re
from collections import Counter

from akasha.errors import OrderingError

_FENCE_RE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL | re.IGNORECASE)


def validate_ordering(order: object, n: int, who: str = "reranker") -> list[int]:
    """Return ``order`` as a list of ints if it is a permutation of ``range(n)``, else raise."""
    if not isinstance(order, (list, tuple)):
        raise OrderingError(f"{who} must return a list of candidate ids, got {type(order).__name__}")
    ids: list[int] = []
    for item in order:
        if isinstance(item, bool) or not isinstance(item, int):
            raise OrderingError(f"{who} returned a non-integer id {item!r}; ids are integers 0..{n - 1}")
        ids.append(item)
    out_of_range = sorted({i for i in ids if not 0 <= i < n})
    if out_of_range:
        raise OrderingError(f"{who} returned ids out of range {out_of_range}; valid ids are 0..{n - 1}")
    duplicates = sorted(i for i, count in Counter(ids).items() if count > 1)
    if duplicates:
        raise OrderingError(f"{who} returned duplicate ids {duplicates}; every id must appear exactly once")
    missing = sorted(set(range(n)) - set(ids))
    if missing:
        raise OrderingError(f"{who} omitted ids {missing}; it must order all {n} candidates (ids 0..{n - 1}) "
                            "exactly once")
    return ids


def parse_order_json(text: str, n: int, who: str = "llm reranker") -> list[int]:
    """Parse ``{"order": [ids]}`` (a Markdown code fence around it is tolerated) and validate it."""
    raw = text.strip()
    fence = _FENCE_RE.match(raw)
    if fence:
        raw = fence.group(1)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        snippet = text.strip()[:200]
        raise OrderingError(f'{who} did not return valid JSON ({exc.msg}); '
                            f'expected {{"order": [ids]}}, got {snippet!r}') from None
    if not isinstance(data, dict) or set(data) != {"order"}:
        raise OrderingError(f'{who} must return exactly {{"order": [ids]}}, got {str(data)[:200]!r}')
    return validate_ordering(data["order"], n, who)


__all__ = ["parse_order_json", "validate_ordering"]
