"""A document's own metadata keys that akasha also writes (content_hash, chunk_id, source ...) keep the
document's values; akasha's go under ``akasha:<key>`` and its caching never reads the document's."""

from __future__ import annotations

import hashlib

import pytest

from akasha.index import CorpusIndex
from akasha.spec import build, load_spec
from akasha.types import Document
from tests.spec_fixtures import CountingEmbedder, body

MINE = {"content_hash": "x", "chunk_id": "mine", "source": "https://wiki.example/pump", "topic": "pumps"}


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def counting(register_embedder):
    return register_embedder("own-keys-test", CountingEmbedder())


def test_yaml_ingest_keeps_the_documents_values_and_still_re_embeds_an_edit(counting):
    pipeline = build(load_spec(body(embeddings={"provider": "own-keys-test"}, retrieval={"pattern": "hybrid"})))
    text = "The pump seal failed because the suction valve was closed."
    pipeline.ingest_sync([{"id": "pump", "text": text, "metadata": MINE}])
    hit = pipeline.query_sync("pump seal", k=1).hits[0]
    meta = hit.chunk.metadata
    assert {k: meta[k] for k in MINE} == MINE  # the document's values, as given
    assert hit.chunk.id == "pump#0" and meta["akasha:chunk_id"] == "pump#0"
    assert meta["akasha:content_hash"] == sha(text) and meta["akasha:source"] == "pump"
    assert meta["chunk_index"] == 0 and meta["strategy"] == "recursive"  # no collision: plain keys
    assert pipeline.query_sync("pump seal", k=1).to_list()[0]["metadata"]["content_hash"] == "x"

    embedded = counting.calls
    pipeline.ingest_sync([{"id": "pump", "text": text, "metadata": MINE}])
    assert counting.calls == embedded  # unchanged: nothing embedded

    edited = "The pump seal failed because the discharge valve was throttled."
    pipeline.ingest_sync([{"id": "pump", "text": edited, "metadata": MINE}])  # same metadata, new text
    assert counting.calls > embedded  # the document's content_hash "x" is not the cache key
    hit = pipeline.query_sync("discharge valve", k=1).hits[0]
    assert hit.chunk.text == edited and hit.chunk.metadata["content_hash"] == "x"
    assert hit.chunk.metadata["akasha:content_hash"] == sha(edited)


def test_index_add_documents_keeps_the_documents_values(counting, tmp_path):
    index = CorpusIndex(counting, cache_dir=tmp_path / "cache")
    index.add_documents([Document("Bearings are greased every 2000 hours.", dict(MINE), id="bearings")])
    hit = index.search("bearings greased", k=1, search_type="bm25")[0]
    assert {k: hit.chunk.metadata[k] for k in MINE} == MINE
    index.close()
    again = CorpusIndex(counting, cache_dir=tmp_path / "cache")  # a restart reads the same metadata back
    calls = counting.calls
    again.add_documents([Document("Bearings are greased every 2000 hours.", dict(MINE), id="bearings")])
    assert counting.calls == calls
    hit = again.search("bearings greased", k=1)[0]
    assert hit.chunk.metadata["chunk_id"] == "mine" and hit.chunk.metadata["akasha:chunk_id"] == "bearings#0"
    again.close()


def test_reserved_prefix_keys_of_a_document_are_dropped_with_a_warning(caplog):
    pipeline = build(load_spec(body()))
    pipeline.ingest_sync([{"id": "a", "text": "alpha beta", "metadata": {"akasha:content_hash": "forged"}}])
    hit = pipeline.query_sync("alpha", k=1).hits[0]
    assert hit.chunk.metadata["content_hash"] == sha("alpha beta") and "akasha:content_hash" not in hit.chunk.metadata
    assert "reserved" in caplog.text
