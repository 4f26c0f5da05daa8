"""One contract every vector_store backend passes: memory, faiss, chroma, qdrant, pgvector.

pgvector runs against a real PostgreSQL + pgvector started from the ``pgserver``
package and is marked ``integration``; the others run in-process by default.
"""

from __future__ import annotations

import asyncio
import math
import shutil
import tempfile
import uuid
from pathlib import Path

import numpy as np
import pytest

from akasha.stores.base import BaseStore
from akasha.types import Chunk

DIM = 8


def unit(i: int, dim: int = DIM) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    return v


def chunk(doc: str, n: int, text: str | None = None, **meta: object) -> Chunk:
    return Chunk(id=f"{doc}#{n}", text=text or f"{doc} chunk {n}", metadata={"chunk_index": n, **meta})


async def _wait(awaitable):
    return await awaitable


def run(awaitable):
    """Await ``awaitable`` (a coroutine, or the awaitable count a store returns) in a fresh event loop."""
    return asyncio.run(_wait(awaitable))


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="session")
def pg_uri():
    pgserver = pytest.importorskip("pgserver")
    folder = tempfile.mkdtemp(prefix="akasha-pg-")
    server = pgserver.get_server(folder, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def _make(kind: str, tmp_path: Path, request) -> BaseStore:
    if kind == "memory":
        from akasha.stores.memory import MemoryStore

        return MemoryStore()
    if kind == "faiss":
        from akasha.stores.faiss import FaissStore

        return FaissStore(DIM)
    if kind == "chroma-memory":
        from akasha.stores.chroma import ChromaStore

        return ChromaStore(collection=f"t{uuid.uuid4().hex[:12]}")
    if kind == "chroma-persist":
        from akasha.stores.chroma import ChromaStore

        return ChromaStore(collection="contract", persist_directory=str(tmp_path / "chroma"))
    if kind == "qdrant":
        from akasha.stores.qdrant import QdrantStore

        return QdrantStore(DIM, collection="contract", url=":memory:")
    if kind == "pgvector":
        from akasha.stores.pgvector import PgVectorStore

        uri = request.getfixturevalue("pg_uri")
        return PgVectorStore(DIM, table=f"t_{uuid.uuid4().hex[:12]}", dsn=uri)
    raise AssertionError(kind)


BACKENDS = [
    "memory",
    "faiss",
    "chroma-memory",
    "chroma-persist",
    "qdrant",
    pytest.param("pgvector", marks=pytest.mark.integration),
]


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    s = _make(request.param, tmp_path, request)
    yield s
    run(s.aclose())


# ------------------------------------------------------------------ contract
def seed(store) -> None:
    chunks = [chunk("a", 0, lang="en"), chunk("a", 1, lang="de"), chunk("b", 0, lang="en")]
    run(store.replace(["a", "b"], chunks, np.stack([unit(0), unit(1), unit(2)])))


def test_empty_store_finds_nothing(store):
    assert run(store.count()) == 0
    assert run(store.search(unit(0), 5)) == []
    assert run(store.get(["x#0"])) == []


def test_scores_are_cosine_best_first(store):
    seed(store)
    query = unit(0) * 3.0 + unit(1) * 1.0  # not unit length: the store must normalise
    hits = run(store.search(query, 3))
    assert [c.id for c, _ in hits] == ["a#0", "a#1", "b#0"]
    expected = [3 / math.sqrt(10), 1 / math.sqrt(10), 0.0]
    for (_, score), want in zip(hits, expected, strict=True):
        assert score == pytest.approx(want, abs=1e-4)
    # an opposite vector has cosine -1 on every backend
    hits = run(store.search(-unit(2), 1, {"doc_id": "b"}))
    assert hits[0][1] == pytest.approx(-1.0, abs=1e-4)


def test_k_limits_and_exceeds(store):
    seed(store)
    assert len(run(store.search(unit(0), 1))) == 1
    assert len(run(store.search(unit(0), 50))) == 3


def test_get_round_trips_text_and_metadata(store):
    c = Chunk("doc#0", "héllo wörld", {"chunk_index": 0, "nested": {"a": [1, 2]}, "page": 3, "ok": True,
                                       "doc_id": "doc"})
    run(store.replace(["doc"], [c], unit(4)[None, :]))
    (got,) = run(store.get(["doc#0", "missing#0"]))
    assert got.id == "doc#0" and got.text == "héllo wörld"
    assert got.metadata == c.metadata


def test_replace_drops_previous_version(store):
    seed(store)
    run(store.replace(["a"], [chunk("a", 0, text="new a")], unit(5)[None, :]))
    assert run(store.count()) == 2
    assert run(store.get(["a#1"])) == []
    assert run(store.get(["a#0"]))[0].text == "new a"
    hits = run(store.search(unit(1), 5))
    assert "a#1" not in [c.id for c, _ in hits]


def test_replace_with_no_chunks_removes_the_document(store):
    seed(store)
    run(store.replace(["a"], [], np.zeros((0, DIM), dtype=np.float32)))
    assert run(store.count()) == 1
    assert [c.id for c, _ in run(store.search(unit(0), 5))] == ["b#0"]


def test_delete(store):
    seed(store)
    assert run(store.delete(["a"])) == 2
    assert run(store.delete(["nope"])) == 0
    assert run(store.count()) == 1


def test_filters_on_metadata_and_doc_id(store):
    seed(store)
    assert {c.id for c, _ in run(store.search(unit(0), 5, {"lang": "en"}))} == {"a#0", "b#0"}
    assert {c.id for c, _ in run(store.search(unit(0), 5, {"doc_id": "a"}))} == {"a#0", "a#1"}
    assert {c.id for c, _ in run(store.search(unit(0), 5, {"doc_id": "a", "lang": "de"}))} == {"a#1"}
    assert run(store.search(unit(0), 5, {"lang": "fr"})) == []
    # a value that looks like SQL stays a value
    assert run(store.search(unit(0), 5, {"lang": "en' OR '1'='1"})) == []


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(lambda: np.stack([unit(6), unit(7)]), id="row-count"),
        pytest.param(lambda: np.ones((1, DIM + 3), dtype=np.float32), id="dimension"),
        pytest.param(lambda: np.full((1, DIM), np.nan, dtype=np.float32), id="nan"),
    ],
)
def test_failed_reingest_keeps_old_version(store, bad):
    seed(store)
    with pytest.raises(ValueError):
        run(store.replace(["a", "b"], [chunk("a", 0, text="broken")], bad()))
    assert run(store.count()) == 3
    assert run(store.get(["a#0"]))[0].text == "a chunk 0"
    assert [c.id for c, _ in run(store.search(unit(1), 1))] == ["a#1"]


