"""Every store answers searches in its own engine, through both doors (issue 31).

Qdrant (qdrant-client's local mode, the same Query API as a server), a Chroma folder and
faiss (the in-memory store lives beside the index's own in-process engine, which searches
for it): a query worker built on the store as it is (a new index
with no local cache) answers the facade's ``rag.search(None, q)`` and a YAML pipeline's
``query`` without ever reading the whole store, puts the one chunk holding a rare term
first, and refuses another embedder's vectors. PostgreSQL has the same checks against a
real server in tests/test_server_query.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from servers_fixtures import chroma_server  # noqa: F401

import akasha
from akasha.embeddings.hash import HashEmbedder
from akasha.errors import IndexMismatchError

TEXTS = {f"notes/note{i}.md": f"Maintenance note {i}: check the pump, the seal and the valve every week." for i in range(30)}
TEXTS["codes.md"] = "Fault code E4711 means the pump ran dry; reset the controller after refilling it."
TEXTS["coolant.md"] = "Coolant must be changed every five years with the blue long-life coolant."


def make_store(kind: str, tmp_path: Path) -> Any:
    if kind == "qdrant":
        pytest.importorskip("qdrant_client")
        from akasha.stores.qdrant import QdrantStore

        return QdrantStore(collection="doors", url=None, path=tmp_path / "qdrant")
    if kind == "chroma":
        pytest.importorskip("chromadb")
        from akasha.stores.chroma import ChromaStore

        return ChromaStore("doors", path=tmp_path / "chroma")
    if kind == "faiss":
        pytest.importorskip("faiss")
        from akasha.stores.faiss import FaissStore

        return FaissStore()
    from akasha.stores.memory import MemoryStore

    return MemoryStore()


def write_docs(folder: Path) -> Path:
    for name, text in TEXTS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def refuse_whole_reads(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: Any, **_kw: Any) -> Any:
        raise AssertionError("a search read the whole store")

    monkeypatch.setattr(store, "_scan", refuse)
    monkeypatch.setattr(store, "scan", refuse)


@pytest.mark.parametrize("kind", ["qdrant", "chroma", "faiss"])
def test_the_facade_searches_in_the_store(kind, tmp_path, monkeypatch, request):
    store = make_store(kind, tmp_path)
    request.addfinalizer(store.close)  # an unclosed Qdrant client fails in its __del__ at interpreter exit
    assert {"dense", "lexical"} <= set(store.capabilities)
    docs = write_docs(tmp_path / "docs")
    writer = akasha.RAG(embeddings=HashEmbedder(), model="extractive", cache_dir=str(tmp_path / "writer"),
                        vector_store=store)
    writer.index(str(docs))
    rows = store.count()
    # a second checkout of the same folder writes the same rows
    second = akasha.RAG(embeddings=HashEmbedder(), model="extractive", cache_dir=str(tmp_path / "second"),
                        vector_store=store)
    assert second.index(str(write_docs(tmp_path / "elsewhere" / "docs"))).embedded == 0
    assert store.count() == rows
    refuse_whole_reads(store, monkeypatch)
    worker = akasha.RAG(embeddings=HashEmbedder(), model="extractive", cache_dir=":memory:", vector_store=store)
    hits = worker.search(None, "E4711", k=3)
    assert hits[0].chunk.metadata["source"] == "codes.md" and "bm25" in hits[0].details
    assert worker.search(None, "blue long-life coolant", k=3, search_type="knn")[0].path == "coolant.md"
    assert worker.search(None, "coolant five years", k=3, search_type="bm25")[0].path == "coolant.md"
    answer = worker(None, "What does fault code E4711 mean?")
    assert "ran dry" in answer


@pytest.mark.parametrize("kind", ["qdrant", "chroma", "faiss"])
def test_a_yaml_pipeline_searches_in_the_store(kind, tmp_path, monkeypatch, request):
    from akasha import registry
    from akasha.spec import build

    store = make_store(kind, tmp_path)
    request.addfinalizer(store.close)
    name = f"doors-{kind}-{id(store)}"
    registry.register("index", name, lambda config, context: store)
    spec = {"apiVersion": "astromesh/v1", "kind": "RAGPipeline", "metadata": {"name": "doors"},
            "spec": {"embeddings": {"provider": "hash"}, "vector_store": {"backend": name},
                     "retrieval": {"pattern": "hybrid", "top_k": 3}}}
    pipeline = build(spec, cache_dir=str(tmp_path / "yaml"))
    pipeline.ingest_sync([{"id": name, "text": text} for name, text in TEXTS.items()])
    pipeline.close() if hasattr(pipeline, "close") else None
    refuse_whole_reads(store, monkeypatch)
    fresh = build(spec, cache_dir=str(tmp_path / "fresh"))
    result = fresh.query_sync("E4711", k=3)
    assert result.hits[0].chunk.id == "codes.md#0"


@pytest.mark.parametrize("kind", ["qdrant", "memory"])
def test_another_function_under_the_same_name_is_refused(kind, tmp_path, request):
    from akasha.embeddings.wrappers import CallableEmbedder

    store = make_store(kind, tmp_path)
    request.addfinalizer(store.close)
    docs = write_docs(tmp_path / "docs")

    def embed(texts):  # noqa: ANN001
        return np.asarray([[1.0, float(len(t)), 0.5, 0.1] for t in texts])

    akasha.RAG(embeddings=CallableEmbedder(embed), model="extractive", cache_dir=":memory:",
               vector_store=store).index(str(docs))

    def embed(texts):  # noqa: ANN001, F811 - the same name, other vectors
        return np.asarray([[float(len(t)), -1.0, 0.25, 0.3] for t in texts])

    with pytest.raises(IndexMismatchError, match="holds vectors of"):
        akasha.RAG(embeddings=CallableEmbedder(embed), model="extractive", cache_dir=":memory:",
                   vector_store=store).search(None, "pump")


@pytest.mark.integration
def test_a_chroma_server_answers_both_doors(chroma_server, tmp_path, monkeypatch):  # noqa: F811
    """`chroma run` behind a URL: the facade's query worker and a YAML pipeline search in Chroma, never
    reading the whole collection."""
    from akasha.spec import build
    from akasha.stores.chroma import ChromaStore

    def refuse(*_args: Any, **_kw: Any) -> Any:
        raise AssertionError("a search read the whole collection")

    url = chroma_server.url("doors-server")
    docs = write_docs(tmp_path / "docs")
    writer = akasha.RAG(embeddings=HashEmbedder(), model="extractive", cache_dir=str(tmp_path / "w"), vector_store=url)
    writer.index(str(docs))
    writer.close()
    monkeypatch.setattr(ChromaStore, "_scan", refuse)
    worker = akasha.RAG(embeddings=HashEmbedder(), model="extractive", cache_dir=":memory:", vector_store=url)
    assert worker.search(None, "E4711", k=3)[0].path == "codes.md"
    host, port = url.split("://")[1].split("/")[0].split(":")
    spec = {"apiVersion": "astromesh/v1", "kind": "RAGPipeline", "metadata": {"name": "doors"},
            "spec": {"embeddings": {"provider": "hash"},
                     "vector_store": {"backend": "chroma", "host": host, "port": int(port),
                                      "collection": "doors-yaml"},
                     "retrieval": {"pattern": "hybrid", "top_k": 3}}}
    build(spec, cache_dir=str(tmp_path / "y1")).ingest_sync([{"id": n, "text": t} for n, t in TEXTS.items()])
    assert build(spec, cache_dir=str(tmp_path / "y2")).query_sync("E4711", k=3).hits[0].chunk.id == "codes.md#0"
