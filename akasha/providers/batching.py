"""Split embedding inputs into provider-sized requests."""

from __future__ import annotations

from collections.abc import Sequence


def plan_batches(texts: Sequence[str], max_items: int, max_chars: int | None = None) -> list[tuple[int, int]]:
    """Return ``[(start, end), ...]`` slices of ``texts``: at most ``max_items`` texts each and,
    when ``max_chars`` is given, at most that many characters (a single longer text gets its own batch)."""
    if max_items <= 0:
        raise ValueError(f"batch size must be positive, got {max_items}")
    spans: list[tuple[int, int]] = []
    start, chars = 0, 0
    for i, text in enumerate(texts):
        size = len(text)
        full = i - start >= max_items or (max_chars is not None and i > start and chars + size > max_chars)
        if full:
            spans.append((start, i))
            start, chars = i, 0
        chars += size
    if start < len(texts):
        spans.append((start, len(texts)))
    return spans


__all__ = ["plan_batches"]
