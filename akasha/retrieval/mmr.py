"""Maximal marginal relevance: relevant results that do not repeat each other.

Each step picks the candidate maximising ``lambda * sim(query, d) - (1 - lambda) * max(sim(d, picked))``,
vectorised over a small candidate set (never the corpus).
"""

from __future__ import annotations

import numpy as np


def mmr(query_vector: np.ndarray, candidates: np.ndarray, k: int, lambda_mult: float = 0.5) -> list[tuple[int, float]]:
    """Pick ``k`` rows of ``candidates`` (normalised ``(n, d)``); returns ``(row, mmr score)`` in pick order."""
    if not 0.0 <= lambda_mult <= 1.0:
        raise ValueError(f"mmr lambda must be between 0 and 1, got {lambda_mult}")
    n = len(candidates)
    if k <= 0 or n == 0:
        return []
    q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    relevance = candidates @ (q / norm if norm else q)
    redundancy = np.full(n, -np.inf, dtype=np.float32)
    chosen = np.zeros(n, dtype=bool)
    picked: list[tuple[int, float]] = []
    for _ in range(min(k, n)):
        penalty = np.where(np.isfinite(redundancy), redundancy, 0.0)
        score = lambda_mult * relevance - (1.0 - lambda_mult) * penalty
        score[chosen] = -np.inf
        best = int(np.argmax(score))
        picked.append((best, float(score[best])))
        chosen[best] = True
        redundancy = np.maximum(redundancy, candidates @ candidates[best])
    return picked
