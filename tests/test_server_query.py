"""Search where the data lives: a server store answers hybrid queries in its own engine (issue 31).

PostgreSQL + pgvector (pgserver, started by the session fixture): a query worker
(``RAG(vector_store=url)`` then ``rag.search(None, q)`` / ``rag(None, q)``) needs no
files and no local copy, never reads the whole table, and finds the right chunk for a
unique-token query and for a dense query; two checkouts of one folder write one set of
rows; the facade and a YAML pipeline share the table; bad options and empty stores
give clear errors.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from maintenance_topics import TOPICS as BASE_TOPICS
from servers_fixtures import pg_server  # noqa: F401

import akasha
from akasha.embeddings.hash import HashEmbedder
from akasha.errors import ConfigError, EmptyStoreError, IndexMismatchError
from akasha.stores.pgvector import PgVectorStore

pytestmark = pytest.mark.integration

TOPICS = {
    **BASE_TOPICS,
    "notes/errors.txt": "Fault code E4711 means the pump ran dry; reset the controller after refilling.",
}


def write_corpus(folder: Path) -> Path:
    for name, text in TOPICS.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(f"{text} Part {i} of {name}." for i in range(3)), encoding="utf-8")
    for i in range(30):  # more chunks than a worker ever asks for
        (folder / "extra" / f"note{i}.txt").parent.mkdir(parents=True, exist_ok=True)
        (folder / "extra" / f"note{i}.txt").write_text(f"Workshop note {i}: bay {i} keeps the spare parts.")
    return folder


def table_url(server: Any) -> str:
    return server.dsn(table=f"q{uuid.uuid4().hex[:10]}")


def rows(server: Any, sql: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(server.dsn().split("?")[0], autocommit=True) as conn:
        cursor = conn.execute(sql)
        return cursor.fetchall() if cursor.description else []


class RowCounter:
    """Counts the rows each store call brings into this process, and refuses whole-table reads."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.largest = 0
        original = PgVectorStore._run

        def counting(store: PgVectorStore, what: str, fn: Any) -> Any:
            result = original(store, what, fn)
            if isinstance(result, (list, dict)):
                self.largest = max(self.largest, len(result))
            return result

        def refuse(*_args: Any, **_kw: Any) -> Any:
            raise AssertionError("a query worker read the whole table")

        monkeypatch.setattr(PgVectorStore, "_run", counting)
        monkeypatch.setattr(PgVectorStore, "_scan", refuse)


@pytest.fixture
def indexed(tmp_path, pg_server):  # noqa: F811
    """A table indexed once from a folder by a writer with its own cache; the folder is then deleted."""
    url = table_url(pg_server)
    docs = write_corpus(tmp_path / "docs")
    writer = akasha.RAG(embeddings=HashEmbedder(), model="extractive", cache_dir=str(tmp_path / "writer"),
                        vector_store=url, chunk_size=200, chunk_overlap=0)
    report = writer.index(str(docs))
    writer.close()
    shutil.rmtree(docs)
    return url, report


def worker(url: str, **options: Any) -> akasha.RAG:
    """A fresh query process's RAG: no files, nothing cached on disk."""
    return akasha.RAG(embeddings=HashEmbedder(), model="extractive", cache_dir=":memory:", vector_store=url,
                      chunk_size=200, chunk_overlap=0, **options)


def test_a_worker_answers_from_the_store_without_reading_the_table(indexed, monkeypatch):
    url, report = indexed
    counter = RowCounter(monkeypatch)
    rag = worker(url)
    hits = rag.search(None, "E4711", k=3)
    assert hits[0].chunk.metadata["source"] == "notes/errors.txt"  # the unique token's chunk first, portable
    assert hits[0].details.get("bm25") is not None and "rrf" in hits[0].details
    dense = rag.search(None, "coolant blue long-life radiator", k=3, search_type="knn")
    assert dense[0].chunk.metadata["source"] == "coolant.md"
    lexical = rag.search(None, "tyre pressure bar", k=3, search_type="bm25")
    assert lexical[0].chunk.metadata["source"] == "tyres.txt"
    answer = rag(None, "What does fault code E4711 mean?")
    assert "dry" in answer and rag.docs[0].chunk.metadata["source"] == "notes/errors.txt"
    assert 0 < counter.largest <= rag.options.k < report.chunks  # never more rows than asked for


