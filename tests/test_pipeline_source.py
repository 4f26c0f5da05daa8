"""The facade seam: a YAML pipeline loading a data_source (Pipeline.sync)."""

from __future__ import annotations

import pytest

from akasha.spec import build, load_spec
from tests.spec_fixtures import body


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "a.txt").write_text("The air filter is replaced every 12 months.", encoding="utf-8")
    (tmp_path / "b.md").write_text("# Coolant\n\nCoolant is changed every five years.", encoding="utf-8")
    return tmp_path


def test_sync_skips_unchanged_replaces_edited_and_drops_removed(folder):
    pipeline = build(load_spec(body(retrieval={"pattern": "hybrid"})))
    first = pipeline.sync(folder)
    assert first.indexed == 2 and first.skipped == 0 and first.chunks >= 2
    again = pipeline.sync(folder)
    assert again.unchanged == 2 and again.indexed == 0

    (folder / "a.txt").write_text("The cabin filter is replaced every 2 years.", encoding="utf-8")
    edited = pipeline.sync(folder)
    assert edited.indexed == 1 and edited.unchanged == 1
    texts = [h.chunk.text for h in pipeline.query_sync("filter replaced", k=10).hits]
    assert any("cabin" in t for t in texts) and not any("12 months" in t for t in texts)

    (folder / "b.md").unlink()
    assert pipeline.sync(folder).removed == 1
    hits = pipeline.retrieve(folder, "coolant five years", k=10)
    assert hits and all("Coolant" not in h.chunk.text for h in hits)
    assert all(h.path and h.path.endswith("a.txt") for h in hits)
    pipeline.close()


def test_a_retry_after_an_embedding_failure_really_ingests(folder):
    """Files are marked as indexed only once their vectors committed (the index decides, not the pipeline)."""
    from akasha.errors import StageError

    pipeline = build(load_spec(body(retrieval={"pattern": "hybrid"})))
    embedder = pipeline.embedder
    real = embedder.embed_documents

    def down(texts):
        raise ConnectionError("embedding server down")

    embedder.embed_documents = down
    with pytest.raises(StageError) as info:
        pipeline.sync(folder)
    assert info.value.stage == "index" and isinstance(info.value.cause, ConnectionError)
    embedder.embed_documents = real
    retry = pipeline.sync(folder)
    assert retry.indexed == 2 and retry.unchanged == 0 and retry.embedded >= 2
    assert {h.path.rsplit("/", 1)[-1] for h in pipeline.query_sync("filter coolant", k=10).hits} == {"a.txt", "b.md"}
    pipeline.close()


def test_a_restarted_pipeline_embeds_nothing(folder, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")  # outside the documents folder
    spec = load_spec(body(retrieval={"pattern": "hybrid"}))
    first = build(spec, cache_dir=cache)
    assert first.sync(folder).embedded >= 2
    first.close()
    again = build(spec, cache_dir=cache)
    counts = again.sync(folder)
    assert counts.embedded == 0 and counts.unchanged == 2
    assert again.query_sync("coolant five years", k=1).hits[0].path.endswith("b.md")
    again.close()


def test_derived_copies_share_the_loaded_corpus(folder):
    """derive() (each facade call's pipeline) shares the loaded state: an empty store is asked once, not per call."""
    pipeline = build(load_spec(body()))
    loads = []
    load_store = pipeline.index.load_store
    pipeline.index.load_store = lambda: loads.append(1) or load_store()
    for _ in range(3):
        assert pipeline.derive(top_k=2).query_sync("air filter").hits == []
    assert loads == [1]
    pipeline.derive(top_k=2).sync(folder)
    assert pipeline.query_sync("air filter").hits and loads == [1]
    pipeline.close()
