"""BM25 speed paths give the same answers as the plain scan: MaxScore pruning, cached saturation, fast build."""

from __future__ import annotations

import numpy as np
import pytest

import akasha.retrieval.bm25 as bm25_module
from akasha.retrieval.bm25 import BM25Index


def _corpus(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, 2001) ** 1.1
    words = rng.choice(2000, size=(n, 40), p=weights / weights.sum())
    return [" ".join(f"w{w}" for w in row) for row in words]


def _full_scan(index: BM25Index, query: str, k: int) -> list[tuple[str, float]]:
    slots, scores = index.score_slots(query)
    top = bm25_module._top_k(scores, k, tiebreak=slots)
    return [(index.slot_ids([slots[i]])[0], float(scores[i])) for i in top]


@pytest.fixture
def prune_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25_module, "PRUNE_MIN_POSTINGS", 0)


def _check(index: BM25Index, queries: list[str], k: int = 10) -> int:
    pruned = 0
    for query in queries:
        got = index.search(query, k)
        want = _full_scan(index, query, k)
        assert [i for i, _ in got] == [i for i, _ in want], query
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-6)
        pruned += index._search_pruned(*index._query_terms(query), k) is not None
    return pruned


def test_pruned_search_equals_full_scan(prune_everything: None) -> None:
    texts = _corpus(3000)
    index = BM25Index(tokenizer="bigram")
    index.add([f"d{i}" for i in range(3000)], texts)
    queries = ["w0 w1 w700", "w1 w2 w3 w1500", "w0 w999", "w5 w6", "w0 w1 w2 w3", "w1999 w1998 w0"]
    assert _check(index, queries) >= 3  # mixing common and rare words prunes


def test_pruned_search_with_delta_and_deletions(prune_everything: None) -> None:
    texts = _corpus(4000, seed=1)
    index = BM25Index(tokenizer="bigram")
    index.add([f"d{i}" for i in range(3000)], texts[:3000])
    index._merge()
    index.add([f"d{i}" for i in range(3000, 4000)], texts[3000:])  # stays in the delta segment
    index.remove([f"d{i}" for i in range(0, 4000, 7)])
    assert index._delta_size
    _check(index, ["w0 w1 w800", "w2 w1200 w3", "w0 w3999", "w1 w2 w3 w4"])


def test_saturation_cache_follows_updates() -> None:
    texts = _corpus(500, seed=2)
    index = BM25Index(tokenizer="bigram")
    index.add([f"d{i}" for i in range(500)], texts)
    index._merge()
    before = index.search("w3 w40", 5)
    index.add(["long"], [" ".join(["w3"] * 400)])  # changes the average length
    index.remove(["d0"])
    fresh = BM25Index(tokenizer="bigram")
    fresh.add([f"d{i}" for i in range(1, 500)] + ["long"], texts[1:] + [" ".join(["w3"] * 400)])
    got, want = index.search("w3 w40", 5), fresh.search("w3 w40", 5)
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-6)
    assert [s for _, s in before] != pytest.approx([s for _, s in got], rel=1e-6)  # statistics did change


def test_vocabulary_ids_stay_in_first_seen_order() -> None:
    index = BM25Index(tokenizer="bigram")
    index.add(["a", "b"], ["zeta alpha zeta", "beta alpha"])
    index.add(["c"], ["gamma zeta"])
    assert list(index._vocab) == ["zeta", "alpha", "beta", "gamma"]
    assert "missing" not in index._vocab and index.search("missing", 3) == []
    assert "missing" not in index._vocab
