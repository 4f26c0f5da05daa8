"""search(): every search type, hit details/sources, callables, unknown names."""

from __future__ import annotations

import numpy as np
import pytest

from akasha.embeddings.hash import HashEmbedder
from akasha.errors import ConfigError
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex
from akasha.retrieval.mmr import mmr
from akasha.retrieval.search import SEARCH_TYPES, SearchSettings, search, validate_search_type
from akasha.types import Chunk

TEXTS = [
    "The cat sat on the mat near the window.",
    "Dogs love long walks in the park.",
    "A kitten is a young cat that plays all day.",
    "Stock markets fell sharply on Monday.",
    "The quarterly report shows revenue growth.",
    "Cats and dogs can live together peacefully.",
    "貓咪喜歡在窗邊曬太陽。",
]


@pytest.fixture
def world():
    embedder = HashEmbedder()
    chunks = {f"c{i}": Chunk(f"c{i}", t, {"source": f"doc{i}.txt"}) for i, t in enumerate(TEXTS)}
    bm25 = BM25Index(tokenizer="bigram")
    bm25.add(list(chunks), TEXTS)
    dense = DenseIndex()
    dense.add(list(chunks), embedder.embed_documents(TEXTS))
    return embedder, chunks, bm25, dense


def run(world, query, search_type, k=3, settings=None):
    embedder, chunks, bm25, dense = world
    return search(query, embedder.embed_query(query), k, search_type, bm25=bm25, dense=dense, chunks=chunks,
                  settings=settings)


def test_unknown_search_type_lists_known_names():
    with pytest.raises(ConfigError) as info:
        validate_search_type("semantic")
    assert isinstance(info.value, ValueError)
    for name in SEARCH_TYPES:
        assert name in str(info.value)
    assert validate_search_type(" KNN ") == "knn"


def test_knn_scores_are_cosines_best_first(world):
    hits = run(world, "cat mat window", "knn", k=7)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert hits[0].id == "c0" and hits[0].source == "vector"
    assert all(-1.0001 <= s <= 1.0001 for s in scores)
    assert hits[0].details == {"vector": hits[0].score}


def test_bm25_only(world):
    hits = run(world, "quarterly revenue", "bm25")
    assert hits[0].id == "c4" and hits[0].source == "bm25" and set(hits[0].details) == {"bm25"}
    assert run(world, "窗邊", "bm25")[0].id == "c6"


@pytest.mark.parametrize("kind,key", [("auto", "rrf"), ("hybrid", "fused")])
def test_fused_types_carry_every_score(world, kind, key):
    hits = run(world, "young cat kitten", kind, k=5)
    assert hits[0].id == "c2"
    top = hits[0]
    assert top.source == "bm25+vector"
    assert set(top.details) == {"vector", "bm25", key}
    assert top.score == top.details[key]
    for hit in hits:
        assert key in hit.details
        expected = {"vector": "vector", "bm25": "bm25"}
        found = [s for s in ("bm25", "vector") if s in hit.details]
        assert hit.source == ("bm25+vector" if len(found) == 2 else expected[found[0]])


def test_hybrid_weights_change_the_order(world):
    only_bm25 = run(world, "cat", "hybrid", k=7, settings=SearchSettings(hybrid_weights=(0.0, 1.0)))
    bm25 = run(world, "cat", "bm25", k=7)
    assert [h.id for h in only_bm25[: len(bm25)]] == [h.id for h in bm25]


def test_mmr_prefers_diverse_results():
    rng = np.random.default_rng(0)
    base = rng.normal(size=16).astype(np.float32)
    other = rng.normal(size=16).astype(np.float32)
    cands = np.stack([base, base + 0.01, base + 0.02, 0.6 * base + other])
    cands /= np.linalg.norm(cands, axis=1, keepdims=True)
    picked = [row for row, _ in mmr(base, cands, 2, lambda_mult=0.3)]
    assert picked[0] in (0, 1, 2) and picked[1] == 3
    assert [row for row, _ in mmr(base, cands, 2, lambda_mult=1.0)] == [0, 1]
    with pytest.raises(ValueError):
        mmr(base, cands, 2, lambda_mult=1.5)


def test_mmr_search_type(world):
    hits = run(world, "cat", "mmr", k=3)
    assert len(hits) == 3 and len({h.id for h in hits}) == 3
    assert all({"vector", "mmr"} <= set(h.details) for h in hits)


def test_callable_search_type(world):
    calls = []

    def longest_first(query, query_vector, chunks, vectors, k):
        calls.append((query, query_vector.shape, len(chunks), vectors.shape))
        order = sorted(range(len(chunks)), key=lambda i: -len(chunks[i].text))
        return [(i, float(len(chunks[i].text))) for i in order[:k]]

    hits = run(world, "anything", longest_first, k=2)
    assert calls == [("anything", (64,), len(TEXTS), (len(TEXTS), 64))]
    assert hits[0].text == max(TEXTS, key=len)
    assert hits[0].details == {"custom": hits[0].score}


def test_bm25_type_needs_no_vector(world):
    _, chunks, bm25, dense = world
    hits = search("dogs", None, 2, "bm25", bm25=bm25, dense=dense, chunks=chunks)
    assert hits and hits[0].id in ("c1", "c5")
    with pytest.raises(ValueError):
        search("dogs", None, 2, "knn", bm25=bm25, dense=dense, chunks=chunks)


def test_dense_index_add_remove_and_compaction():
    dense = DenseIndex()
    vectors = np.eye(4, dtype=np.float32)
    dense.add(["a", "b", "c", "d"], vectors * 3)
    assert dense.search(np.array([0, 2, 0, 0]), 1) == [("b", pytest.approx(1.0))]
    dense.remove(["b"])
    assert "b" not in [i for i, _ in dense.search(np.array([0, 1, 0, 0]), 4)]
    assert len(dense) == 3 and dense.matrix().shape == (3, 4)
    dense.add(["b"], np.array([[0, 1, 0, 0]]))
    assert dense.search(np.array([0, 1, 0, 0]), 1)[0][0] == "b"
    with pytest.raises(ValueError):
        dense.add(["e"], np.ones((1, 5)))
