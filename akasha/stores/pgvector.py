"""PostgreSQL + pgvector through psycopg 3 (``backend: pgvector``, ``postgresql://``).

One plain table per store, the way a PostgreSQL user reads it with SQL::

    <t>        id text PRIMARY KEY, doc_id text, text text, source text, page integer,
               chunk_index integer, content_hash text, embedder text, metadata jsonb,
               embedding vector(d), lexical tsvector
               + btree indexes on doc_id, content_hash and source, a GIN index on lexical, and
               an HNSW index (vector_cosine_ops) named <t>_hnsw, built once the first rows are in
    <t>_state  key text PRIMARY KEY, state jsonb, updated_at timestamptz  (the index's state)

``lexical`` holds each text's terms as akasha's BM25 tokenizer splits them (positions kept), so
PostgreSQL's ``simple`` configuration ranks every language alike; the tokenizer's id is kept in
the state table (key ``akasha-lexical``) and a query worker splits the question with the same one.

Searches run in the server (:meth:`PgVectorStore.query`): one SQL statement ranks the vector side
with the HNSW index, the lexical side with the GIN index (BM25-style: IDF from the document
frequency, counted up to :data:`DF_CAP` rows, times ``ts_rank``) and fuses both by weighted
reciprocal-rank fusion; only the ``k`` fused rows travel to the client.

``metadata`` holds the chunk metadata as given; the columns repeat what SQL users filter on.
Every write is one transaction; :meth:`PgVectorStore.lock` serialises writers on all machines
(a session advisory lock). Vectors travel in pgvector's binary format; every call goes through
:class:`~akasha.retry.Retry`. PostgreSQL text cannot hold NUL: it is stored as U+FFFD.

YAML keys: ``dsn``, or ``connection`` with ``host`` (localhost), ``port`` (5432), ``database``,
``user``, ``password`` (all ``astromesh``); ``collection`` (``embeddings``) is the table name, a
plain SQL identifier. A table of the previous release's YAML store (``content`` column) is
upgraded in place on first use. Needs the ``pgvector`` (or ``postgres``) extra.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from akasha.embeddings.base import normalize_rows
from akasha.errors import ConfigError, IndexLockError, MissingExtraError, SpecError
from akasha.metadata import own
from akasha.retrieval.fusion import exact_terms
from akasha.retrieval.tokenize import is_compound
from akasha.retry import Retry
from akasha.stores.base import BaseStore, T, batches, check_query
from akasha.stores.query import SearchRequest, lexical_tokenizer, resolve_tokenizer_id
from akasha.stores.redact import redact_conninfo
from akasha.types import Chunk, Hit

log = logging.getLogger(__name__)

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_BATCH = 5000
#: Document frequencies are counted up to this many rows; a term in more rows counts as this common.
DF_CAP = 1000
#: The lexical side scores at most this many candidate rows (rows holding a rarer term, or two common ones).
LEXICAL_SCAN = 2000
#: Candidates are the rows holding the question's rarest terms, taken rarest first until they hold about
#: this many times the pool (a term in more than DF_CAP rows is never taken alone).
RARE_ENOUGH = 4
#: hnsw.ef_search: this many times the pool, at least the ``ef_search`` option (200), at most pgvector's 1000.
EF_PER_CANDIDATE = 8
#: A lexeme PostgreSQL accepts (2,047 bytes); longer tokens are left out of the lexical column.
_MAX_LEXEME_BYTES = 2047
_MAX_POSITIONS = 255
_LEXICAL_STATE = "akasha-lexical"
_HNSW_MAX_DIM = 2000
_INT4 = (-(2**31), 2**31 - 1)
COLUMNS = ("id", "doc_id", "text", "source", "page", "chunk_index", "content_hash", "embedder", "metadata",
           "embedding")


def check_identifier(name: object) -> str:
    """Return ``name`` if it is a plain SQL identifier (letters, digits, underscore), else SpecError."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise SpecError(f"vector_store.collection {name!r} is not a plain SQL identifier: use letters, digits and "
                        "underscores, starting with a letter or underscore, at most 63 characters")
    return name


@dataclass(slots=True, eq=False)
class _Vec:
    """A float32 vector on its way to pgvector (picked up by the binary dumper)."""

    data: np.ndarray


