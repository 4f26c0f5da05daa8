"""Binary-quantised dense search: same answers as exact search where it matters, high recall elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

from akasha.index.snapshot import read_snapshot, write_snapshot
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import QUANTIZE_ABOVE, DenseIndex
from akasha.retrieval.quantized import BinaryCodes, encode, nearest

D = 384


def _ids(n: int) -> list[str]:
    return [f"c{i}" for i in range(n)]


def _separated(n_groups: int = 300, per_group: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Tight groups of ``per_group`` vectors around random centres (easy data: each group is a query's top-k)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_groups, D)).astype(np.float32)
    rows = np.repeat(centres, per_group, axis=0) + 0.05 * rng.standard_normal((n_groups * per_group, D)).astype(
        np.float32)
    return rows, centres


def _clustered(n: int, seed: int, clusters: int = 100) -> np.ndarray:
    """Anisotropic clustered data: a shared offset (like sentence embeddings' mean) + cluster + noise."""
    rng = np.random.default_rng(seed)
    offset = 0.5 * np.random.default_rng(99).standard_normal(D).astype(np.float32)
    centres = np.random.default_rng(98).standard_normal((clusters, D)).astype(np.float32)
    return offset + centres[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, D)).astype(np.float32)


def _pair(rows: np.ndarray, **options: object) -> tuple[DenseIndex, DenseIndex]:
    exact = DenseIndex(quantize_above=None)
    exact.add(_ids(len(rows)), rows)
    quant = DenseIndex(quantize_above=100, **options)  # type: ignore[arg-type]
    quant.add(_ids(len(rows)), rows)
    return exact, quant


def test_easy_data_gives_exactly_the_exact_top_k() -> None:
    rows, centres = _separated()
    exact, quant = _pair(rows, rescore_min=50)
    assert quant._codes is not None and quant.rescore_count(10) < len(quant)
    for centre in centres[:50]:
        assert quant.search(centre, 10) == exact.search(centre, 10)


def test_recall_on_clustered_data() -> None:
    rows = _clustered(20_000, seed=1)
    queries = _clustered(100, seed=2)
    exact, quant = _pair(rows, rescore_min=1)  # default fraction: 400 of 20,000 rows rescored
    hits = 0
    for q in queries:
        truth = {i for i, _ in exact.search(q, 10)}
        hits += len(truth & {i for i, _ in quant.search(q, 10)})
    assert hits / (10 * len(queries)) >= 0.95


def test_scores_are_exact_cosines() -> None:
    rows = _clustered(2_000, seed=3)
    exact, quant = _pair(rows)
    q = _clustered(1, seed=4)[0]
    exact_scores = dict(exact.search(q, 2_000))
    for doc_id, score in quant.search(q, 10):
        assert score == pytest.approx(exact_scores[doc_id], abs=1e-5)


def test_threshold_switches_between_exact_and_quantised() -> None:
    rows = _clustered(600, seed=5)
    index = DenseIndex(quantize_above=500, rescore_min=20)
    index.add(_ids(400), rows[:400])
    assert index._codes is None  # below the threshold: plain exact scan
    exact = DenseIndex(quantize_above=None)
    exact.add(_ids(400), rows[:400])
    q = rows[7] + 0.01
    assert index.search(q, 5) == exact.search(q, 5)
    index.add(_ids(600)[400:], rows[400:])
    assert index._codes is not None and index._codes.n == 600
    assert index.search(rows[555], 1)[0][0] == "c555"
    assert QUANTIZE_ABOVE >= 50_000  # corpora of 2,000 or 20,000 chunks never leave the exact path by default
    assert DenseIndex()._codes is None


def test_codes_follow_add_replace_and_remove() -> None:
    rows = _clustered(3_000, seed=6)
    index = DenseIndex(quantize_above=100, rescore_min=30)
    index.add(_ids(3_000), rows)
    index.remove([f"c{i}" for i in range(0, 3_000, 2)])  # enough dead rows to compact
    assert index._codes is not None and index._codes.n == index._n
    for i in (1, 7, 2_999):
        assert index.search(rows[i], 1)[0][0] == f"c{i}"
    assert all(int(doc_id[1:]) % 2 == 1 for doc_id, _ in index.search(rows[10], 30))
    index.add(["c1"], rows[10:11])  # replace: the id now points at another vector
    assert index.search(rows[10], 2)[0][0] in {"c1", "c10"}
    assert index._codes.n == index._n


def test_snapshot_round_trip_keeps_quantised_results(tmp_path) -> None:
    rows = _clustered(1_500, seed=7)
    ids = _ids(1_500)
    dense = DenseIndex(quantize_above=100, rescore_min=40)
    dense.add(ids, rows)
    bm25 = BM25Index(tokenizer="bigram")
    bm25.add(ids, [f"text {i}" for i in range(1_500)])
    write_snapshot(tmp_path / "s.snap", "state", bm25, dense)
    loaded = read_snapshot(tmp_path / "s.snap", "state")
    assert loaded is not None
    again = DenseIndex.from_matrix(loaded[1].ids, loaded[1].matrix(), normalized=True, quantize_above=100,
                                   rescore_min=40)
    for q in _clustered(5, seed=8):
        assert again.search(q, 10) == dense.search(q, 10)


def test_codes_hamming_matches_bit_count() -> None:
    rng = np.random.default_rng(9)
    rows = rng.standard_normal((50, 100)).astype(np.float32)
    codes = BinaryCodes(np.zeros(100, dtype=np.float32))
    codes.append(rows[:20])
    codes.append(rows[20:])
    q = rng.standard_normal(100).astype(np.float32)
    expected = ((rows > 0) != (q > 0)).sum(axis=1)
    assert codes.distances(q).tolist() == expected.tolist()
    assert encode(rows, np.zeros(100, dtype=np.float32)).shape == (2, 50)
    picked = nearest(codes.distances(q), 5)
    assert set(np.argsort(expected, kind="stable")[:1]) <= set(picked.tolist())
    assert len(picked) >= 5