def test_an_empty_store_names_data_source_and_the_store(pg_server, tmp_path):  # noqa: F811
    url = table_url(pg_server)
    rag = worker(url)
    with pytest.raises(EmptyStoreError, match="data_source") as caught:
        rag.search(None, "anything")
    assert url.split("?table=")[1] in str(caught.value) and "secret" not in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_two_checkouts_of_one_folder_write_one_set_of_rows(pg_server, tmp_path):  # noqa: F811
    url = table_url(pg_server)
    table = url.split("?table=")[1]
    counts = []
    for checkout in ("checkout-a", "checkout-b"):
        docs = write_corpus(tmp_path / checkout / "docs")
        rag = akasha.RAG(embeddings=HashEmbedder(), model="extractive", cache_dir=str(tmp_path / checkout / "cache"),
                         vector_store=url, chunk_size=200, chunk_overlap=0)
        report = rag.index(str(docs))
        rag.close()
        counts.append((report.chunks, report.embedded, rows(pg_server, f"SELECT count(*) FROM {table}")[0][0]))
    (chunks_a, embedded_a, rows_a), (chunks_b, embedded_b, rows_b) = counts
    assert rows_a == rows_b == chunks_a == chunks_b and embedded_b == 0
    sources = {r[0] for r in rows(pg_server, f"SELECT DISTINCT source FROM {table}")}
    assert sources == set(TOPICS) | {f"extra/note{i}.txt" for i in range(30)}  # no machine path in the store


def test_named_corpora_share_a_store_and_a_worker_can_pick_one(pg_server, tmp_path):  # noqa: F811
    url = table_url(pg_server)
    write_corpus(tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "filters.md").write_text("Handbook B: the oil filter is changed with every service.")
    for name in ("a", "b"):
        rag = akasha.RAG(embeddings=HashEmbedder(), model="extractive", cache_dir=str(tmp_path / f"cache-{name}"),
                         vector_store=url, vector_store_options={"corpus": f"handbook-{name}"})
        rag.index(str(tmp_path / name))
        rag.close()
    only_b = worker(url, vector_store_options={"corpus": "handbook-b"}).search(None, "filter", k=5)
    assert only_b and {h.chunk.metadata["source"] for h in only_b} == {"handbook-b/filters.md"}
    everything = worker(url).search(None, "filter", k=10)
    assert {h.chunk.metadata["source"] for h in everything} >= {"handbook-a/filters.md", "handbook-b/filters.md"}


def test_vector_store_options_are_checked_by_name(pg_server):  # noqa: F811
    url = table_url(pg_server)
    assert worker(url, vector_store_options={"ef_search": 400, "corpus": "x"}).options.vector_store_options
    with pytest.raises(ConfigError, match="'colour'.*known: corpus"):
        worker(url, vector_store_options={"colour": "blue"})
    with pytest.raises(ConfigError, match="server_knn is gone"):
        worker(url, vector_store_options={"server_knn": True})
    with pytest.raises(ConfigError, match="ef_search"):
        worker(url, vector_store_options={"ef_search": 0})
    with pytest.raises(ConfigError, match="corpus"):
        worker(url, vector_store_options={"corpus": "../etc"})


def test_a_yaml_pipeline_queries_the_table_the_facade_wrote(indexed, monkeypatch, tmp_path):
    url, _report = indexed
    dsn, table = url.split("?table=")
    spec = {
        "apiVersion": "astromesh/v1", "kind": "RAGPipeline", "metadata": {"name": "worker"},
        "spec": {
            "embeddings": {"provider": "hash"},
            "chunking": {"strategy": "recursive", "chunk_size": 200, "overlap": 0},
            "vector_store": {"backend": "pgvector", "dsn": dsn, "collection": table},
            "retrieval": {"pattern": "hybrid", "top_k": 3},
        },
    }
    counter = RowCounter(monkeypatch)
    from akasha.spec import build

    pipeline = build(spec, cache_dir=str(tmp_path / "yaml-cache"))
    result = pipeline.query_sync("E4711", k=3)
    assert result.hits and result.hits[0].chunk.metadata["source"] == "notes/errors.txt"
    assert counter.largest <= 50


def test_another_embedder_is_refused_by_name(indexed):
    url, _report = indexed

    def embed(texts):  # noqa: ANN001 - the hash embedder's name, other vectors
        return np.ones((len(texts), 64), dtype=np.float32)

    from akasha.embeddings.wrappers import CallableEmbedder

    impostor = CallableEmbedder(embed, name="hash")
    with pytest.raises(IndexMismatchError, match="holds vectors of 'hash'"):
        akasha.RAG(embeddings=impostor, model="extractive", cache_dir=":memory:", vector_store=url).search(None, "x")


