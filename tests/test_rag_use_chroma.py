"""``use_chroma=True``: search Chroma folders whoever wrote them, and never write into a documents folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("chromadb")

import akasha  # noqa: E402
from akasha.embeddings.hash import HashEmbedder  # noqa: E402
from akasha.errors import AkashaError  # noqa: E402
from servers_fixtures import chroma_server  # noqa: E402, F401

TEXTS = {
    "brakes.md": "Brake pads are replaced below 3 mm of lining.",
    "coolant.md": "Coolant is changed every five years with the blue long-life kind.",
    "tyres.md": "Tyre pressure is checked monthly: 2.4 bar front, 2.6 bar rear.",
}


def plain_client(folder: Path):
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))


def write_foreign_collection(folder: Path, *, langchain: bool) -> None:
    """A collection as plain chromadb (or LangChain's Chroma) writes it: documents, metadatas, embeddings."""
    embedder = HashEmbedder()
    client = plain_client(folder)
    collection = client.create_collection("langchain" if langchain else "notes")
    names = list(TEXTS)
    metadatas = [{"source": f"/shared/{n}"} if langchain else {"file": n} for n in names]
    collection.add(ids=[f"id-{i}" for i in range(len(names))], documents=[TEXTS[n] for n in names],
                   metadatas=metadatas, embeddings=np.asarray(embedder.embed_documents(list(TEXTS.values()))))


@pytest.mark.parametrize("langchain", [False, True])
def test_use_chroma_searches_a_collection_written_without_akasha(tmp_path, langchain):
    folder = tmp_path / "chroma"
    write_foreign_collection(folder, langchain=langchain)
    rag = akasha.RAG(model="extractive", embeddings=HashEmbedder(), use_chroma=True, cache_dir=":memory:")
    hits = rag.search(folder, "brake pads lining", k=1)
    assert hits[0].text == TEXTS["brakes.md"]
    if langchain:
        assert hits[0].path == "/shared/brakes.md"  # LangChain's source metadata is the citation
    answer = rag(folder, "When are brake pads replaced?")
    assert "3 mm" in answer


def test_use_chroma_on_a_documents_folder_is_refused_and_writes_nothing(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in TEXTS.items():
        (docs / name).write_text(text, encoding="utf-8")
    before = sorted(p.name for p in docs.iterdir())
    rag = akasha.RAG(model="extractive", embeddings=HashEmbedder(), use_chroma=True, cache_dir=":memory:")
    with pytest.raises(AkashaError, match="not a Chroma folder"):
        rag(docs, "brake pads?")
    assert sorted(p.name for p in docs.iterdir()) == before  # no chroma.sqlite3 appeared


@pytest.mark.integration
def test_use_chroma_searches_a_collection_on_a_server_without_creating_one(chroma_server):  # noqa: F811
    import chromadb

    embedder = HashEmbedder()
    client = chromadb.HttpClient(host="127.0.0.1", port=chroma_server.port)
    collection = client.create_collection("plain-notes")
    collection.add(ids=["a", "b", "c"], documents=list(TEXTS.values()),
                   metadatas=[{"source": name} for name in TEXTS],
                   embeddings=np.asarray(embedder.embed_documents(list(TEXTS.values()))))
    rag = akasha.RAG(model="extractive", embeddings=HashEmbedder(), use_chroma=True, cache_dir=":memory:")
    hits = rag.search(chroma_server.url("plain-notes"), "tyre pressure bar", k=1)
    assert hits[0].path == "tyres.md"
    with pytest.raises(AkashaError, match="no Chroma collection 'missing-notes'"):
        rag.search(chroma_server.url("missing-notes"), "tyre pressure", k=1)
    names = [c if isinstance(c, str) else c.name for c in client.list_collections()]
    assert "missing-notes" not in names
