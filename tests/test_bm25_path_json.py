"""retrieval.bm25_path is "a JSON file for the BM25 index, loaded at build time if it exists and rewritten
after every ingestion" (ragpipeline-yaml.md): restart, facade, bad files, and the earlier release's folder."""

from __future__ import annotations

import json
import os

import pytest

import akasha
import akasha.index.bm25_file as bm25_file
from akasha.errors import ConfigError
from akasha.spec import build, load_spec
from tests.spec_fixtures import CORPUS, CountingEmbedder, body

QUESTIONS = ["radiator cap", "air filter interval", "warranty defects", "tyre pressure monthly"]


@pytest.fixture
def counting(register_embedder):
    return register_embedder("bm25-file-test", CountingEmbedder())


def spec(path, **retrieval):
    return load_spec(body(embeddings={"provider": "bm25-file-test"},
                          retrieval={"pattern": "hybrid", "bm25_path": str(path), **retrieval}))


def bm25_hits(pipeline):
    return [[(c.id, round(s, 6)) for c, s in pipeline.index.bm25_search(q, 4)] for q in QUESTIONS]


def test_a_rebuild_loads_the_json_and_ranks_the_same_without_re_ingesting(tmp_path, counting):
    path = tmp_path / "product_docs.bm25.json"
    first = build(spec(path))
    first.ingest_sync(CORPUS[:3])
    first.ingest_sync(CORPUS[3:])  # rewritten after every ingestion
    before = bm25_hits(first)
    first.close()
    body_ = json.loads(path.read_text(encoding="utf-8"))
    assert body_["format"] == "akasha-bm25" and body_["version"] == 1
    assert sorted(body_["documents"]) == ["coolant", "filters", "tyres", "warranty"]
    assert {c["id"] for c in body_["chunks"]} == {"filters#0", "warranty#0", "coolant#0", "tyres#0"}
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left, no folder

    calls = counting.calls
    restarted = build(spec(path))  # a new process: nothing ingested
    assert bm25_hits(restarted) == before
    assert counting.calls == calls  # BM25 needed no vector
    hit = restarted.query_sync("radiator cap", k=1).hits[0]  # hybrid: the vector side comes lazily
    assert hit.chunk.id == "coolant#0" and hit.chunk.metadata["topic"] == "maintenance"

    restarted.delete_sync(["warranty"])  # a deletion rewrites it too
    assert "warranty" not in json.loads(path.read_text(encoding="utf-8"))["documents"]
    assert build(spec(path)).index.bm25_search("warranty defects", 4) == []


def test_the_facade_writes_and_reads_the_same_file(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pump.md").write_text("The pump seal failed because the suction valve was closed.", encoding="utf-8")
    (docs / "bearings.md").write_text("Bearings are greased every 2000 hours.", encoding="utf-8")
    path = tmp_path / "bm25.json"
    yaml = body(retrieval={"pattern": "hybrid", "bm25_path": str(path)})
    rag = akasha.RAG.from_spec(yaml, cache_dir=":memory:")
    rag.index(docs)
    assert path.is_file()
    again = akasha.RAG.from_spec(yaml, cache_dir=":memory:")  # a restart without the folder
    hits = again.search(None, "suction valve", k=1)
    assert hits[0].chunk.metadata["source"] == "pump.md"


@pytest.mark.parametrize("content, why", [
    ("{not json", "not JSON"),
    (json.dumps({"format": "something-else"}), "format"),
    (json.dumps({"format": "akasha-bm25", "version": 99}), "version 99"),
    (json.dumps({"format": "akasha-bm25", "version": 1, "source": "documents", "chunking": "x",
                 "documents": {"a": "k"}, "chunks": [{"id": "b#0", "text": "t"}]}), "'b#0'"),
])
def test_a_damaged_file_is_refused_with_its_name_and_what_to_do(tmp_path, content, why):
    path = tmp_path / "bm25.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=why) as info:
        build(load_spec(body(retrieval={"pattern": "hybrid", "bm25_path": str(path)})))
    assert str(path) in str(info.value) and "ingest the documents again" in str(info.value)


def test_a_file_over_the_size_bound_is_not_read(tmp_path, monkeypatch):
    path = tmp_path / "bm25.json"
    path.write_text(" " * 100, encoding="utf-8")
    monkeypatch.setattr(bm25_file, "MAX_BYTES", 50)
    with pytest.raises(ConfigError, match="over the 50 bytes"):
        build(load_spec(body(retrieval={"pattern": "hybrid", "bm25_path": str(path)})))


def test_chunks_of_other_chunk_settings_are_not_loaded(tmp_path, caplog):
    path = tmp_path / "bm25.json"
    build(load_spec(body(retrieval={"pattern": "hybrid", "bm25_path": str(path)}))).ingest_sync(CORPUS)
    other = build(load_spec(body(retrieval={"pattern": "hybrid", "bm25_path": str(path)},
                                 chunking={"strategy": "fixed", "chunk_size": 40, "overlap": 0})))
    assert other.index.bm25_search("radiator cap", 4) == [] and "other chunk settings" in caplog.text


def test_the_folder_an_earlier_release_kept_is_read_once_and_left_alone(tmp_path, counting, caplog):
    path = tmp_path / "product_docs.bm25.json"
    folder = tmp_path / "product_docs.bm25.index"
    earlier = build(spec(path), cache_dir=folder)  # the earlier release's layout: the index's cache folder
    earlier.ingest_sync(CORPUS)
    before = bm25_hits(earlier)
    earlier.close()
    path.unlink()  # that release wrote no JSON file
    listing = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}

    upgraded = build(spec(path))
    assert bm25_hits(upgraded) == before and path.is_file()
    assert "no longer uses that folder" in caplog.text
    assert {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()} == listing
    caplog.clear()
    build(spec(path))  # once: the JSON file is read from now on
    assert "no longer uses that folder" not in caplog.text
    assert os.path.isdir(folder)
