"""Hub discount in auto: a chunk close to many other chunks loses ground to one close only to the question."""

from __future__ import annotations

import numpy as np
import pytest

from akasha.index.snapshot import read_snapshot, write_snapshot
from akasha.retrieval import hubness
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex
from akasha.retrieval.search import SearchSettings, search
from akasha.types import Chunk


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _brute_force(matrix: np.ndarray, neighbours: int) -> np.ndarray:
    out = []
    for i, row in enumerate(matrix):
        others = sorted((float(row @ other) for j, other in enumerate(matrix) if j != i), reverse=True)
        out.append(np.mean(others[:neighbours]) if others else 0.0)
    return np.asarray(out)


@pytest.mark.parametrize("n", [1, 2, 4, 6, 37])
def test_hub_scores_are_the_mean_cosine_with_the_nearest_other_rows(n, monkeypatch):
    monkeypatch.setattr(hubness, "BLOCK", 8)  # several blocks, the last one short
    matrix = _unit(np.random.default_rng(n).normal(size=(n, 12)))
    for neighbours in (1, 5):
        assert hubness.hub_scores(matrix, neighbours) == pytest.approx(_brute_force(matrix, neighbours), abs=1e-5)


def test_a_duplicate_is_a_neighbour():
    matrix = _unit(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    assert hubness.hub_scores(matrix, 1) == pytest.approx([1.0, 1.0, 0.0], abs=1e-6)


def test_discount_reorders_and_keeps_the_raw_cosines():
    ranked = [("hub", 0.80), ("focused", 0.75), ("other", 0.70)]
    hubs = {"hub": 0.9, "focused": 0.2, "other": 0.1}
    out = hubness.discount(ranked, lambda ids: np.array([hubs[i] for i in ids]), 0.5)
    assert out == [("focused", 0.75), ("other", 0.70), ("hub", 0.80)]  # 0.65, 0.65 (input order), 0.35
    assert hubness.discount(ranked, lambda ids: None, 0.5) == ranked
    assert hubness.discount(ranked, lambda ids: np.zeros(len(ids)), 0.0) == ranked
    assert hubness.discount([], lambda ids: None, 0.5) == []


def test_dense_index_keeps_hubs_right_through_adds_removes_and_replacements(monkeypatch):
    monkeypatch.setattr(hubness, "BLOCK", 3)  # several blocks of new rows per add
    rng = np.random.default_rng(0)
    dense = DenseIndex()
    dense.add([f"c{i}" for i in range(10)], rng.normal(size=(10, 8)))
    first = dense.hubs()
    assert first is not None and dense.has_hubs()
    assert first == pytest.approx(hubness.hub_scores(dense.matrix()), abs=1e-5)
    assert dense.hub_scores(["c3", "c0"]) == pytest.approx(first[[3, 0]], abs=1e-6)
    names = [f"c{i}" for i in range(10)]
    for step in range(25):
        action = step % 3
        if action == 0:  # add a few new rows
            new = [f"n{step}.{j}" for j in range(1 + step % 4)]
            dense.add(new, rng.normal(size=(len(new), 8)))
            names += new
        elif action == 1 and len(names) > 3:  # remove some
            gone = [names.pop(int(rng.integers(len(names)))) for _ in range(1 + step % 3)]
            dense.remove(gone)
        else:  # replace one row's vector
            dense.add([names[0]], rng.normal(size=(1, 8)))
        expected = hubness.hub_scores(dense.matrix())
        assert dense.hubs() == pytest.approx(expected, abs=1e-5), step
        assert dense.hub_scores(dense.ids[:2]) == pytest.approx(expected[:2], abs=1e-5)


def test_an_added_row_costs_one_pass_over_the_others_not_all_pairs(monkeypatch):
    rng = np.random.default_rng(3)
    dense = DenseIndex()
    dense.add([f"c{i}" for i in range(50)], rng.normal(size=(50, 8)))
    dense.hubs()
    queried = []
    real = hubness.nearest

    def counting(queries, matrix, own=None, neighbours=hubness.HUB_NEIGHBOURS):
        queried.append(len(queries))
        return real(queries, matrix, own, neighbours)

    monkeypatch.setattr(hubness, "nearest", counting)
    dense.add(["late"], rng.normal(size=(1, 8)))
    dense.hubs()
    assert queried == [1]
    assert dense.hubs() == pytest.approx(hubness.hub_scores(dense.matrix()), abs=1e-5)


def test_no_hubs_above_the_size_limit(monkeypatch):
    monkeypatch.setattr(hubness, "HUB_MAX_ROWS", 5)
    dense = DenseIndex()
    dense.add([f"c{i}" for i in range(6)], np.random.default_rng(1).normal(size=(6, 4)))
    assert dense.hubs() is None and dense.hub_scores(["c0"]) is None


def test_a_snapshot_keeps_the_hub_scores(tmp_path):
    ids = [f"d#{i}" for i in range(7)]
    texts = [f"text number {i}" for i in range(7)]
    bm25 = BM25Index(tokenizer="auto")
    bm25.add(ids, texts)
    dense = DenseIndex()
    dense.add(ids, np.random.default_rng(2).normal(size=(7, 6)))
    write_snapshot(tmp_path / "s.snap", "state", bm25, dense)
    loaded = read_snapshot(tmp_path / "s.snap", "state")
    assert loaded is not None
    restored = loaded[1]
    assert restored.has_hubs()  # read, not recomputed
    assert restored.hubs() == pytest.approx(dense.hubs())
    restored.add(["d#late"], np.random.default_rng(4).normal(size=(1, 6)))  # and kept up to date from there
    assert restored.hubs() == pytest.approx(hubness.hub_scores(restored.matrix()), abs=1e-5)


def test_a_snapshot_that_does_not_fit_is_recomputed_not_trusted():
    ids = [f"d#{i}" for i in range(4)]
    matrix = _unit(np.random.default_rng(5).normal(size=(4, 3)))
    wrong_rows = np.full((4, hubness.HUB_NEIGHBOURS), 9, dtype=np.int64)  # rows that do not exist
    dense = DenseIndex.from_matrix(ids, matrix, normalized=True,
                                   neighbours=(np.zeros((4, hubness.HUB_NEIGHBOURS), np.float32), wrong_rows))
    assert not dense.has_hubs()
    assert dense.hubs() == pytest.approx(hubness.hub_scores(matrix), abs=1e-6)


def _world():
    """Five chunks of one theme close together (the hub: t#0 sits in their middle) and one focused chunk.

    For the question, the hub t#0 has the best cosine, the focused chunk f#0 the second best;
    BM25 finds nothing (no shared words), so the dense order alone decides.
    """
    theme = np.array([1.0, 0.0, 0.0, 0.0])
    rows = {"t#0": theme + [0, 0.05, 0, 0], "t#1": theme + [0, 0.3, 0.1, 0], "t#2": theme + [0, 0.1, 0.3, 0],
            "t#3": theme + [0, -0.2, 0.2, 0], "t#4": theme + [0, 0.2, -0.2, 0],
            "f#0": np.array([0.8, 0.0, 0.0, 0.6])}
    ids = list(rows)
    dense = DenseIndex()
    dense.add(ids, np.stack([rows[i] for i in ids]))
    bm25 = BM25Index(tokenizer="auto")
    bm25.add(ids, [f"filler {i}" for i in range(len(ids))])
    chunks = {cid: Chunk(cid, f"filler {n}", {"source": cid.split("#")[0]}) for n, cid in enumerate(ids)}
    query = _unit(np.array([[0.95, 0.0, 0.0, 0.31]]))[0]
    return chunks, bm25, dense, query


def test_auto_ranks_the_focused_chunk_above_the_hub_and_the_knob_switches_it_off():
    chunks, bm25, dense, query = _world()
    raw = [i for i, _ in dense.search(query, 6)]
    assert raw[:2] == ["t#0", "f#0"]

    def first(settings):
        hits = search("unrelated words", query, 6, "auto", bm25=bm25, dense=dense, chunks=chunks, settings=settings)
        return hits

    hits = first(SearchSettings(neighbour_weight=0.0))
    assert hits[0].chunk.id == "f#0"
    cosines = dict(dense.search(query, 6))
    assert all(h.details["vector"] == pytest.approx(cosines[h.chunk.id]) for h in hits)  # raw cosines reported
    off = first(SearchSettings(neighbour_weight=0.0, hub_weight=0.0))
    assert off[0].chunk.id == "t#0"
    # knn is plain cosine: no discount
    knn = search("unrelated words", query, 2, "knn", bm25=bm25, dense=dense, chunks=chunks)
    assert [h.chunk.id for h in knn] == ["t#0", "f#0"]


def test_a_chinese_question_keeps_the_plain_cosine_order():
    chunks, bm25, dense, query = _world()
    settings = SearchSettings(neighbour_weight=0.0, embedder_reads_cjk=True)
    hits = search("泵的密封为什么失效", query, 6, "auto", bm25=bm25, dense=dense, chunks=chunks, settings=settings,
                  dense_reads=True)
    assert hits[0].chunk.id == "t#0"


def test_the_dense_first_keeps_its_place_when_bm25_also_ranks_it_high():
    """The hub t#0 is the dense side's first and BM25's second: both retrievers agree, so no discount moves it."""
    chunks, bm25, dense, query = _world()
    bm25.add(["f#0", "t#0"], ["pump seal seal", "pump seal"])  # BM25: f#0 first, t#0 second
    hits = search("pump seal", query, 6, "auto", bm25=bm25, dense=dense, chunks=chunks,
                  settings=SearchSettings(neighbour_weight=0.0))
    assert [h.chunk.id for h in hits[:2]] == ["t#0", "f#0"]
    # BM25 ranks the hub below its first five: discounted as before
    far = [(f"x{i}", 9.0 - i) for i in range(hubness.AGREE_DEPTH)] + [("t#0", 1.0)]
    lookup = dense.hub_scores
    assert hubness.discount(dense.search(query, 6), lookup, 0.5, far)[0][0] == "f#0"
    assert hubness.discount(dense.search(query, 6), lookup, 0.5, far[-2:])[0][0] == "t#0"