def test_chunks_must_belong_to_replaced_documents(store):
    with pytest.raises(ValueError, match="do not belong"):
        run(store.replace(["a"], [chunk("b", 0)], unit(0)[None, :]))
    assert run(store.count()) == 0


def test_failing_write_during_replace_keeps_old_version(store, monkeypatch):
    """The backend fails while writing the new version (server gone, disk full): the old version stays whole.

    replace() writes the new records first and removes the stale ones only after that succeeded.
    """
    seed(store)

    def broken(chunks, matrix):
        raise ConnectionError("the store went away mid-write")

    monkeypatch.setattr(store, "_upsert", broken)
    with pytest.raises(ConnectionError):
        run(store.replace(["a"], [chunk("a", 0, text="new a")], unit(5)[None, :]))
    monkeypatch.undo()
    assert run(store.count()) == 3
    assert [c.text for c in run(store.get(["a#0", "a#1"]))] == ["a chunk 0", "a chunk 1"]


# ------------------------------------------------------------- per backend
def test_qdrant_point_ids_are_uuid5_of_chunk_id():
    from akasha.stores.qdrant import QdrantStore, point_id

    store = QdrantStore(DIM, collection="ids", url=":memory:")
    run(store.replace(["a"], [chunk("a", 0)], unit(0)[None, :]))
    points = store.client.retrieve("ids", ids=[str(uuid.uuid5(uuid.NAMESPACE_URL, "a#0"))], with_payload=True)
    assert len(points) == 1 and points[0].payload["chunk_id"] == "a#0"
    assert point_id("a#0") == str(uuid.uuid5(uuid.NAMESPACE_URL, "a#0"))
    info = store.client.get_collection("ids")
    assert str(info.config.params.vectors.distance).lower().endswith("cosine")


