"""Neighbour smoothing in auto: a chunk next to a well-ranked chunk of its document gains a share of its score."""

from __future__ import annotations

import numpy as np
import pytest

from akasha.retrieval import fusion
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex
from akasha.retrieval.search import SearchSettings, search
from akasha.types import Chunk


def test_chunk_position_follows_the_chunkers_id_shape():
    assert fusion.chunk_position("guide.md#3") == ("guide.md", 3)
    assert fusion.chunk_position("guide.md#0") == ("guide.md", 0)
    assert fusion.chunk_position("notes#v2#10") == ("notes#v2", 10)  # only the last '#' counts
    assert fusion.chunk_position("plain-id") is None
    assert fusion.chunk_position("doc#intro") is None
    assert fusion.chunk_position("doc#") is None
    assert fusion.chunk_position(42) is None


def test_a_neighbour_of_the_leader_overtakes_a_stranger_with_the_same_score():
    fused = [("a#1", 1.0), ("b#7", 0.5), ("a#2", 0.5), ("c#0", 0.2)]
    out = fusion.smooth_neighbours(fused, 0.1)
    assert [item for item, _ in out] == ["a#1", "a#2", "b#7", "c#0"]
    scores = dict(out)
    assert scores["a#2"] == pytest.approx(0.5 + 0.1 * 1.0)
    assert scores["a#1"] == pytest.approx(1.0 + 0.1 * 0.5)  # its best neighbour is a#2
    assert scores["b#7"] == pytest.approx(0.5)  # b#6 and b#8 are not candidates: they count 0
    assert scores["c#0"] == pytest.approx(0.2)


def test_weight_zero_and_empty_lists_change_nothing():
    fused = [("a#1", 1.0), ("b#7", 0.5), ("a#2", 0.5)]
    assert fusion.smooth_neighbours(fused, 0.0) == fused
    assert fusion.smooth_neighbours([], 0.1) == []


def test_ties_keep_the_fused_order_and_other_position_functions_work():
    fused = [("x", 0.5), ("y", 0.5), ("z", 0.5)]
    assert [i for i, _ in fusion.smooth_neighbours(fused, 0.1)] == ["x", "y", "z"]  # no '#n' ids: no neighbours
    places = {"x": ("g", 1), "y": ("h", 2), "z": ("g", 2)}  # x and z are neighbours in group g
    out = fusion.smooth_neighbours(fused, 0.1, position=places.get)
    assert [i for i, _ in out] == ["x", "z", "y"]
    assert dict(out)["z"] == pytest.approx(0.55)


def test_the_first_and_last_chunks_of_a_document_have_one_neighbour():
    fused = [("d#0", 0.3), ("d#1", 0.2), ("e#5", 0.25), ("d#2", 0.1)]
    scores = dict(fusion.smooth_neighbours(fused, 0.5))
    assert scores["d#0"] == pytest.approx(0.3 + 0.5 * 0.2)
    assert scores["d#1"] == pytest.approx(0.2 + 0.5 * 0.3)
    assert scores["d#2"] == pytest.approx(0.1 + 0.5 * 0.2)
    assert scores["e#5"] == pytest.approx(0.25)


def _world():
    """doc a: a#0 answers 'pump' best, a#1 is its continuation; b#0, a lone chunk, ranks just above a#1 in both lists."""
    texts = {
        "a#0": "pump seal failure pump seal replaced",
        "a#1": "the pump was restarted after the repair",
        "b#0": "the pump manual lists spare parts",
    }
    chunks = {cid: Chunk(cid, text, {"source": cid.split("#")[0]}) for cid, text in texts.items()}
    bm25 = BM25Index(tokenizer="bigram")
    bm25.add(list(texts), list(texts.values()))
    dense = DenseIndex()
    dense.add(list(texts), np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.62, 0.0, 0.78]], dtype=np.float32))
    return chunks, bm25, dense


def test_auto_lifts_the_continuation_of_the_best_chunk_and_the_knob_switches_it_off():
    chunks, bm25, dense = _world()
    query_vector = np.array([1.0, 0.0, 0.0], dtype=np.float32)

    def order(settings):
        hits = search("pump", query_vector, 3, "auto", bm25=bm25, dense=dense, chunks=chunks, settings=settings)
        return [h.id for h in hits], hits

    plain, _ = order(SearchSettings(neighbour_weight=0.0))
    smoothed, hits = order(SearchSettings())
    assert SearchSettings().neighbour_weight == fusion.NEIGHBOUR_WEIGHT == 0.1
    assert plain[0] == smoothed[0] == "a#0"
    assert plain.index("b#0") < plain.index("a#1")  # without smoothing the stranger wins the tie-break
    assert smoothed.index("a#1") < smoothed.index("b#0")
    assert hits[0].score == pytest.approx(hits[0].details["rrf"])
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