def test_the_sql_fusion_is_the_python_fusion(indexed):
    """PostgreSQL fuses in its engine exactly as akasha.stores.query.fuse_sides does on the two candidate lists."""
    from akasha.stores.query import SearchRequest, fuse_sides, lexical_tokenizer
    from akasha.stores.urls import open_store

    url, _report = indexed
    store = open_store(url)
    embedder = HashEmbedder()
    tokenize = lexical_tokenizer(store.lexical_tokenizer)
    for question in ("E4711 pump", "warranty defects purchase", "spare parts bay 7", "coolant radiator blue"):
        vector = embedder.embed_query(question)
        tokens = tuple(tokenize(question))
        hybrid = store.query(SearchRequest(vector=vector, tokens=tokens, k=10, pool=20, rrf_k=10, weights=(0.6, 0.4)))
        dense = store.query(SearchRequest(vector=vector, k=20, pool=20))
        lexical = store.query(SearchRequest(tokens=tokens, k=20, pool=20))
        # the first lexical chunk leads when it alone holds a term: a term one row matches
        alone = any([h.chunk.id for h in store.query(SearchRequest(tokens=(token,), k=2, pool=2))] == [lexical[0].id]
                    for token in tokens) if lexical else False
        mine = fuse_sides([(h.chunk, h.score) for h in dense], [(h.chunk, h.score) for h in lexical],
                          SearchRequest(vector=vector, tokens=tokens, k=10, pool=20, rrf_k=10, weights=(0.6, 0.4)),
                          lexical[0].id if alone else None)
        assert [h.id for h in hybrid] == [h.id for h in mine], question
        np.testing.assert_allclose([h.score for h in hybrid], [h.score for h in mine], rtol=1e-9)
    store.close()


def test_a_moved_embeddings_server_reuses_the_stores_vectors(pg_server, tmp_path):  # noqa: F811
    """The same model behind another port: a worker embeds only the probe texts and its questions."""
    from servers.base import serve
    from servers.openai_server import OpenAIApp

    from akasha.embeddings.identity import PROBE_TEXTS

    url = table_url(pg_server)
    docs = write_corpus(tmp_path / "docs")
    with serve(OpenAIApp()) as first:
        writer = akasha.RAG(embeddings=f"openai:nomic-embed@{first.url}/v1", model="extractive",
                            cache_dir=str(tmp_path / "writer"), vector_store=url, chunk_size=200, chunk_overlap=0)
        assert writer.index(str(docs)).embedded > 0
        writer.close()
    with serve(OpenAIApp()) as moved:
        rag = akasha.RAG(embeddings=f"openai:nomic-embed@{moved.url}/v1", model="extractive", cache_dir=":memory:",
                         vector_store=url, chunk_size=200, chunk_overlap=0)
        hits = rag.search(None, "Fault code E4711", k=3)
        # the code is in the three chunks of errors.txt (no chunk alone holds it, so no exact-match rule), and
        # this server's vectors are hashes: a dense-only note may rank first, the file must be there
        assert "notes/errors.txt" in [hit.chunk.metadata["source"] for hit in hits]
        sent = [t for r in moved.app.requests if "/embeddings" in r.path for t in r.body["input"]]
        assert sorted(sent) == sorted([*PROBE_TEXTS, "Fault code E4711"])


def test_an_unreachable_or_foreign_store_is_a_clear_error(pg_server, tmp_path):  # noqa: F811
    from akasha.errors import ServerUnavailableError
    from akasha.retry import Retry

    dead = "postgresql://postgres:pw@127.0.0.1:1/postgres?table=docs"
    with pytest.raises(ServerUnavailableError, match="127.0.0.1:1") as caught:
        worker(dead, vector_store_options={"retry": Retry(attempts=1), "connect_timeout": 1}).search(None, "x")
    assert "pw@" not in str(caught.value)
    rows(pg_server, "CREATE TABLE IF NOT EXISTS inventory (id int PRIMARY KEY, item text)")
    with pytest.raises(ConfigError, match="not an akasha chunk table"):
        worker(pg_server.dsn(table="inventory")).search(None, "x")
    assert rows(pg_server, "SELECT count(*) FROM inventory")[0][0] == 0  # nothing touched


def test_a_yaml_corpus_name_keeps_two_pipelines_apart(pg_server, tmp_path):  # noqa: F811
    from akasha.spec import build

    dsn, table = table_url(pg_server).split("?table=")

    def pipeline(corpus: str):
        return build({"apiVersion": "astromesh/v1", "kind": "RAGPipeline", "metadata": {"name": corpus},
                      "spec": {"embeddings": {"provider": "hash"},
                               "vector_store": {"backend": "pgvector", "dsn": dsn, "collection": table,
                                                "corpus": corpus},
                               "retrieval": {"pattern": "hybrid", "top_k": 3}}},
                     cache_dir=str(tmp_path / corpus))

    first, second = pipeline("first"), pipeline("second")
    first.ingest_sync([{"id": "a", "text": "valve V-17 leaks oil"}])
    second.ingest_sync([{"id": "a", "text": "valve V-17 was replaced"}])
    assert [h.chunk.id for h in first.query_sync("valve V-17").hits] == ["first/a#0"]
    assert [h.chunk.text for h in second.query_sync("valve V-17").hits] == ["valve V-17 was replaced"]
    assert first.delete_sync(["a"]) == 1
    assert rows(pg_server, f"SELECT id FROM {table}") == [("second/a#0",)]


def test_a_worker_asked_for_mmr_says_what_it_can_do(indexed):
    url, _report = indexed
    with pytest.raises(ConfigError, match="auto, hybrid, knn, bm25"):
        worker(url).search(None, "coolant", search_type="mmr")
