"""PostgreSQL + pgvector specifics: tables, HNSW index, advisory lock, auth, exact vector round trip."""

from __future__ import annotations

import threading
import time
import uuid

import numpy as np
import pytest
from servers_fixtures import pg_server  # noqa: F401

from akasha.errors import IndexLockError, IndexMismatchError
from akasha.index.backends import Retry, ServerAuthError
from akasha.index.servers import open_backend

pytestmark = pytest.mark.integration


def table() -> str:
    return f"p{uuid.uuid4().hex[:10]}"


def test_wrong_password_is_refused_at_once_and_redacted(pg_server):  # noqa: F811
    started = time.perf_counter()
    with pytest.raises(ServerAuthError) as info:
        open_backend(pg_server.dsn(password="not-the-password"), retry=Retry(attempts=5, base=1.0))
    assert time.perf_counter() - started < 5
    message = str(info.value)
    assert "not-the-password" not in message and "postgres:***@" in message and "PGPASSWORD" in message


def test_tables_hnsw_index_and_metadata_columns(pg_server):  # noqa: F811
    import psycopg

    name = table()
    backend = open_backend(pg_server.dsn(table=name))
    backend.store_parsed("a" * 64, "recursive-v1:100:0", [(0, "t1", "hello", {"page": 3, "file_type": ".pdf"})])
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((50, 16)).astype(np.float32)
    hashes = [f"h{i}" for i in range(50)]
    backend.store_vectors("hf:mini", hashes, vectors)
    assert backend.knn("hf:mini", vectors[7], 1)[0][0] == "h7"  # exact before the first commit
    backend.store_corpus("src", "ns", "state", {"/x.pdf": "a" * 64}, None)
    loaded = backend.load_vectors("hf:mini", hashes)
    assert all(np.array_equal(loaded[h], v) for h, v in zip(hashes, vectors))  # binary format: bit-exact
    dsn = pg_server.dsn(table=name).split("?")[0]
    with psycopg.connect(dsn) as conn:
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE %s",
                                             (name + "%",))}
        assert {f"{name}_parsed", f"{name}_chunks", f"{name}_models", f"{name}_corpora"} <= tables
        index = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname LIKE %s",
                             (f"{name}_vec_%_hnsw",)).fetchone()[0]
        assert "hnsw" in index and "vector_cosine_ops" in index
        page = conn.execute(f"SELECT metadata->>'page' FROM {name}_chunks WHERE text_hash = 't1'").fetchone()[0]
        assert page == "3"
    hits = backend.knn("hf:mini", vectors[7], 3)
    assert hits[0][0] == "h7" and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(IndexMismatchError, match="16-dimensional"):
        backend.store_vectors("hf:mini", ["z"], np.zeros((1, 8), np.float32))


def test_writers_on_two_machines_are_serialised(pg_server):  # noqa: F811
    url = pg_server.dsn(table=table())
    first, second = open_backend(url), open_backend(url)
    order: list[str] = []
    with first.write_lock(timeout=5):
        with pytest.raises(IndexLockError, match="another machine is writing"):
            with second.write_lock(timeout=0.3):
                pass

        def wait_then_write() -> None:
            with second.write_lock(timeout=10):
                order.append("second")

        thread = threading.Thread(target=wait_then_write)
        thread.start()
        time.sleep(0.4)
        order.append("first")
    thread.join(10)
    assert order == ["first", "second"]
