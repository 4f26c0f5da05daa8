"""The shared index in PostgreSQL + pgvector (``vector_store="postgresql://..."``).

Tables (``<t>`` is the URL's ``table`` option, default ``akasha``), created on
first use in one transaction after ``CREATE EXTENSION IF NOT EXISTS vector``:

``<t>_parsed``   per (file sha256, chunk settings): ok / skipped (+ reason), chunk count;
``<t>_chunks``   per (file sha256, chunk settings, seq): text, its sha256, metadata (jsonb);
``<t>_models``   embedding model -> dimension and the name of its vector table;
``<t>_vec_<h>``  per model: (chunk-text sha256, ``vector(dim)``) with an HNSW index
                 (``vector_cosine_ops``), so two models never mix vectors;
``<t>_corpora``  per (data source, namespace): the committed state and its files.

Every write is one transaction and every row is keyed by content, so a retried
write (after a dropped connection) is harmless. Writers on all machines are
serialised by a session-level advisory lock (:meth:`write_lock`); readers never
wait. Vectors travel in pgvector's binary format (``COPY ... FORMAT BINARY``).
The HNSW index is built at the first corpus commit (building after the bulk
load is several times faster than inserting into the graph row by row) and
maintained by PostgreSQL afterwards; until then ``knn`` is exact.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import struct
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from akasha.errors import IndexLockError, IndexMismatchError, MissingExtraError
from akasha.index.backends.base import LocalStatCache, Retry
from akasha.stores.urls import ServerURL

log = logging.getLogger(__name__)
_BATCH = 5000
_HNSW_MAX_DIM = 2000


class _Vec:
    """A float32 vector on its way to pgvector (picked up by the binary dumper)."""

    __slots__ = ("data",)

    def __init__(self, data: np.ndarray) -> None:
        self.data = data


def _key(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


def _clean(text: str) -> str:
    return text.replace("\x00", "\ufffd")  # PostgreSQL text cannot hold NUL


def _is_auth_error(exc: BaseException) -> bool:
    if getattr(exc, "sqlstate", None) in ("28P01", "28000"):
        return True
    text = str(exc).lower()
    return "authentication failed" in text or "no password supplied" in text or (
        "role" in text and "does not exist" in text)


class PgVectorBackend(LocalStatCache):
    """Manifest method set + ``write_lock`` + ``knn`` over one PostgreSQL database."""

    def __init__(self, spec: ServerURL, *, local: Any = None, retry: Retry | None = None,
                 connect_timeout: float = 5.0, ef_search: int = 200, hnsw_m: int = 16,
                 ef_construction: int = 64) -> None:
        super().__init__(local)
        try:
            import psycopg
        except ImportError:
            raise MissingExtraError("psycopg[binary]", "postgres", "the PostgreSQL shared index") from None
        self._psycopg = psycopg
        self.spec = spec
        self.path = spec.display  # CorpusIndex names its manifest by .path in messages
        self.server = f"the PostgreSQL server {spec.display}"
        self.retry = retry or Retry()
        self.connect_timeout = connect_timeout
        self.ef_search = ef_search
        self.hnsw = (hnsw_m, ef_construction)
        self.t = spec.name
        self._lock = threading.RLock()
        self._conn: Any = None
        self._vector_oid: int | None = None
        self._tables: dict[str, tuple[str, int]] = {}  # model -> (vector table, dim)
        self._pending: list[tuple[str, str, str, str | None, list[tuple[Any, ...]]]] = []
        self._pending_rows = 0
        self._run("creating the akasha tables", self._create_schema)

    # ----------------------------------------------------------- connection
    def _connect(self) -> Any:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        conn = self._psycopg.connect(self.spec.dsn, autocommit=True, connect_timeout=max(1, int(self.connect_timeout)),
                                     application_name="akasha")
        if self._vector_oid is not None:
            self._register_vector(conn, self._vector_oid)
        self._conn = conn
        return conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _run(self, what: str, fn: Any) -> Any:
        psycopg = self._psycopg

        def attempt() -> Any:
            with self._lock:
                try:
                    return fn(self._connect())
                except (psycopg.OperationalError, psycopg.InterfaceError):
                    self._drop()
                    raise

        return self.retry.run(attempt, server=self.server, what=what,
                              transient=(psycopg.OperationalError, psycopg.InterfaceError), auth=_is_auth_error,
                              on_retry=self._drop, hint="Check the user and password in the postgresql:// URL, $PGPASSWORD or ~/.pgpass")

    def _register_vector(self, conn: Any, oid: int) -> None:
        from psycopg.adapt import Dumper, Loader
        from psycopg.pq import Format

        class VecDumper(Dumper):
            format = Format.BINARY

            def dump(self, obj: _Vec) -> bytes:
                data = np.asarray(obj.data, dtype=">f4").reshape(-1)
                return struct.pack(">HH", data.shape[0], 0) + data.tobytes()

        VecDumper.oid = oid

        class VecLoader(Loader):
            format = Format.BINARY

            def load(self, data: Any) -> np.ndarray:
                return np.frombuffer(bytes(data), dtype=">f4", offset=4).astype(np.float32)

        conn.adapters.register_dumper(_Vec, VecDumper)
        conn.adapters.register_loader(oid, VecLoader)

    def _create_schema(self, conn: Any) -> None:
        t = self.t
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(f"akasha-schema:{t}"),))
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(f"""
                CREATE TABLE IF NOT EXISTS {t}_parsed (
                    file_hash text NOT NULL, settings text NOT NULL, status text NOT NULL, reason text,
                    n_chunks integer NOT NULL, PRIMARY KEY (file_hash, settings));
                CREATE TABLE IF NOT EXISTS {t}_chunks (
                    file_hash text NOT NULL, settings text NOT NULL, seq integer NOT NULL,
                    text_hash text NOT NULL, text text NOT NULL, metadata jsonb NOT NULL,
                    PRIMARY KEY (file_hash, settings, seq));
                CREATE TABLE IF NOT EXISTS {t}_models (
                    model text PRIMARY KEY, dim integer NOT NULL, vec_table text NOT NULL);
                CREATE TABLE IF NOT EXISTS {t}_corpora (
                    source_key text NOT NULL, namespace text NOT NULL, state_key text NOT NULL,
                    files jsonb NOT NULL, snapshot text, updated_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (source_key, namespace))""")
        oid = conn.execute("SELECT oid FROM pg_type WHERE typname = 'vector'").fetchone()[0]
        self._vector_oid = int(oid)
        self._register_vector(conn, self._vector_oid)

    # ------------------------------------------------------------ the lock
    @contextlib.contextmanager
    def write_lock(self, timeout: float = 600.0) -> Iterator[None]:
        """Serialise writers on every machine (a session advisory lock on its own connection)."""
        key = _key(f"akasha-writer:{self.t}")

        def connect() -> Any:
            return self._psycopg.connect(self.spec.dsn, autocommit=True, application_name="akasha-lock",
                                         connect_timeout=max(1, int(self.connect_timeout)))

        conn = self.retry.run(connect, server=self.server, what="taking the writer lock",
                              transient=(self._psycopg.OperationalError,), auth=_is_auth_error)
        try:
            deadline = time.monotonic() + timeout
            while not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                if time.monotonic() > deadline:
                    raise IndexLockError(
                        f"another machine is writing the shared index {self.path} (tables {self.t}_*) and held "
                        f"its lock for more than {timeout:g} s; wait for it to finish, or pass a larger lock_timeout")
                time.sleep(0.2)
            yield
        finally:
            with contextlib.suppress(Exception):
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            with contextlib.suppress(Exception):
                conn.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """``with backend.transaction() as conn:`` runs statements in one atomic commit (no retry)."""
        with self._lock:
            conn = self._connect()
            with conn.transaction():
                yield conn

    # -------------------------------------------------------------- chunks
    def parsed_status(self, settings: str) -> dict[str, tuple[str, str | None]]:
        self.flush()
        rows = self._run("reading the parsed-file table", lambda c: c.execute(
            f"SELECT file_hash, status, reason FROM {self.t}_parsed WHERE settings = %s", (settings,)).fetchall())
        return {h: (s, r) for h, s, r in rows}

    def store_parsed(self, file_hash: str, settings: str, chunks: Sequence[tuple[int, str, str, dict[str, Any]]],
                     status: str = "ok", reason: str | None = None) -> None:
        """Buffer one file's chunks; :meth:`flush` writes a batch of files in one transaction.

        Buffered files are written before any read and at commit, so a crash loses
        at most parse work (redone next time), never consistency.
        """
        rows = [(file_hash, settings, int(seq), th, _clean(text),
                 _clean(json.dumps(meta, ensure_ascii=False, default=str))) for seq, th, text, meta in chunks]
        self._pending.append((file_hash, settings, status, reason, rows))
        self._pending_rows += len(rows) + 1
        if self._pending_rows >= 5000:
            self.flush()

    def flush(self) -> None:
        """Write the buffered files: their chunks and parsed rows, in one transaction."""
        if not self._pending:
            return
        pending = self._pending
        t = self.t

        def write(conn: Any) -> None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(f"akasha-parsed:{t}"),))
                conn.execute(f"DELETE FROM {t}_chunks c USING unnest(%s::text[], %s::text[]) AS f(h, s) "
                             "WHERE c.file_hash = f.h AND c.settings = f.s",
                             ([p[0] for p in pending], [p[1] for p in pending]))
                with conn.cursor().copy(f"COPY {t}_chunks (file_hash, settings, seq, text_hash, text, metadata) "
                                        "FROM STDIN") as copy:
                    for *_head, rows in pending:
                        for row in rows:
                            copy.write_row(row)
                conn.cursor().executemany(
                    f"""INSERT INTO {t}_parsed VALUES (%s, %s, %s, %s, %s)
                        ON CONFLICT (file_hash, settings) DO UPDATE SET status = EXCLUDED.status,
                        reason = EXCLUDED.reason, n_chunks = EXCLUDED.n_chunks""",
                    [(h, st, status, reason, len(rows)) for h, st, status, reason, rows in pending])

        self._run(f"storing the chunks of {len(pending)} files", write)
        self._pending, self._pending_rows = [], 0

    def load_chunks(self, file_hash: str, settings: str) -> list[tuple[int, str, str, dict[str, Any]]]:
        return self.load_chunks_many([file_hash], settings)[file_hash]

    def load_chunks_many(self, file_hashes: Sequence[str], settings: str
                         ) -> dict[str, list[tuple[int, str, str, dict[str, Any]]]]:
        """:meth:`load_chunks` for many files, 2,000 files per query."""
        self.flush()
        out: dict[str, list[tuple[int, str, str, dict[str, Any]]]] = {h: [] for h in file_hashes}
        for part in _batches(list(out), 2000):
            rows = self._run("reading chunks", lambda c: c.execute(
                f"SELECT file_hash, seq, text_hash, text, metadata FROM {self.t}_chunks "
                "WHERE settings = %s AND file_hash = ANY(%s) ORDER BY file_hash, seq", (settings, part)).fetchall())
            for h, seq, th, text, meta in rows:
                out[h].append((seq, th, text, meta if isinstance(meta, dict) else json.loads(meta)))
        return out

    # ---------------------------------------------------------- embeddings
    def _table(self, conn: Any, model: str, dim: int | None) -> tuple[str, int] | None:
        """The vector table of ``model`` (created for ``dim`` when given and missing)."""
        if model in self._tables:
            found = self._tables[model]
        else:
            row = conn.execute(f"SELECT vec_table, dim FROM {self.t}_models WHERE model = %s", (model,)).fetchone()
            if row is None and dim is None:
                return None
            if row is None:
                name = f"{self.t}_vec_{hashlib.sha256(model.encode()).hexdigest()[:12]}"
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(f"akasha-schema:{self.t}"),))
                    conn.execute(f"CREATE TABLE IF NOT EXISTS {name} (text_hash text PRIMARY KEY, "
                                 f"embedding vector({int(dim)}) NOT NULL)")
                    conn.execute(f"INSERT INTO {self.t}_models VALUES (%s, %s, %s) ON CONFLICT (model) DO NOTHING",
                                 (model, int(dim), name))
                row = conn.execute(f"SELECT vec_table, dim FROM {self.t}_models WHERE model = %s",
                                   (model,)).fetchone()
            found = (str(row[0]), int(row[1]))
            self._tables[model] = found
        if dim is not None and found[1] != dim:
            raise IndexMismatchError(f"the shared index {self.path} holds {found[1]}-dimensional vectors for "
                                     f"{model!r}, but this embedder made {dim}-dimensional ones; use another table "
                                     "(?table=...) for a different model configuration")
        return found

    def cached_hashes(self, model: str, text_hashes: Sequence[str]) -> set[str]:
        hashes = list(dict.fromkeys(text_hashes))

        def read(conn: Any) -> set[str]:
            table = self._table(conn, model, None)
            if table is None:
                return set()
            found: set[str] = set()
            for part in _batches(hashes, _BATCH):
                found.update(r[0] for r in conn.execute(
                    f"SELECT text_hash FROM {table[0]} WHERE text_hash = ANY(%s)", (part,)).fetchall())
            return found

        return self._run("looking up cached vectors", read)

    def load_vectors(self, model: str, text_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        hashes = list(dict.fromkeys(text_hashes))

        def read(conn: Any) -> dict[str, np.ndarray]:
            table = self._table(conn, model, None)
            if table is None:
                return {}
            out: dict[str, np.ndarray] = {}
            cur = conn.cursor(binary=True)
            for part in _batches(hashes, _BATCH):
                for th, vec in cur.execute(f"SELECT text_hash, embedding FROM {table[0]} WHERE text_hash = ANY(%s)",
                                           (part,)).fetchall():
                    out[th] = vec
            return out

        return self._run("reading vectors", read)

    def store_vectors(self, model: str, text_hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Commit one batch of vectors (content-keyed: an existing row is kept as is)."""
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(text_hashes):
            raise ValueError(f"store_vectors needs one row per hash, got {matrix.shape} for {len(text_hashes)}")
        if not len(text_hashes):
            return

        def write(conn: Any) -> None:
            name, _ = self._table(conn, model, int(matrix.shape[1]))  # type: ignore[misc]
            with conn.transaction():
                conn.execute(f"CREATE TEMP TABLE akasha_stage (LIKE {name}) ON COMMIT DROP")
                with conn.cursor().copy("COPY akasha_stage (text_hash, embedding) FROM STDIN (FORMAT BINARY)") as cp:
                    cp.set_types(["text", self._vector_oid])
                    for th, vec in zip(text_hashes, matrix, strict=True):
                        cp.write_row((th, _Vec(vec)))
                conn.execute(f"INSERT INTO {name} SELECT * FROM akasha_stage ON CONFLICT (text_hash) DO NOTHING")

        self._run(f"storing {len(text_hashes)} vectors", write)

    # ------------------------------------------------------------ corpora
    def corpus(self, source_key: str, namespace: str) -> tuple[str, dict[str, str], str | None] | None:
        row = self._run("reading the corpus state", lambda c: c.execute(
            f"SELECT state_key, files, snapshot FROM {self.t}_corpora WHERE source_key = %s AND namespace = %s",
            (source_key, namespace)).fetchone())
        if row is None:
            return None
        files = row[1] if isinstance(row[1], dict) else json.loads(row[1])
        return row[0], files, row[2]

    def snapshots_in_use(self) -> set[str]:
        rows = self._run("reading the corpus states", lambda c: c.execute(
            f"SELECT snapshot FROM {self.t}_corpora WHERE snapshot IS NOT NULL").fetchall())
        return {r[0] for r in rows}

    def store_corpus(self, source_key: str, namespace: str, state_key: str, files: dict[str, str],
                     snapshot: str | None) -> None:
        """Commit the corpus state (one row, one transaction), then make sure the ANN indexes exist."""
        self.flush()
        payload = _clean(json.dumps(files, ensure_ascii=False))
        self._run("committing the corpus state", lambda c: c.execute(
            f"""INSERT INTO {self.t}_corpora (source_key, namespace, state_key, files, snapshot, updated_at)
                VALUES (%s, %s, %s, %s::jsonb, %s, now()) ON CONFLICT (source_key, namespace) DO UPDATE SET
                state_key = EXCLUDED.state_key, files = EXCLUDED.files, snapshot = EXCLUDED.snapshot,
                updated_at = now()""", (source_key, namespace, state_key, payload, snapshot)))
        self.ensure_ann_indexes()

    def ensure_ann_indexes(self) -> None:
        """Build the HNSW index of every vector table that lacks one (a no-op once built)."""
        m, ef = self.hnsw

        def build(conn: Any) -> None:
            for name, dim in conn.execute(f"SELECT vec_table, dim FROM {self.t}_models").fetchall():
                if dim > _HNSW_MAX_DIM:
                    continue  # pgvector's HNSW stops at 2,000 dimensions: knn stays exact
                exists = conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", (f"{name}_hnsw",)).fetchone()
                if exists:
                    continue
                started = time.perf_counter()
                with conn.transaction():
                    conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
                    conn.execute(f"CREATE INDEX IF NOT EXISTS {name}_hnsw ON {name} USING hnsw "
                                 f"(embedding vector_cosine_ops) WITH (m = {int(m)}, ef_construction = {int(ef)})")
                log.info("built the HNSW index of %s in %.1f s", name, time.perf_counter() - started)

        self._run("building the HNSW index", build)

    # -------------------------------------------------------------- search
    def knn(self, model: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The ``k`` nearest stored vectors of ``model`` by cosine: ``[(text_hash, similarity)]``."""
        query = _Vec(np.asarray(vector, dtype=np.float32).reshape(-1))

        def read(conn: Any) -> list[tuple[str, float]]:
            table = self._table(conn, model, None)
            if table is None:
                return []
            with conn.transaction():
                conn.execute(f"SET LOCAL hnsw.ef_search = {min(1000, max(int(self.ef_search), int(k)))}")
                rows = conn.execute(f"SELECT text_hash, embedding <=> %b AS d FROM {table[0]} "
                                    "ORDER BY embedding <=> %b LIMIT %s", (query, query, int(k))).fetchall()
            return [(th, 1.0 - float(d)) for th, d in rows]

        return self._run("searching vectors", read)

    def close(self) -> None:
        try:
            self.flush()
        except Exception:  # only parse work is lost: it is redone next time
            log.warning("could not write buffered parsed files to %s", self.path, exc_info=True)
        with self._lock:
            self._drop()
        self.close_local()


def _batches(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