def _key(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


def _clean(text: str) -> str:
    return text.replace("\x00", "\ufffd")  # PostgreSQL text cannot hold NUL


def _int4(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and _INT4[0] <= value <= _INT4[1] else None


def _metadata_json(metadata: Mapping[str, Any]) -> str:
    return json.dumps(dict(metadata), ensure_ascii=False, default=str).replace("\\u0000", "\ufffd").replace(
        "\x00", "\ufffd")


def _quoted_lexeme(term: str) -> str:
    """A lexeme as PostgreSQL's tsvector/tsquery input reads it literally (no parsing, no stemming)."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(tokens: list[str]) -> str:
    """``tokens`` as a tsvector value (``'term':1,5 'other':2``) with their positions, for a ``::tsvector`` cast."""
    positions: dict[str, list[int]] = {}
    for position, token in enumerate(tokens, start=1):
        term = _clean(token)
        if not term or len(term.encode("utf-8", "replace")) > _MAX_LEXEME_BYTES:
            continue
        found = positions.setdefault(term, [])
        if len(found) < _MAX_POSITIONS:
            found.append(min(position, 16383))
    return " ".join(f"{_quoted_lexeme(term)}:{','.join(map(str, places))}" for term, places in positions.items())


def _conninfo(**params: Any) -> str:
    """A libpq ``key='value'`` connection string (values quoted, so spaces and quotes are safe)."""
    def quoted(value: Any) -> str:
        return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"

    return " ".join(f"{key}={quoted(value)}" for key, value in params.items() if value is not None)


def _is_auth_error(exc: BaseException) -> bool:
    if getattr(exc, "sqlstate", None) in ("28P01", "28000"):
        return True
    text = str(exc).lower()
    return "authentication failed" in text or "no password supplied" in text or (
        "role" in text and "does not exist" in text)


class PgVectorStore(BaseStore):
    """Chunks as rows of one PostgreSQL table with a ``vector`` column (psycopg 3)."""

    def __init__(
        self,
        dimension: int | None = None,
        table: str = "akasha",
        dsn: str | None = None,
        connection: Mapping[str, Any] | None = None,
        *,
        embedder: str | None = None,
        retry: Retry | None = None,
        display: str | None = None,
        lazy: bool = False,
        connect_timeout: float = 5.0,
        ef_search: int = 200,
        hnsw_m: int = 16,
        ef_construction: int = 64,
    ) -> None:
        if not isinstance(table, str) or not _IDENTIFIER.match(table) or len(table) > 57:
            raise ConfigError(f"PostgreSQL table {table!r} must be a plain SQL identifier of at most 57 characters "
                              "(letters, digits, underscores, not starting with a digit)")
        super().__init__(dimension, embedder)
        self.table = table  # unquoted in SQL, so PostgreSQL folds it to lower case
        #: The YAML ``connection`` keys with their defaults (None when a DSN was given).
        self.connect_kwargs: dict[str, Any] | None = None
        self.dsn = dsn
        if dsn:
            self.conninfo = str(dsn)
        else:
            conn = dict(connection or {})
            keys = self.connect_kwargs = {
                "host": conn.get("host", "localhost"), "port": int(conn.get("port", 5432)),
                "database": conn.get("database", "astromesh"), "user": conn.get("user", "astromesh"),
                "password": conn.get("password", "astromesh")}
            self.conninfo = _conninfo(host=keys["host"], port=keys["port"], dbname=keys["database"],
                                      user=keys["user"], password=keys["password"])
            display = display or f"postgresql://{keys['user']}@{keys['host']}:{keys['port']}/{keys['database']}"
        where = display or redact_conninfo(self.conninfo)
        self.name = f"{where} (table {self.table})" if "table=" not in where else where
        self.server = f"the PostgreSQL server {where}"
        self.retry = retry or Retry()
        self.connect_timeout = connect_timeout
        self.ef_search = ef_search
        self.hnsw = (int(hnsw_m), int(ef_construction))
        self._lock = threading.RLock()
        self._conn: Any = None
        self._vector_oid: int | None = None
        self._exists = False
        self._ann_checked = False
        self._state_ready = False
        self._iterative: bool | None = None
        self._ef_set: int | None = None  # hnsw.ef_search of the open connection
        self._lexical_recorded = False  # the table's tokenizer is known (read from, or written to, its state)
        self._driver: Any = None
        if not lazy:  # a lazy store (YAML) checks for psycopg and connects on first use
            self._run("opening the table", self._open)

    @property
    def _psycopg(self) -> Any:
        """The psycopg module (MissingExtraError naming the extra when it is not installed)."""
        if self._driver is None:
            try:
                import psycopg
            except ImportError:
                raise MissingExtraError("psycopg[binary]", "pgvector", "the PostgreSQL store") from None
            self._driver = psycopg
        return self._driver

    # ----------------------------------------------------------- connection
    def _connect(self) -> Any:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        conn = self._psycopg.connect(self.conninfo, autocommit=True, application_name="akasha",
                                     connect_timeout=max(1, int(self.connect_timeout)))
        if self._vector_oid is None:
            row = conn.execute("SELECT to_regtype('vector')::oid").fetchone()
            self._vector_oid = int(row[0]) if row and row[0] else None
        if self._vector_oid is not None:
            self._register_vector(conn, self._vector_oid)
        self._conn = conn
        return conn

    def _drop(self) -> None:
        conn, self._conn, self._ef_set = self._conn, None, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _run(self, what: str, fn: Callable[[Any], T]) -> T:
        psycopg = self._psycopg

        def attempt() -> T:
            with self._lock:
                try:
                    return fn(self._connect())
                except (psycopg.OperationalError, psycopg.InterfaceError):
                    self._drop()
                    raise

        return self.retry.run(attempt, server=self.server, what=what, on_retry=self._drop,
                              transient=(psycopg.OperationalError, psycopg.InterfaceError), auth=_is_auth_error,
                              hint="Check the user and password in the postgresql:// URL, $PGPASSWORD or ~/.pgpass")

    @staticmethod
    def _register_vector(conn: Any, oid: int) -> None:
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

    # ------------------------------------------------------------ the table
    def _open(self, conn: Any) -> None:
        """Check an existing table (columns, width, embedder) and upgrade the previous YAML format."""
        if self._exists:
            return
        columns = {r[0]: r[1] for r in conn.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
            "WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped", (self.table,)).fetchall()}
        if not columns:  # not there (yet): looked up again on the next call, another machine may create it
            return
        if "content" in columns and "text" not in columns and {"id", "doc_id", "metadata", "embedding"} <= set(columns):
            self._upgrade(conn)
            self._open(conn)
            return
        missing = [c for c in COLUMNS if c not in columns]
        if missing:
            raise ConfigError(f"table {self.table!r} on {self.server} exists but is not an akasha chunk table "
                              f"(it lacks {', '.join(missing)}); name another table")
        found = re.fullmatch(r"vector\((\d+)\)", columns["embedding"])
        width = int(found.group(1)) if found else None
        row = conn.execute(f"SELECT embedder FROM {self.table} WHERE embedder IS NOT NULL LIMIT 1").fetchone()
        self._adopt(f"table {self.table!r} on {self.server}", width, row[0] if row else None, "table")
        if "lexical" not in columns:
            self._add_lexical(conn)
        self._read_lexical_state(conn)
        self._exists = True

    def _upgrade(self, conn: Any) -> None:
        """Give a table of the previous release's YAML store (``content`` column) this store's columns, in place."""
        t = self.table
        number = "CASE WHEN jsonb_typeof(metadata->'{k}') = 'number' AND (metadata->>'{k}')::numeric " \
                 "BETWEEN -2147483648 AND 2147483647 THEN floor((metadata->>'{k}')::numeric)::integer END"
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(f"akasha-schema:{t}"),))
            if not conn.execute("SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'content' "
                                "AND NOT attisdropped", (t,)).fetchone():
                return  # another process upgraded it while this one waited for the lock
            conn.execute(f"ALTER TABLE {t} RENAME COLUMN content TO text")
            conn.execute(f"ALTER TABLE {t} ADD COLUMN IF NOT EXISTS source text, "
                         "ADD COLUMN IF NOT EXISTS page integer, ADD COLUMN IF NOT EXISTS chunk_index integer, "
                         "ADD COLUMN IF NOT EXISTS content_hash text, ADD COLUMN IF NOT EXISTS embedder text")
            conn.execute(f"UPDATE {t} SET source = metadata->>'source', page = {number.format(k='page')}, "
                         f"chunk_index = {number.format(k='chunk_index')}, content_hash = metadata->>'content_hash', "
                         "embedder = metadata->>'embedder'")
            conn.execute(f"ALTER TABLE {t} ADD COLUMN IF NOT EXISTS lexical tsvector")
            self._backfill_lexical(conn)
            self._indexes(conn)
        log.info("upgraded table %s on %s to the current chunk-table layout", t, self.server)

    def _add_lexical(self, conn: Any) -> None:
        """Give a table of an earlier release its lexical column, filled from the stored texts (nothing re-embedded).

        The column is added under the schema lock: a process that waited for it finds the column there.
        """
        t = self.table
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(f"akasha-schema:{t}"),))
            conn.execute(f"ALTER TABLE {t} ADD COLUMN IF NOT EXISTS lexical tsvector")
        self._backfill_lexical(conn)
        conn.execute(f"CREATE INDEX IF NOT EXISTS {t}_lexical_idx ON {t} USING gin (lexical)")
        log.info("added the lexical column to table %s on %s", t, self.server)

    def _backfill_lexical(self, conn: Any) -> None:
        """Fill ``lexical`` for rows that lack it (written before the column existed), a batch at a time."""
        tokenize = lexical_tokenizer(self._tokenizer_for_writes(conn))
        t = self.table
        after = ""
        while True:
            rows = conn.execute(f"SELECT id, text FROM {t} WHERE lexical IS NULL AND id > %s ORDER BY id LIMIT %s",
                                (after, _BATCH)).fetchall()
            if not rows:
                return
            with conn.transaction():
                conn.execute(f"UPDATE {t} SET lexical = v.lexical::tsvector FROM unnest(%s::text[], %s::text[]) "
                             "AS v(id, lexical) WHERE {t}.id = v.id".replace("{t}", t),
                             ([r[0] for r in rows], [tsvector_literal(tokenize(r[1])) for r in rows]))
            after = rows[-1][0]

    def _read_lexical_state(self, conn: Any) -> None:
        """Adopt the tokenizer the table's lexical terms were made with (recorded by the first writer)."""
        state = self._state_row(conn, _LEXICAL_STATE)
        if isinstance(state, dict) and isinstance(state.get("tokenizer"), str):
            self.lexical_tokenizer = state["tokenizer"]
            self._lexical_recorded = True

    def _tokenizer_for_writes(self, conn: Any) -> str:
        """The tokenizer id the lexical column uses, recorded in the state table by the first writer."""
        if not self._lexical_recorded:
            self._read_lexical_state(conn)
        if not self._lexical_recorded:
            tokenizer = resolve_tokenizer_id(self.lexical_tokenizer)
            self._save_state_row(conn, _LEXICAL_STATE, {"tokenizer": tokenizer})
            self.lexical_tokenizer, self._lexical_recorded = tokenizer, True
        return self.lexical_tokenizer

    def _indexes(self, conn: Any) -> None:
        t = self.table
        for column, using in (("doc_id", ""), ("content_hash", ""), ("source", ""), ("lexical", "USING gin ")):
            conn.execute(f"CREATE INDEX IF NOT EXISTS {t}_{column}_idx ON {t} {using}({column})")

    def _create(self, conn: Any, dimension: int) -> None:
        """Create the chunk table (and the extension) for ``dimension``-wide vectors."""
        t = self.table
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(f"akasha-schema:{t}"),))
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except self._psycopg.errors.Error as exc:
                if isinstance(exc, (self._psycopg.OperationalError, self._psycopg.InterfaceError)):
                    raise
                raise ConfigError(f"the pgvector extension is not available on {self.server} ({exc}); install "
                                  "pgvector there and run CREATE EXTENSION vector as a privileged user") from None
            if self._vector_oid is None:
                self._vector_oid = int(conn.execute("SELECT to_regtype('vector')::oid").fetchone()[0])
                self._register_vector(conn, self._vector_oid)
            conn.execute(f"""CREATE TABLE IF NOT EXISTS {t} (
                id text PRIMARY KEY, doc_id text NOT NULL, text text NOT NULL, source text, page integer,
                chunk_index integer, content_hash text, embedder text,
                metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb, embedding vector({int(dimension)}) NOT NULL,
                lexical tsvector)""")
            self._indexes(conn)
        self._open(conn)

    def _ready(self, conn: Any, dimension: int | None = None) -> bool:
        """True when the chunk table exists; a missing one is created once the width is known."""
        self._open(conn)
        width = dimension or self.dimension
        if not self._exists and width:
            self._create(conn, int(width))
        return self._exists

    def ensure_ann_index(self) -> None:
        """Build the HNSW index (cosine) if it is missing (a no-op once built; pgvector stops at 2,000 dims)."""
        m, ef = self.hnsw

        def build(conn: Any) -> None:
            if not self._ready(conn) or (self.dimension or 0) > _HNSW_MAX_DIM:
                return
            if conn.execute("SELECT 1 FROM pg_indexes WHERE tablename = %s AND indexname = %s",
                            (self.table.lower(), f"{self.table}_hnsw".lower())).fetchone():
                return
            started = time.perf_counter()
            with conn.transaction():
                conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
                conn.execute(f"CREATE INDEX IF NOT EXISTS {self.table}_hnsw ON {self.table} USING hnsw "
                             f"(embedding vector_cosine_ops) WITH (m = {m}, ef_construction = {ef})")
            conn.execute(f"ANALYZE {self.table}")  # row count and term statistics for the query planner
            log.info("built the HNSW index of %s in %.1f s", self.table, time.perf_counter() - started)

        self._run("building the HNSW index", build)
        self._ann_checked = True

    # --------------------------------------------------------------- records
    def _upsert(self, chunks: list[Chunk], matrix: np.ndarray) -> None:
        from psycopg.types.json import Jsonb

        t = self.table
        names = ", ".join(COLUMNS)
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS[1:])
        rows = []
        tokenize: Callable[[str], list[str]] | None = None
        for chunk, vec in zip(chunks, matrix, strict=True):
            meta = chunk.metadata
            source = meta.get("source")
            rows.append((chunk.id, chunk.doc_id, _clean(chunk.text), None if source is None else _clean(str(source)),
                         _int4(meta.get("page")), _int4(meta.get("chunk_index")),
                         None if own(meta, "content_hash") is None else str(own(meta, "content_hash")),
                         None if meta.get("embedder") is None else str(meta["embedder"]),
                         Jsonb(meta, dumps=_metadata_json), _Vec(vec)))

        def write(conn: Any) -> None:
            nonlocal tokenize
            self._ready(conn, int(matrix.shape[1]))
            if tokenize is None:
                tokenize = lexical_tokenizer(self._tokenizer_for_writes(conn))
            for part in batches(rows, _BATCH):
                with conn.transaction():
                    conn.execute(f"CREATE TEMP TABLE akasha_stage (LIKE {t} INCLUDING DEFAULTS, lexical_text text) "
                                 "ON COMMIT DROP")
                    with conn.cursor().copy(f"COPY akasha_stage ({names}, lexical_text) FROM STDIN (FORMAT BINARY)"
                                            ) as copy:
                        copy.set_types(["text", "text", "text", "text", "int4", "int4", "text", "text", "jsonb",
                                        self._vector_oid, "text"])
                        for row in part:
                            copy.write_row((*row, tsvector_literal(tokenize(row[2]))))
                    conn.execute(f"INSERT INTO {t} ({names}, lexical) SELECT {names}, lexical_text::tsvector "
                                 f"FROM akasha_stage ON CONFLICT (id) DO UPDATE SET {updates}, "
                                 "lexical = EXCLUDED.lexical")

        self._run(f"writing {len(rows)} chunks", write)

    def _remove(self, ids: list[str]) -> int:
        def delete(conn: Any) -> int:
            if not self._ready(conn):
                return 0
            with conn.transaction():
                return sum(conn.execute(f"DELETE FROM {self.table} WHERE id = ANY(%s)", (part,)).rowcount
                           for part in batches(ids, _BATCH))

        return self._run(f"deleting {len(ids)} chunks", delete)

    @staticmethod
    def _chunk(chunk_id: str, text: str, metadata: Any) -> Chunk:
        return Chunk(chunk_id, text, metadata if isinstance(metadata, dict) else json.loads(metadata or "{}"))

    def _fetch(self, ids: list[str]) -> list[Chunk]:
        def read(conn: Any) -> dict[str, Chunk]:
            if not self._ready(conn):
                return {}
            return {i: self._chunk(i, text, meta) for part in batches(ids, _BATCH) for i, text, meta in conn.execute(
                f"SELECT id, text, metadata FROM {self.table} WHERE id = ANY(%s)", (part,)).fetchall()}

        found = self._run("reading chunks", read)
        return [found[i] for i in ids if i in found]

    def _vectors_for(self, hashes: list[str], embedder: str) -> dict[str, np.ndarray]:
        def read(conn: Any) -> dict[str, np.ndarray]:
            out: dict[str, np.ndarray] = {}
            if self._ready(conn):
                cur = conn.cursor(binary=True)
                own = self.embedder == embedder  # records without an embedder column belong to the store's one
                for part in batches(hashes, _BATCH):
                    for content_hash, vec in cur.execute(
                            f"SELECT content_hash, embedding FROM {self.table} WHERE content_hash = ANY(%s) "
                            "AND (embedder = %s OR (embedder IS NULL AND %s))",
                            (part, embedder, own)).fetchall():
                        out.setdefault(content_hash, vec)
            missing = [h for h in hashes if h not in out]
            if missing:
                out.update(self._legacy_vectors(conn, missing, embedder))
            return out

        found = self._run("reading stored vectors", read)
        return {h: normalize_rows(np.asarray(v, dtype=np.float32).reshape(1, -1))[0] for h, v in found.items()}

    def _legacy_vectors(self, conn: Any, hashes: list[str], embedder: str) -> dict[str, np.ndarray]:
        """Vectors the previous release's shared index kept in ``<t>_vec_<hash>`` (listed in ``<t>_models``)."""
        if conn.execute("SELECT to_regclass(%s)", (f"{self.table}_models",)).fetchone()[0] is None:
            return {}
        row = conn.execute(f"SELECT vec_table, dim FROM {self.table}_models WHERE model = %s", (embedder,)).fetchone()
        if (row is None or not _IDENTIFIER.match(str(row[0])) or self._vector_oid is None
                or (self.dimension is not None and int(row[1]) != self.dimension)):
            return {}
        cur = conn.cursor(binary=True)
        return {text_hash: vec for part in batches(hashes, _BATCH) for text_hash, vec in cur.execute(
            f"SELECT text_hash, embedding FROM {row[0]} WHERE text_hash = ANY(%s)", (part,)).fetchall()}

    @staticmethod
    def _where(filters: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
        """``AND ...`` conditions for ``filters``, with named parameters (``f0``, ...) every CTE can repeat."""
        condition = ""
        params: dict[str, Any] = {}
        for key, value in (filters or {}).items():
            name = f"f{len(params)}"
            if key == "doc_id":
                condition += f"AND doc_id = %({name})s "
                params[name] = str(value)
            else:  # containment on one key: equality for scalars; every value is a bound parameter
                condition += f"AND metadata @> %({name})s::jsonb "
                params[name] = json.dumps({key: value}, default=str)
        return condition, params

    def _nearest(self, query: np.ndarray, k: int, filters: dict[str, Any] | None) -> list[tuple[Chunk, float]]:
        """The dense side of :meth:`query` alone."""
        request = SearchRequest(vector=query, k=k, pool=k, filters=filters, weights=(1.0, 0.0))
        return [(hit.chunk, hit.score) for hit in self.query(request)]

    # ------------------------------------------------------------- searching
    capabilities = frozenset({"dense", "lexical", "hybrid"})

    def query(self, request: SearchRequest) -> list[Hit]:
        """Rank chunks in the server with one SQL statement (module docstring); scores in each hit's ``details``."""
        mode = request.mode
        if mode in ("dense", "hybrid") and request.vector is None:
            mode = "lexical"
        if mode == "lexical" and not request.tokens:
            return []
        if mode in ("dense", "hybrid") and not self._ann_checked:
            self.ensure_ann_index()
        vector = _Vec(check_query(request.vector, self.dimension)) if request.vector is not None and mode != "lexical" \
            else None
        terms = [_clean(t) for t in list(dict.fromkeys(request.tokens))[:64]] if mode != "dense" else []
        condition, params = self._where(request.filters)
        exact = exact_terms(request.text, terms) if mode == "hybrid" else []
        sql = self._query_sql(mode, condition, bool(exact))
        args: dict[str, Any] = {"v": vector, "pool": request.pool, "k": request.k, "rrf_k": request.rrf_k,
                                "wv": request.weights[0], "wl": request.weights[1], "exact": exact,
                                "terms": [_quoted_lexeme(t) for t in terms], "raw": terms,
                                "compound": [is_compound(t) for t in terms],
                                "df_cap": DF_CAP, "enough": RARE_ENOUGH * request.pool, "scan": LEXICAL_SCAN, **params}
        ef = min(1000, max(int(self.ef_search), EF_PER_CANDIDATE * request.pool))

        def read(conn: Any) -> list[Any]:
            if not self._ready(conn):
                return []
            if self._ef_set != ef:
                conn.execute(f"SET hnsw.ef_search = {int(ef)}")
                # The planner cannot know how rare a question's term is (a parameter) and may pick a
                # sequential scan that reads the whole table for a rare term; every side has an index to use.
                conn.execute("SET enable_seqscan = off")
                self._ef_set = ef
            if not request.filters or mode == "lexical":
                return conn.execute(sql, args).fetchall()
            if self._iterative is None:
                version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
                self._iterative = bool(version) and tuple(int(x) for x in re.findall(r"\d+", version[0])[:2]) >= (0, 8)
            with conn.transaction():
                if self._iterative:  # keep filtered HNSW scans going until the pool's rows match
                    conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
                rows = conn.execute(sql, args).fetchall()
                if not self._iterative and mode == "dense" and len(rows) < request.k:
                    # pgvector < 0.8 filters after the HNSW scan, which may miss matches: exact scan instead
                    conn.execute("SET LOCAL enable_indexscan = off")
                    conn.execute("SET LOCAL enable_seqscan = on")
                    rows = conn.execute(sql, args).fetchall()
            return rows

        rows = self._run("searching", read)
        hits = []
        for chunk_id, text, meta, fused, dense, lexical in rows:
            details = {name: float(value) for name, value in (("vector", dense), ("bm25", lexical))
                       if value is not None}
            source = "+".join(n for n in ("bm25", "vector") if n in details)
            if mode == "hybrid":
                details["rrf"] = float(fused)
            hits.append(Hit(self._chunk(chunk_id, text, meta), float(fused), source, details))
        return hits

    def _query_sql(self, mode: str, condition: str, exact: bool = True) -> str:
        """The one statement of a query: CTEs for the sides ``mode`` needs, fused, joined to the k rows' texts.

        The fusion is :func:`akasha.stores.query.fuse_sides` in SQL; with ``exact`` (the question's exact
        terms, passed as ``%(exact)s``) the first lexical row leads when it alone holds one of them.
        """
        t = self.table
        dense = (f"dense AS (SELECT id, 1 - d AS score, row_number() OVER (ORDER BY d, id) AS rank FROM ("
                 f"SELECT id, embedding <=> %(v)b AS d FROM {t} WHERE true {condition} "
                 f"ORDER BY embedding <=> %(v)b LIMIT %(pool)s) nearest)")
        lexical = (
            # each term's IDF from its document frequency (counted up to df_cap rows by the GIN index)
            f"total AS (SELECT CASE WHEN c.reltuples > 0 THEN c.reltuples ELSE (SELECT count(*) FROM {t}) END AS n "
            f"FROM pg_class c WHERE c.oid = '{t}'::regclass), "
            # ANALYZE's most common lexemes give the frequent terms' document frequency for free
            f"stats AS (SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs "
            f"FROM pg_stats WHERE schemaname = current_schema() AND tablename = '{t.lower()}' "
            f"AND attname = 'lexical'), "
            f"terms AS (SELECT q.ord, q.query, q.raw, d.df, ln(1 + greatest(total.n - d.df, 0) / (d.df + 0.5)) AS idf "
            f"FROM (SELECT q0.raw, q0.term::tsquery AS query, q0.compound, q0.ord FROM unnest(%(raw)s::text[], "
            f"%(terms)s::text[], %(compound)s::bool[]) WITH ORDINALITY AS q0(raw, term, compound, ord)) q "
            f"CROSS JOIN total LEFT JOIN stats ON true "
            f"CROSS JOIN LATERAL (SELECT CASE WHEN array_position(stats.elems, q.raw) IS NOT NULL "
            f"THEN stats.freqs[array_position(stats.elems, q.raw)] * total.n "
            f"ELSE (SELECT count(*) FROM (SELECT 1 FROM {t} WHERE lexical @@ q.query {condition} "
            f"LIMIT %(df_cap)s) hits) END AS df) d "
            # tokenize.counts_in_query: a compound counts only where it singles out one row
            f"WHERE NOT q.compound OR d.df <= 1), "
            # candidates: rows holding one of the rarer terms; when every term is common, rows holding two of them
            f"rarest AS (SELECT query, df, sum(df) OVER (ORDER BY df, ord) - df AS before FROM terms "
            f"WHERE df < %(df_cap)s), "
            f"wanted AS (SELECT coalesce((SELECT string_agg(query::text, ' | ') FROM rarest "
            f"WHERE before < %(enough)s), "
            f"(SELECT string_agg('(' || a.query::text || ' & ' || b.query::text || ')', ' | ') "
            f"FROM terms a JOIN terms b ON a.ord < b.ord), "
            f"(SELECT string_agg(query::text, ' | ') FROM terms))::tsquery AS query), "
            f"lexical AS (SELECT id, score, row_number() OVER (ORDER BY score DESC, id) AS rank FROM ("
            f"SELECT c.id, (SELECT sum(terms.idf * ts_rank(c.lexical, terms.query, 1)) FROM terms "
            f"WHERE c.lexical @@ terms.query) AS score FROM (SELECT id, lexical FROM {t} "
            f"WHERE lexical @@ (SELECT query FROM wanted) {condition} LIMIT %(scan)s) c "
            f"ORDER BY score DESC, id LIMIT %(pool)s) matched)")
        if mode == "dense":
            ctes = dense
            sides = "SELECT id, rank, score AS dense, NULL::float8 AS lexical, 'v' AS side FROM dense"
        elif mode == "lexical":
            ctes = lexical
            sides = "SELECT id, rank, NULL::float8 AS dense, score AS lexical, 'l' AS side FROM lexical"
        else:
            ctes = f"{dense}, {lexical}"
            sides = ("SELECT id, rank, score AS dense, NULL::float8 AS lexical, 'v' AS side FROM dense "
                     "UNION ALL SELECT id, rank, NULL::float8, score, 'l' FROM lexical")
        summed = (f"summed AS (SELECT id, sum(CASE side WHEN 'v' THEN %(wv)s::float8 ELSE %(wl)s::float8 END "
                  f"/ (%(rrf_k)s + rank)) AS rrf, "
                  f"max(dense) AS dense, max(lexical) AS lexical FROM ({sides}) side GROUP BY id)")
        if mode == "hybrid" and exact:
            # fusion.exact_match_first: the first lexical row, when it alone holds a term of the question, leads
            sole = (f"sole AS (SELECT l.id FROM lexical l JOIN {t} c ON c.id = l.id WHERE l.rank = 1 "
                    f"AND EXISTS (SELECT 1 FROM terms WHERE terms.df = 1 AND terms.raw = ANY(%(exact)s::text[]) "
                    f"AND c.lexical @@ terms.query)), ")
            lead = ("CASE WHEN id IN (SELECT id FROM sole) THEN (SELECT max(rrf) FROM summed) + 1e-9 "
                    "ELSE rrf END")
        else:
            sole, lead = "", "rrf"
        fused = (f"{summed}, {sole}fused AS (SELECT id, {lead} AS rrf, dense, lexical FROM summed "
                 f"ORDER BY 2 DESC, id LIMIT %(k)s)")
        order = {"dense": "f.dense DESC", "lexical": "f.lexical DESC"}.get(mode, "f.rrf DESC")
        score = {"dense": "f.dense", "lexical": "f.lexical"}.get(mode, "f.rrf")
        return (f"WITH {ctes}, {fused} SELECT f.id, c.text, c.metadata, {score}, f.dense, f.lexical "
                f"FROM fused f JOIN {t} c ON c.id = f.id ORDER BY {order}, f.id")

    def _scan(self, batch: int) -> Iterator[tuple[list[Chunk], np.ndarray]]:
        last = ""
        while True:
            def read(conn: Any, after: str = last) -> list[Any]:
                if not self._ready(conn):
                    return []
                return conn.cursor(binary=True).execute(
                    f"SELECT id, text, metadata, embedding FROM {self.table} WHERE id > %s ORDER BY id LIMIT %s",
                    (after, batch)).fetchall()

            rows = self._run("reading chunks", read)
            if not rows:
                return
            chunks = [self._chunk(i, text, meta) for i, text, meta, _ in rows]
            yield chunks, normalize_rows(np.stack([np.asarray(r[3], dtype=np.float32) for r in rows]))
            if len(rows) < batch:
                return
            last = rows[-1][0]

    def _ids_of_documents(self, doc_ids: list[str]) -> list[str]:
        def read(conn: Any) -> list[str]:
            if not self._ready(conn):
                return []
            return [r[0] for part in batches(doc_ids, _BATCH) for r in conn.execute(
                f"SELECT id FROM {self.table} WHERE doc_id = ANY(%s) ORDER BY id", (part,))]

        return self._run("looking up documents", read)

    def _count(self) -> int:
        return self._run("counting chunks", lambda c: int(c.execute(
            f"SELECT count(*) FROM {self.table}").fetchone()[0]) if self._ready(c) else 0)

    # ------------------------------------------------------------- the state
    def _load_state(self, key: str) -> dict[str, Any] | None:
        return self._run("reading the index state", lambda conn: self._state_row(conn, key))

    def _state_row(self, conn: Any, key: str) -> dict[str, Any] | None:
        if not self._state_ready and conn.execute("SELECT to_regclass(%s)",
                                                  (f"{self.table}_state",)).fetchone()[0] is None:
            return None
        self._state_ready = True
        row = conn.execute(f"SELECT state FROM {self.table}_state WHERE key = %s", (key,)).fetchone()
        return None if row is None else (row[0] if isinstance(row[0], dict) else json.loads(row[0]))

    def _save_state(self, key: str, state: dict[str, Any]) -> None:
        self._run("committing the index state", lambda conn: self._save_state_row(conn, key, state))
        self.ensure_ann_index()  # a commit follows the bulk writes: build the ANN index after them, once

    def _save_state_row(self, conn: Any, key: str, state: dict[str, Any]) -> None:
        payload = json.dumps(state, ensure_ascii=False).replace("\\u0000", "\ufffd")
        if not self._state_ready:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(f"akasha-schema:{self.table}"),))
                conn.execute(f"CREATE TABLE IF NOT EXISTS {self.table}_state (key text PRIMARY KEY, "
                             "state jsonb NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())")
            self._state_ready = True
        conn.execute(f"INSERT INTO {self.table}_state (key, state, updated_at) VALUES (%s, %s::jsonb, now()) "
                     "ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, updated_at = now()", (key, payload))

    # -------------------------------------------------------------- the lock
    @contextlib.contextmanager
    def lock(self, timeout: float) -> Iterator[None]:
        """Serialise writers on every machine: a session advisory lock on its own connection."""
        key = _key(f"akasha-writer:{self.table}")
        psycopg = self._psycopg

        def connect() -> Any:
            return psycopg.connect(self.conninfo, autocommit=True, application_name="akasha-lock",
                                   connect_timeout=max(1, int(self.connect_timeout)))

        conn = self.retry.run(connect, server=self.server, what="taking the writer lock",
                              transient=(psycopg.OperationalError,), auth=_is_auth_error)
        try:
            deadline = time.monotonic() + float(timeout)
            while not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                if time.monotonic() > deadline:
                    raise IndexLockError(
                        f"another writer holds the lock of table {self.table!r} on {self.server} for more than "
                        f"{float(timeout):g} s; wait for it to finish, or pass a larger lock_timeout")
                time.sleep(0.2)
            yield
        finally:
            with contextlib.suppress(Exception):
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            with contextlib.suppress(Exception):
                conn.close()

    def close(self) -> None:
        """Close the connection (the next call reconnects)."""
        with self._lock:
            self._drop()


def make_pgvector_store(config: dict[str, Any], context: Any) -> PgVectorStore:
    """Registry factory for ``backend: pgvector`` (identifier check here, at build; no connection until first use)."""
    connection = config.get("connection") or {}
    if not isinstance(connection, dict):
        raise SpecError(f"vector_store.connection must be a mapping, got {type(connection).__name__}")
    return PgVectorStore(dimension=context.dimension, table=check_identifier(config.get("collection", "embeddings")),
                         dsn=config.get("dsn"), connection=connection, lazy=True)


__all__ = ["COLUMNS", "PgVectorStore", "check_identifier", "make_pgvector_store"]
