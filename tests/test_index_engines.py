"""Both search engines of an index (in process, a store's) read its current embedder and settings at every search.

``bench.ablation`` replaces ``index.search_settings`` (``dataclasses.replace``) and the embedder between runs;
an engine that kept the objects it was built with would rank every variant alike.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from akasha.embeddings.hash import HashEmbedder
from akasha.index import CorpusIndex
from akasha.stores.memory import MemoryStore
from akasha.types import Document

DOCS = [Document(f"topic {i} is explained here, with the river stone {i}.", {}, id=f"d{i}") for i in range(6)]


class Asked(HashEmbedder):
    """The hash embedder, keeping the questions it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.questions: list[str] = []

    def embed_query(self, text):
        self.questions.append(text)
        return super().embed_query(text)


class Answering(MemoryStore):
    """A memory store whose engine answers both sides (as faiss's does), keeping the requests."""

    capabilities = frozenset({"dense", "lexical"})

    def __init__(self) -> None:
        super().__init__()
        self.requests: list = []

    def query(self, request):
        self.requests.append(request)
        return super().query(request)


def test_the_in_process_engine_reads_the_current_settings_and_embedder(tmp_path: Path):
    with CorpusIndex(HashEmbedder(), cache_dir=tmp_path) as index:
        index.add_documents(DOCS)
        index.search_settings = replace(index.search_settings, embedder_reads_cjk=False)
        assert index.dense_reads("下雨天出门要带什么？") is False  # told, not probed
        index.embedder = asked = Asked()
        index.search("river stone 3", k=2, search_type="knn")
        index.vector_search("river stone 4", 2)
    assert asked.questions == ["river stone 3", "river stone 4"]


def test_the_stores_engine_reads_the_current_settings_and_embedder(tmp_path: Path):
    store = Answering()
    with CorpusIndex(HashEmbedder(), cache_dir=tmp_path, store=store) as index:
        index.add_documents(DOCS)
        assert index.searches_store
        index.search_settings = replace(index.search_settings, candidates=70, adaptive_k=7, adaptive_weights=(0.2, 0.8))
        index.embedder = asked = Asked()
        index.search("river stone 3", k=2, search_type="auto")
    request = store.requests[-1]
    assert (request.pool, request.rrf_k, request.weights) == (70, 7, (0.2, 0.8))
    assert asked.questions == ["river stone 3"]
