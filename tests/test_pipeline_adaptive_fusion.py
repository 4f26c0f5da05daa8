"""A YAML hybrid pattern with ``fusion: adaptive`` ranks exactly as the facade's ``auto`` search type."""

from __future__ import annotations

import pytest

from akasha.assemble import spec_conflicts
from akasha.errors import ConfigError, SpecError
from akasha.spec import build, load_spec
from tests.spec_fixtures import body

DOCS = [
    {"id": f"d{i:02d}", "text": f"common words document number {i} about topic{i % 3}. " * (1 + i % 4)
     + ("The pump seal failed and was replaced." if i in (4, 17) else "")}
    for i in range(30)
]


def make(**retrieval):
    return build(load_spec(body(retrieval={"pattern": "hybrid", "candidates": 50, "top_k": 10, **retrieval},
                                chunking={"chunk_size": 60, "overlap": 0})))


@pytest.mark.parametrize("spelling", [{"fusion": "adaptive"}, {"hybrid": {"fusion": "adaptive"}}])
def test_adaptive_hybrid_ranks_like_auto(spelling):
    pipeline = make(**spelling)
    pipeline.ingest_sync(DOCS)
    for question in ("why did the pump seal fail?", "topic2 document", "泵的密封为什么失效？"):
        result = pipeline.query_sync(question, k=10)
        auto = pipeline.index.search(question, k=10, search_type="auto")
        assert [h.chunk.id for h in result.hits] == [h.chunk.id for h in auto]
        assert [h.score for h in result.hits] == pytest.approx([h.score for h in auto])
        assert [e for e in result.trace if e["stage"] == "fuse"][0]["name"] == "adaptive"
        assert all("rrf" in h.details for h in result.hits)


def test_neighbour_smoothing_follows_the_index_settings():
    smoothed = make(fusion="adaptive")
    smoothed.ingest_sync(DOCS)
    plain = make(fusion="adaptive")
    plain.ingest_sync(DOCS)
    plain.index.search_settings.neighbour_weight = 0.0
    question = "why did the pump seal fail?"
    with_smoothing = smoothed.query_sync(question, k=10).hits
    without = plain.query_sync(question, k=10).hits
    assert [h.score for h in with_smoothing] != pytest.approx([h.score for h in without])
    assert [h.chunk.id for h in without] == [h.chunk.id for h in plain.index.search(question, k=10, search_type="auto")]


def test_plain_rrf_stays_the_default_and_unknown_fusions_list_adaptive():
    assert make().pattern.fusion == "rrf"
    assert make(fusion="adaptive").pattern.fusion == "adaptive"
    with pytest.raises(SpecError, match="adaptive"):
        make(fusion="max")


def test_an_adaptive_spec_agrees_with_search_type_auto_only():
    spec = load_spec(body(retrieval={"pattern": "hybrid", "fusion": "adaptive"}))
    spec_conflicts(spec, {"search_type": "auto"})
    with pytest.raises(ConfigError, match="conflicts"):
        spec_conflicts(spec, {"search_type": "knn"})
