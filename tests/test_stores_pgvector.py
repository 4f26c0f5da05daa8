"""PostgreSQL + pgvector as a SQL user sees it (a real server from pgserver; integration)."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid

import numpy as np
import pytest
from servers_fixtures import pg_server  # noqa: F401

from akasha.errors import ConfigError, IndexLockError, IndexMismatchError
from akasha.stores.urls import open_store
from akasha.types import Chunk

pytestmark = pytest.mark.integration
DIM = 4
EMBEDDER = "st:all-MiniLM-L6-v2@local"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def rec(doc: str, n: int, text: str, page: int | None = 1, **extra: object) -> Chunk:
    meta = {"source": f"/data/{doc}.pdf", "chunk_index": n, "content_hash": sha(text), "embedder": EMBEDDER,
            "doc_id": doc, **extra}
    if page is not None:
        meta["page"] = page
    return Chunk(f"{doc}#{n}", text, meta)


def table() -> str:
    return f"t_{uuid.uuid4().hex[:10]}"


def sql(server, query: str, params: tuple = ()) -> list[tuple]:
    import psycopg

    with psycopg.connect(server.dsn().split("?")[0]) as conn:
        cursor = conn.execute(query, params)
        return cursor.fetchall() if cursor.description is not None else []


def test_sql_reads_akasha_table_and_its_hnsw_index(pg_server):  # noqa: F811
    name = table()
    store = open_store(pg_server.dsn(table=name))
    store.upsert([rec("report", 0, "Revenue grew.", topic="finance"), rec("report", 1, "Costs fell.", page=None)],
                 np.array([[2, 0, 0, 0], [0, 1, 0, 0]], dtype=np.float32))
    store.save_state("corpus", {"files": {"/data/report.pdf": "h"}})
    rows = sql(pg_server, f"SELECT id, doc_id, text, source, page, chunk_index, content_hash, embedder, "
                          f"metadata, embedding::text FROM {name} ORDER BY id")
    first = rows[0]
    assert first[:8] == ("report#0", "report", "Revenue grew.", "/data/report.pdf", 1, 0, sha("Revenue grew."),
                         EMBEDDER)
    assert first[8]["topic"] == "finance" and first[8]["source"] == "/data/report.pdf"
    assert first[9] == "[1,0,0,0]"  # unit length
    assert rows[1][4] is None  # no page
    indexes = {r[0]: r[1] for r in sql(pg_server, "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s",
                                       (name,))}
    assert "USING hnsw (embedding vector_cosine_ops)" in indexes[f"{name}_hnsw"]
    assert any("(content_hash)" in d for d in indexes.values()) and any("(source)" in d for d in indexes.values())
    assert any("(doc_id)" in d for d in indexes.values())
    assert sql(pg_server, f"SELECT state->'files' FROM {name}_state WHERE key = 'corpus'")[0][0] == {
        "/data/report.pdf": "h"}
    # a SQL user searches the same way akasha does
    nearest = sql(pg_server, f"SELECT id FROM {name} ORDER BY embedding <=> '[0.1,1,0,0]' LIMIT 1")
    assert nearest == [("report#1",)]
    store.close()


def test_other_embedder_or_width_raises_and_other_tables_are_refused(pg_server):  # noqa: F811
    name = table()
    store = open_store(pg_server.dsn(table=name))
    store.upsert([rec("a", 0, "x")], np.ones((1, DIM), dtype=np.float32))
    store.close()
    with pytest.raises(IndexMismatchError, match=f"table '{name}'.*{EMBEDDER}"):
        open_store(pg_server.dsn(table=name), embedder="openai:text-embedding-3-small")
    with pytest.raises(IndexMismatchError, match="4-dimensional"):
        open_store(pg_server.dsn(table=name), dimension=384)
    again = open_store(pg_server.dsn(table=name), embedder=EMBEDDER, dimension=DIM)
    assert again.count() == 1 and again.embedder == EMBEDDER
    again.close()
    sql(pg_server, "CREATE TABLE IF NOT EXISTS someone_elses (id int primary key, name text)")
    with pytest.raises(ConfigError, match="not an akasha chunk table"):
        open_store(pg_server.dsn(table="someone_elses"))


def test_lock_serialises_writers_across_connections(pg_server):  # noqa: F811
    name = table()
    first = open_store(pg_server.dsn(table=name))
    second = open_store(pg_server.dsn(table=name))
    held = threading.Event()
    release = threading.Event()

    def hold():
        with first.lock(timeout=5):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(10)
    started = time.perf_counter()
    with pytest.raises(IndexLockError, match="another writer"):
        with second.lock(timeout=0.5):
            pass
    assert time.perf_counter() - started >= 0.5
    release.set()
    thread.join(10)
    with second.lock(timeout=5):  # free again
        pass
    first.close()
    second.close()


def test_a_waiting_writer_proceeds_once_the_first_releases(pg_server):  # noqa: F811
    """Writers on two machines are serialised: the second waits for the advisory lock, then writes."""
    url = pg_server.dsn(table=table())
    first, second = open_store(url), open_store(url)
    order: list[str] = []
    with first.lock(timeout=5):

        def wait_then_write() -> None:
            with second.lock(timeout=10):
                order.append("second")

        thread = threading.Thread(target=wait_then_write)
        thread.start()
        time.sleep(0.4)
        order.append("first")
    thread.join(10)
    assert order == ["first", "second"]
    first.close()
    second.close()


def test_wrong_password_is_refused_at_once_and_redacted(pg_server, monkeypatch):  # noqa: F811
    from sleeps import record_sleeps

    from akasha.errors import ServerAuthError
    from akasha.retry import Retry

    slept = record_sleeps(monkeypatch)
    with pytest.raises(ServerAuthError) as info:
        open_store(pg_server.dsn(password="not-the-password"), retry=Retry(attempts=5, base=1.0))
    assert not [s for s in slept if s >= 1.0]  # no backoff for a refused login (Retry's base is 1 s)
    message = str(info.value)
    assert "not-the-password" not in message and "postgres:***@" in message and "PGPASSWORD" in message


def test_table_of_the_previous_yaml_store_is_upgraded_in_place(pg_server):  # noqa: F811
    name = table()
    sql(pg_server, f"CREATE TABLE {name} (id text PRIMARY KEY, doc_id text NOT NULL, content text NOT NULL, "
                   f"metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb, embedding vector({DIM}) NOT NULL)")
    sql(pg_server, f"INSERT INTO {name} VALUES ('d#0', 'd', 'old text', "
                   "'{\"source\": \"d.txt\", \"page\": 2, \"chunk_index\": 0, \"topic\": \"x\"}', '[1,0,0,0]')")
    store = open_store(pg_server.dsn(table=name))
    (chunk,) = store.fetch(["d#0"])
    assert chunk.text == "old text" and chunk.metadata["topic"] == "x"
    assert sql(pg_server, f"SELECT source, page, chunk_index FROM {name}") == [("d.txt", 2, 0)]
    assert store.nearest(np.array([1, 0, 0, 0]), 1, {"topic": "x"})[0][0].id == "d#0"
    store.close()


def test_nul_characters_are_stored_as_replacement_characters(pg_server):  # noqa: F811
    store = open_store(pg_server.dsn(table=table()))
    store.upsert([rec("n", 0, "a\x00b", note="c\x00d")], np.ones((1, DIM), dtype=np.float32))
    (chunk,) = store.fetch(["n#0"])
    assert chunk.text == "a\ufffdb" and chunk.metadata["note"] == "c\ufffdd"
    store.close()


def test_filtered_search_finds_matches_beyond_the_hnsw_candidates(pg_server):  # noqa: F811
    """With 2,000 rows and one match far from the query, a filtered search still finds it."""
    name = table()
    store = open_store(pg_server.dsn(table=name), ef_search=40)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(2000, DIM)).astype(np.float32)
    vectors[:, 0] = np.abs(vectors[:, 0]) + 3  # everything near the query ...
    vectors[1999] = [-1, 0, 0, 0]  # ... except the one match
    chunks = [rec(f"d{i}", 0, f"text {i}", kind="rare" if i == 1999 else "common") for i in range(2000)]
    store.upsert(chunks, vectors)
    store.save_state("s", {})  # builds the HNSW index
    hits = store.nearest(np.array([1, 0, 0, 0]), 3, {"kind": "rare"})
    assert [c.id for c, _ in hits] == ["d1999#0"]
    assert hits[0][1] == pytest.approx(-1.0, abs=1e-4)
    store.close()


@pytest.mark.parametrize(("option", "pool", "expected"), [(None, 10, "200"), (None, 50, "400"), (900, 50, "900"),
                                                         (5000, 10, "1000")])
def test_a_query_sets_ef_search_from_the_option_and_the_pool(pg_server, option, pool, expected):  # noqa: F811
    """``ef_search`` (vector_store_options) is the floor of each query's hnsw.ef_search; 8 x pool raises it."""
    from akasha.stores.query import SearchRequest

    store = open_store(pg_server.dsn(table=table()), **({"ef_search": option} if option else {}))
    store.upsert([rec(f"d{i}", 0, f"text {i}") for i in range(3)], np.eye(3, DIM, dtype=np.float32))
    store.save_state("s", {})
    assert store.query(SearchRequest(vector=np.eye(1, DIM, dtype=np.float32)[0], k=1, pool=pool))
    shown = store._run("reading the setting", lambda conn: conn.execute("SHOW hnsw.ef_search").fetchone()[0])  # noqa: SLF001
    assert shown == expected
    store.close()


