"""The Chroma-backed store against a real chromadb PersistentClient in a temp folder."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("chromadb")

from akasha.embeddings.hash import HashEmbedder  # noqa: E402
from akasha.errors import IndexMismatchError, SourceNotFoundError  # noqa: E402
from akasha.index import CorpusIndex, open_chroma_index  # noqa: E402


def write_corpus(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, topic in enumerate(["volcanoes", "glaciers", "deserts", "rainforests"]):
        (folder / f"{topic}.txt").write_text(
            "\n\n".join(f"Fact {n} about {topic}: {topic} are studied by geographers, note {n}." for n in range(4)))


def chroma_collection(cache: Path):
    """The collection as a plain chromadb client sees it (no akasha code involved)."""
    import chromadb

    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(cache / "chroma"), settings=Settings(anonymized_telemetry=False))
    (collection,) = [c for c in client.list_collections() if not (c if isinstance(c, str) else c.name).endswith("state")]
    return client.get_collection(collection if isinstance(collection, str) else collection.name)


def test_chroma_store_mirrors_the_corpus_with_model_metadata(tmp_path):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_corpus(docs)
    index = CorpusIndex(HashEmbedder(), chunk_size=120, chunk_overlap=0, cache_dir=cache, store="chroma")
    report = index.sync(docs)
    collection = chroma_collection(cache)
    meta = collection.metadata
    assert meta["embedding_model"] == "hash"
    assert collection.configuration_json["hnsw"]["space"] == "cosine"
    sample = collection.get(limit=3, include=["documents", "metadatas"])
    assert all(doc for doc in sample["documents"])  # the chunk text is the record's document
    assert {m["source"] for m in sample["metadatas"]} <= {p.name for p in docs.iterdir()}
    assert all(m["embedder"] == "hash" and len(m["content_hash"]) == 64 for m in sample["metadatas"])
    assert collection.count() == report.chunks == len(index.chunks)
    (docs / "deserts.txt").unlink()
    index.sync(docs)
    stored = chroma_collection(cache).get(include=["metadatas"])
    assert len(stored["ids"]) == len(index.chunks)
    assert not any(m["source"].endswith("deserts.txt") for m in stored["metadatas"])
    assert index.search("glaciers", k=1)[0].path.endswith("glaciers.txt")


def test_open_chroma_index_searches_and_refuses_other_models(tmp_path):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_corpus(docs)
    CorpusIndex(HashEmbedder(), chunk_size=120, chunk_overlap=0, cache_dir=cache, store="chroma").sync(docs)
    opened = open_chroma_index(cache / "chroma", HashEmbedder())
    assert len(opened) == len(opened.chunks) > 0
    for kind in ("auto", "knn", "bm25", "mmr", "hybrid"):
        hits = opened.search("volcanoes geographers", k=2, search_type=kind)
        assert hits[0].path.endswith("volcanoes.txt"), kind
    with pytest.raises(IndexMismatchError, match="hash"):
        open_chroma_index(cache / "chroma", HashEmbedder(128))
    with pytest.raises(SourceNotFoundError, match="missing"):
        open_chroma_index(tmp_path / "missing", HashEmbedder())


def test_memory_chroma_store(tmp_path):
    docs = tmp_path / "docs"
    write_corpus(docs)
    index = CorpusIndex(HashEmbedder(), chunk_size=120, cache_dir=":memory:", store="chroma")
    index.sync(docs)
    assert index._link.store.count() == len(index.chunks)