def test_chroma_collection_uses_cosine_space(tmp_path):
    from akasha.stores.chroma import ChromaStore

    store = ChromaStore(collection="space", persist_directory=str(tmp_path))
    assert store.collection.metadata.get("hnsw:space") == "cosine"
    run(store.replace(["a"], [chunk("a", 0)], unit(0)[None, :]))
    # persisted: a second client on the same folder sees the chunk
    again = ChromaStore(collection="space", persist_directory=str(tmp_path))
    assert run(again.count()) == 1


def test_faiss_uses_inner_product_over_normalised_vectors():
    import faiss

    from akasha.stores.faiss import FaissStore

    store = FaissStore(DIM)
    assert isinstance(faiss.downcast_index(store._index.index), faiss.IndexFlatIP)
    run(store.replace(["a"], [chunk("a", 0)], (unit(0) * 7)[None, :]))
    stored = store._index.index.reconstruct(0)
    assert np.linalg.norm(stored) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.integration
def test_pgvector_rolls_back_a_failed_write(pg_uri, monkeypatch):
    """PostgreSQL rejects a row half way through the COPY: the transaction keeps the old rows, adds none."""
    import akasha.stores.pgvector as pgvector

    store = pgvector.PgVectorStore(DIM, table="rollback_check", dsn=pg_uri)
    run(store.replace(["a"], [chunk("a", 0, text="old"), chunk("a", 1, text="old too")], np.stack([unit(0), unit(1)])))
    real = pgvector._metadata_json
    monkeypatch.setattr(pgvector, "_metadata_json", lambda meta: "{not json" if meta.get("chunk_index") == 1 else real(meta))
    with pytest.raises(Exception, match="(?i)json"):
        run(store.replace(["a"], [chunk("a", 0, text="new"), chunk("a", 1, text="new too")], np.stack([unit(2), unit(3)])))
    monkeypatch.undo()
    assert [c.text for c in run(store.get(["a#0", "a#1"]))] == ["old", "old too"]
    store.close()


@pytest.mark.integration
def test_pgvector_creates_extension_table_and_indexes(pg_uri):
    import psycopg

    from akasha.stores.pgvector import PgVectorStore

    store = PgVectorStore(DIM, table="made_here", dsn=pg_uri)
    run(store.replace(["a"], [chunk("a", 0)], unit(0)[None, :]))
    assert len(run(store.search(unit(0), 1))) == 1  # the first search builds the HNSW index
    with psycopg.connect(pg_uri) as conn:
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone()[0] == 1
        indexes = [r[0] for r in conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'made_here'")]
    assert any("(doc_id)" in d for d in indexes)
    assert any("hnsw" in d and "vector_cosine_ops" in d for d in indexes)
    store.close()


@pytest.mark.integration
def test_pgvector_from_a_spec_with_connection_keys(pg_uri):
    """The YAML route: connection keys (here the server's unix-socket folder), sync twins, async use."""
    from urllib.parse import parse_qs, urlsplit

    from akasha.spec import build, load_spec
    from tests.spec_fixtures import CORPUS, body

    socket_dir = parse_qs(urlsplit(pg_uri).query)["host"][0]
    spec = body(vector_store={"backend": "pgvector", "collection": "spec_docs",
                              "connection": {"host": socket_dir, "database": "postgres", "user": "postgres",
                                             "password": ""}},
                retrieval={"pattern": "hybrid"})
    pipeline = build(load_spec(spec))
    assert pipeline.ingest_sync(CORPUS) == 4
    assert pipeline.ingest_sync(CORPUS[:1]) == 1  # re-ingest replaces, never duplicates
    assert run(pipeline.store.count()) == 4  # (a different event loop: the store reconnects)
    hits = pipeline.query_sync("radiator coolant", k=2, filters={"topic": "maintenance"}).hits
    assert hits[0].chunk.id == "coolant#0" and hits[0].source == "bm25+vector"
    assert all(h.chunk.metadata["topic"] == "maintenance" for h in hits)
    pipeline.close()


def test_user_metadata_named_doc_id_is_just_data(store):
    c = Chunk("real#0", "text", {"chunk_index": 0, "doc_id": "something-else"})
    run(store.replace(["real"], [c], unit(0)[None, :]))
    run(store.replace(["real"], [Chunk("real#0", "v2", {"chunk_index": 0, "doc_id": "x"})], unit(1)[None, :]))
    assert run(store.count()) == 1
    assert run(store.get(["real#0"]))[0].metadata["doc_id"] == "x"
    assert run(store.delete(["real"])) == 1
