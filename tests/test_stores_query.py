"""The query verb answered by each store's own engine: ``store.query(SearchRequest(...))`` called directly.

Each backend is asked the same three things: a dense request ranks the nearest
chunk first, a lexical request ranks the one chunk holding a unique token first, and
a hybrid request (both sides fused) still ranks that chunk first. Plus filters, the
pool bound and the lexical side following removals and rewrites.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from servers_fixtures import chroma_server  # noqa: F401

from akasha.stores.query import SearchRequest, lexical_tokenizer
from akasha.types import Chunk

DIM = 8
WORDS = ["river", "stone", "cloud", "forest", "window", "garden", "letter", "bridge"]


def unit(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i % DIM] = 1.0
    return v


def corpus(n: int = 12) -> tuple[list[Chunk], np.ndarray]:
    """``n`` chunks of common words; chunk 5 alone holds "zyxwvut", chunk i's vector is mostly axis i % DIM."""
    chunks, rows = [], []
    for i in range(n):
        words = [WORDS[(i + j) % len(WORDS)] for j in range(6)]
        if i == 5:
            words.insert(2, "zyxwvut")
        doc = "a" if i % 2 == 0 else "b"
        chunks.append(Chunk(f"{doc}#{i}", " ".join(words), {"chunk_index": i, "lang": "en" if i < 8 else "de"}))
        v = unit(i) + 0.05 * (i // DIM + 1) * unit(i + 1)  # distinct: chunk i is nearest to axis i
        rows.append(v / np.linalg.norm(v))
    return chunks, np.stack(rows).astype(np.float32)


def tokens(text: str) -> tuple[str, ...]:
    return tuple(lexical_tokenizer("auto")(text))


def make(kind: str, tmp_path):
    if kind == "memory":
        from akasha.stores.memory import MemoryStore

        return MemoryStore(DIM)
    if kind == "faiss":
        from akasha.stores.faiss import FaissStore

        return FaissStore(DIM)
    if kind == "qdrant":
        from akasha.stores.qdrant import QdrantStore

        return QdrantStore(DIM, collection="q", url=":memory:")
    if kind == "chroma":
        from akasha.stores.chroma import ChromaStore

        return ChromaStore(collection=f"t{uuid.uuid4().hex[:12]}", persist_directory=str(tmp_path / "chroma"))
    raise AssertionError(kind)


#: The stores whose engine answers the lexical side (the memory store leaves it to the index's
#: in-process engine: its ``capabilities`` is empty and only its dense side is checked here).
BACKENDS = ["faiss", "qdrant", "chroma"]


def filled(kind: str, tmp_path):
    """A store of ``kind`` holding the test corpus; closed after the test."""
    s = make(kind, tmp_path)
    chunks, matrix = corpus()
    s.upsert(chunks, matrix)
    yield s
    s.close()


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    yield from filled(request.param, tmp_path)


def ids(hits) -> list[str]:
    return [h.chunk.id for h in hits]


def test_store_answers_the_lexical_side_natively(store):
    assert {"dense", "lexical"} <= set(store.capabilities)
    assert "hybrid" not in store.capabilities  # their two sides are fused by akasha, not in the engine


@pytest.fixture(params=["memory", *BACKENDS])
def any_store(request, tmp_path):
    yield from filled(request.param, tmp_path)


def test_dense_request_ranks_the_nearest_chunk_first(any_store):
    hits = any_store.query(SearchRequest(vector=unit(3), k=3))
    assert ids(hits)[0] == "b#3"
    assert hits[0].source == "vector" and hits[0].details["vector"] == pytest.approx(hits[0].score)


def test_lexical_request_ranks_the_unique_token_first(store):
    hits = store.query(SearchRequest(tokens=tokens("where is zyxwvut"), k=3))
    assert ids(hits)[0] == "b#5"
    assert hits[0].source == "bm25" and hits[0].score > 0


def test_hybrid_request_ranks_the_unique_token_first(store):
    hits = store.query(SearchRequest(vector=unit(0), tokens=tokens("zyxwvut"), k=3, weights=(0.3, 0.7)))
    assert ids(hits)[0] == "b#5"
    assert "bm25" in hits[0].source and hits[0].details["rrf"] == pytest.approx(hits[0].score)
    both = [h for h in hits if h.source == "bm25+vector"]
    assert all("vector" in h.details and "bm25" in h.details for h in both)


def test_hybrid_request_fuses_both_sides(store):
    # b#5 is the lexical side's only match and somewhere in the dense pool; a#0 is the dense side's best.
    hits = store.query(SearchRequest(vector=unit(0), tokens=tokens("zyxwvut"), k=2))
    assert ids(hits) == ["b#5", "a#0"]
    assert [h.source for h in hits] == ["bm25+vector", "vector"]
    assert hits[0].score > hits[1].score


def test_lexical_side_obeys_filters(store):
    hits = store.query(SearchRequest(tokens=tokens("zyxwvut river"), k=10, filters={"lang": "de"}))
    assert hits and all(h.chunk.metadata["lang"] == "de" for h in hits)
    assert "b#5" not in ids(hits)


def test_qdrant_writes_bm25_sparse_vectors_with_idf(tmp_path):
    from akasha.stores.qdrant import (
        LEXICAL_VECTOR,
        QdrantStore,
        term_index,
        term_weights,
    )

    store = QdrantStore(DIM, collection="sparse", path=tmp_path / "q")
    chunks, matrix = corpus()
    store.upsert(chunks, matrix)
    params = store.client.get_collection("sparse").config.params
    assert params.sparse_vectors[LEXICAL_VECTOR].modifier == store._models.Modifier.IDF
    point = store.client.retrieve("sparse", ids=[store._point_ids(["b#5"]).popitem()[0]], with_vectors=True)[0]
    sparse = point.vector[LEXICAL_VECTOR]
    assert term_index("zyxwvut") in sparse.indices
    want_ids, want_values = term_weights(list(tokens(chunks[5].text)))
    assert list(sparse.indices) == want_ids and list(sparse.values) == pytest.approx(want_values)
    store.close()
    reopened = QdrantStore(collection="sparse", path=tmp_path / "q")  # the capability comes back from the collection
    assert "lexical" in reopened.capabilities
    assert ids(reopened.query(SearchRequest(tokens=tokens("zyxwvut"), k=1))) == ["b#5"]
    reopened.close()


def test_qdrant_collection_without_sparse_vector_answers_dense_only():
    from qdrant_client import QdrantClient, models

    from akasha.stores.qdrant import QdrantStore

    client = QdrantClient(location=":memory:")
    client.create_collection("old", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
    store = QdrantStore(DIM, collection="old", client=client)
    chunks, matrix = corpus()
    store.upsert(chunks, matrix)
    assert store.capabilities == frozenset({"dense"})
    assert store.query(SearchRequest(tokens=tokens("zyxwvut"), k=3)) == []
    hits = store.query(SearchRequest(vector=unit(3), tokens=tokens("zyxwvut"), k=3))
    assert ids(hits)[0] == "b#3" and hits[0].source == "vector"


def test_each_side_returns_at_most_k(store):
    hits = store.query(SearchRequest(vector=unit(1), tokens=tokens("river stone"), k=2, pool=4))
    assert len(hits) == 2


def test_lexical_side_follows_removals_and_rewrites(store):
    assert ids(store.query(SearchRequest(tokens=tokens("zyxwvut"), k=3)))[0] == "b#5"
    store.remove(["b#5"])
    assert "b#5" not in ids(store.query(SearchRequest(tokens=tokens("zyxwvut"), k=3)))
    store.upsert([Chunk("a#4", "now the only zyxwvut here", {"chunk_index": 4, "lang": "en"})], unit(4)[None, :])
    hits = store.query(SearchRequest(tokens=tokens("zyxwvut"), k=3))
    assert ids(hits) == ["a#4"]
    assert hits[0].chunk.text == "now the only zyxwvut here"


# ------------------------------------------------------------------ Chroma's bounded fallback
@pytest.fixture
def chroma(tmp_path):
    from akasha.stores.chroma import ChromaStore

    s = ChromaStore(f"t{uuid.uuid4().hex[:12]}", path=tmp_path / "chroma")
    chunks, matrix = corpus()
    s.upsert(chunks, matrix)
    yield s
    s.close()


def test_chroma_lexical_finds_tokens_written_capitalised(chroma):
    chroma.upsert([Chunk("c#0", "The Kestrel hovers. KESTREL again.", {"chunk_index": 0})], unit(2)[None, :])
    hits = chroma.query(SearchRequest(tokens=tokens("kestrel"), k=3))
    assert ids(hits) == ["c#0"]


def test_chroma_lexical_skips_tokens_more_common_than_the_pool(chroma):
    common = tokens("river")  # in 8 of the 12 chunks
    assert chroma.query(SearchRequest(tokens=common, k=3, pool=5)) == []
    assert len(chroma.query(SearchRequest(tokens=common, k=3, pool=20))) == 3
    # the rare token still ranks when the common one is skipped
    assert ids(chroma.query(SearchRequest(tokens=tokens("river zyxwvut"), k=3, pool=5))) == ["b#5"]


def test_chroma_lexical_scores_by_term_frequency_and_rarity(chroma):
    chroma.upsert([Chunk("c#0", "zyxwvut zyxwvut zyxwvut bridge", {"chunk_index": 0})], unit(2)[None, :])
    hits = chroma.query(SearchRequest(tokens=tokens("zyxwvut"), k=3))
    assert ids(hits) == ["c#0", "b#5"] and hits[0].score > hits[1].score > 0


def test_chroma_substring_match_that_is_not_the_token_scores_nothing(chroma):
    chroma.upsert([Chunk("c#0", "two zyxwvutabc here", {"chunk_index": 0})], unit(2)[None, :])
    assert ids(chroma.query(SearchRequest(tokens=tokens("zyxwvut"), k=3))) == ["b#5"]


@pytest.mark.integration
def test_chroma_server_answers_lexical_and_hybrid_requests(chroma_server):  # noqa: F811
    from akasha.stores.chroma import ChromaStore

    store = ChromaStore(f"q{uuid.uuid4().hex[:8]}", host="127.0.0.1", port=chroma_server.port)
    chunks, matrix = corpus()
    store.upsert(chunks, matrix)
    assert ids(store.query(SearchRequest(tokens=tokens("zyxwvut"), k=3)))[0] == "b#5"
    assert ids(store.query(SearchRequest(vector=unit(0), tokens=tokens("zyxwvut"), k=2))) == ["b#5", "a#0"]
    assert ids(store.query(SearchRequest(vector=unit(3), k=1))) == ["b#3"]
    store.close()


def test_in_process_lexical_index_updated_in_place_ranks_as_a_rebuild():
    from akasha.stores.faiss import FaissStore

    store = FaissStore(DIM)
    chunks, matrix = corpus()
    store.upsert(chunks, matrix)
    request = SearchRequest(tokens=tokens("river zyxwvut garden"), k=10)
    store.query(request)  # builds the index
    kept = store._bm25
    store.remove(["a#0", "b#7"])
    store.upsert([Chunk("a#2", "garden garden zyxwvut", {"chunk_index": 2}), Chunk("c#0", "river river", {})],
                 np.stack([unit(2), unit(6)]))
    updated = [(h.chunk.id, h.score) for h in store.query(request)]
    assert store._bm25 is kept  # updated in place, not rebuilt
    store._bm25 = None
    rebuilt = [(h.chunk.id, h.score) for h in store.query(request)]
    assert [i for i, _ in updated] == [i for i, _ in rebuilt]
    assert [s for _, s in updated] == pytest.approx([s for _, s in rebuilt])
    assert {"a#0", "b#7"}.isdisjoint(i for i, _ in updated) and updated[0][0] == "a#2"


def test_the_lexical_side_is_asked_only_where_the_store_says_it_has_one():
    """``lexical_side`` is the one explicit switch of the default query's lexical side (issue 34)."""
    from akasha.stores.base import BaseStore
    from akasha.stores.memory import MemoryStore

    chunks, vectors = corpus()
    store = MemoryStore()
    store.upsert(chunks, vectors)
    request = SearchRequest(tokens=("zyxwvut",), k=3)
    assert store.lexical_side and not store.capabilities  # answers alone; an index searches in-process
    assert [hit.chunk.id for hit in store.query(request)][:1] == ["b#5"]
    store.lexical_side = False
    assert store.query(request) == []
    assert BaseStore.lexical_side is False


def test_every_lexical_side_scores_with_akashas_bm25():
    """The in-process index, Qdrant's sparse weights and Chroma's fallback share one BM25 (issue 34)."""
    from akasha.retrieval.bm25 import K1, B, BM25Index, idf, saturation
    from akasha.stores.query import AVERAGE_TOKENS

    pytest.importorskip("qdrant_client")
    from akasha.stores.qdrant import term_index, term_weights

    indices, values = term_weights(["pump", "pump", "seal"])
    assert dict(zip(indices, values, strict=True)) == pytest.approx(
        {term_index("pump"): saturation(2, 3, AVERAGE_TOKENS), term_index("seal"): saturation(1, 3, AVERAGE_TOKENS)})
    index = BM25Index(tokenizer="bigram")
    index.add(["a", "b", "c"], ["pump pump seal", "seal valve", "valve gasket ring"])
    assert (index.k1, index.b) == (K1, B)
    scores = dict(index.search("pump seal", k=3))
    average = 8 / 3
    assert scores["a"] == pytest.approx(idf(3, 1) * saturation(2, 3, average) + idf(3, 2) * saturation(1, 3, average),
                                        rel=1e-5)
    assert scores["b"] == pytest.approx(idf(3, 2) * saturation(1, 2, average), rel=1e-5)


#: Two notes hold ``list.sort`` (a shared compound), one alone holds ``os.popen`` (a compound that singles it out).
COMPOUND_NOTES = ["Call list.sort to sort a list in place.", "The list.sort method returns None, not the list.",
                  "sorted returns a new list.", "Read the pipe that os.popen opened.", "A list holds items in order."]


def check_compounds_count_where_they_single_out_one_chunk(store, make_chunk=None) -> None:
    """A compound held by several chunks adds nothing to their lexical scores; one held by one chunk raises it.

    (``tokenize.counts_in_query``: the same rule in the in-process BM25, Chroma, Qdrant and PostgreSQL.)
    """
    make_chunk = make_chunk or (lambda i, text: Chunk(f"c#{i}", text, {"chunk_index": i}))
    store.upsert([make_chunk(i, text) for i, text in enumerate(COMPOUND_NOTES)],
                 np.stack([unit(i) for i in range(len(COMPOUND_NOTES))]))

    def scores(asked: tuple[str, ...]) -> dict[str, float]:
        return {h.chunk.id: h.score for h in store.query(SearchRequest(tokens=asked, k=5))}

    shared = tokens("why does list.sort return none")
    assert "list.sort" in shared
    with_it, without = scores(shared), scores(tuple(t for t in shared if t != "list.sort"))
    assert set(with_it) == set(without) and with_it == pytest.approx(without)
    sole = tokens("what did os.popen open")
    with_it, without = scores(sole), scores(tuple(t for t in sole if t != "os.popen"))
    holder = max(with_it, key=with_it.__getitem__)
    assert holder.endswith("#3") and with_it[holder] > without.get(holder, 0.0)


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_compound_counts_only_where_it_singles_out_one_chunk(kind, tmp_path):
    store = make(kind, tmp_path)
    try:
        check_compounds_count_where_they_single_out_one_chunk(store)
    finally:
        store.close()


def test_the_in_process_bm25_counts_a_shared_compound_once_through_its_words():
    from akasha.retrieval.bm25 import BM25Index

    index = BM25Index(tokenizer="bigram")
    index.add([f"c#{i}" for i in range(len(COMPOUND_NOTES))], COMPOUND_NOTES)
    assert dict(index.search("why does list.sort return none", k=5)) == pytest.approx(
        dict(index.search(["why", "does", "list", "sort", "return", "none"], k=5)))
    assert index.search("os.popen", k=5)[0][0] == "c#3"
    assert index.search("os.popen", k=5)[0][1] > index.search(["os", "popen"], k=5)[0][1]