def test_a_selective_filter_still_gets_k_hits_from_the_hnsw_index(pg_server):  # noqa: F811
    """A filter that few rows match: the engine's query (and nearest) keep scanning, not stop at ef_search rows."""
    from akasha.stores.query import SearchRequest

    store = open_store(pg_server.dsn(table=table()))
    rng = np.random.default_rng(7)
    chunks = [rec(f"d{i}", 0, f"note {i}", corpus="rare" if i % 200 == 0 else "common") for i in range(4000)]
    store.upsert(chunks, rng.normal(size=(len(chunks), DIM)).astype(np.float32))
    store.ensure_ann_index()
    query = rng.normal(size=DIM).astype(np.float32)
    hits = store.query(SearchRequest(vector=query, k=10, pool=10, filters={"corpus": "rare"}, weights=(1.0, 0.0)))
    assert len(hits) == 10 and all(h.chunk.metadata["corpus"] == "rare" for h in hits)
    assert len(store.nearest(query, 10, {"corpus": "rare"})) == 10
    store.close()


def test_a_compound_counts_in_sql_only_where_it_singles_out_one_row(pg_server):  # noqa: F811
    """tokenize.counts_in_query in the lexical CTE: ``list.sort`` (two rows) adds nothing, ``os.popen`` (one) does."""
    from test_stores_query import check_compounds_count_where_they_single_out_one_chunk

    store = open_store(pg_server.dsn(table=table()))
    try:
        check_compounds_count_where_they_single_out_one_chunk(store, lambda i, text: rec("c", i, text))
    finally:
        store.close()
