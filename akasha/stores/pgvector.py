"""``backend: pgvector``: chunks in a PostgreSQL table with a ``vector`` column.

Keys: ``dsn``, or ``connection`` with ``host`` (localhost), ``port`` (5432),
``database``, ``user``, ``password`` (all ``astromesh``); ``collection``
(``embeddings``) is the table name and must be a plain SQL identifier (checked
at build). On the first ingest or query it checks that ``asyncpg`` is installed
(the ``pgvector`` extra), runs ``CREATE EXTENSION IF NOT EXISTS vector`` and
creates the table and a ``doc_id`` index. Every value, filters included, is a
bound parameter; a re-ingest is one transaction (delete + insert), so a failure
keeps the previous version.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from akasha.embeddings.base import normalize_rows
from akasha.errors import MissingExtraError, SpecError
from akasha.stores.base import Filters, check_write, doc_id_of, dump_metadata
from akasha.types import Chunk

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def check_identifier(name: object) -> str:
    """Return ``name`` if it is a plain SQL identifier (letters, digits, underscore), else SpecError."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise SpecError(
            f"vector_store.collection {name!r} is not a plain SQL identifier: use letters, digits and "
            "underscores, starting with a letter or underscore, at most 63 characters"
        )
    return name


def _vector_literal(row: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in row) + "]"


class PgVectorStore:
    """Async store over one asyncpg connection (re-opened if the event loop changes)."""

    name = "pgvector"

    def __init__(self, dimension: int, table: str = "embeddings", dsn: str | None = None, connection: dict[str, Any] | None = None) -> None:
        self.dimension = int(dimension)
        self.table = check_identifier(table)
        self.dsn = dsn
        conn = dict(connection or {})
        self.connect_kwargs = {
            "host": conn.get("host", "localhost"),
            "port": int(conn.get("port", 5432)),
            "database": conn.get("database", "astromesh"),
            "user": conn.get("user", "astromesh"),
            "password": conn.get("password", "astromesh"),
        }
        self._conn: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None

    async def _connection(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._conn is not None and self._loop is loop and not self._conn.is_closed():
            return self._conn
        try:
            import asyncpg
        except ImportError:
            raise MissingExtraError("asyncpg", "pgvector", "vector_store backend 'pgvector'") from None
        if self.dsn:
            conn = await asyncpg.connect(self.dsn)
        else:
            conn = await asyncpg.connect(**self.connect_kwargs)
        t = self.table
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {t} (id text PRIMARY KEY, doc_id text NOT NULL, content text NOT NULL, "
            f"metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb, embedding vector({self.dimension}) NOT NULL)"
        )
        await conn.execute(f"CREATE INDEX IF NOT EXISTS {t}_doc_id_idx ON {t} (doc_id)")
        self._conn, self._loop, self._lock = conn, loop, asyncio.Lock()
        return conn

    async def replace(self, doc_ids: Sequence[str], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        matrix = check_write(doc_ids, chunks, vectors, self.dimension)
        conn = await self._connection()
        rows = [
            (c.id, doc_id_of(c), c.text, dump_metadata(c.metadata), _vector_literal(v))
            for c, v in zip(chunks, matrix, strict=True)
        ]
        assert self._lock is not None
        async with self._lock, conn.transaction():
            await conn.execute(f"DELETE FROM {self.table} WHERE doc_id = ANY($1::text[])", list(doc_ids))
            if rows:
                await conn.executemany(
                    f"INSERT INTO {self.table} (id, doc_id, content, metadata, embedding) "
                    "VALUES ($1, $2, $3, $4::jsonb, $5::text::vector)",
                    rows,
                )

    async def delete(self, doc_ids: Sequence[str]) -> int:
        conn = await self._connection()
        assert self._lock is not None
        async with self._lock:
            status = await conn.execute(f"DELETE FROM {self.table} WHERE doc_id = ANY($1::text[])", list(doc_ids))
        return int(status.split()[-1])

    async def search(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[Chunk, float]]:
        if k <= 0:
            return []
        query = normalize_rows(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]
        conn = await self._connection()
        params: list[Any] = [_vector_literal(query)]
        where = []
        filters = dict(filters or {})
        if "doc_id" in filters:
            params.append(str(filters.pop("doc_id")))
            where.append(f"doc_id = ${len(params)}")
        if filters:
            params.append(json.dumps(filters, default=str))
            where.append(f"metadata @> ${len(params)}::jsonb")
        params.append(int(k))
        clause = f"WHERE {' AND '.join(where)} " if where else ""
        sql = (
            f"SELECT id, content, metadata::text AS metadata, 1 - (embedding <=> $1::text::vector) AS score "
            f"FROM {self.table} {clause}ORDER BY embedding <=> $1::text::vector LIMIT ${len(params)}"
        )
        assert self._lock is not None
        async with self._lock:
            records = await conn.fetch(sql, *params)
        return [(Chunk(r["id"], r["content"], json.loads(r["metadata"])), float(r["score"])) for r in records]

    async def get(self, ids: Sequence[str]) -> list[Chunk]:
        if not ids:
            return []
        conn = await self._connection()
        assert self._lock is not None
        async with self._lock:
            records = await conn.fetch(
                f"SELECT id, content, metadata::text AS metadata FROM {self.table} WHERE id = ANY($1::text[])", list(ids)
            )
        found = {r["id"]: Chunk(r["id"], r["content"], json.loads(r["metadata"])) for r in records}
        return [found[i] for i in ids if i in found]

    async def count(self) -> int:
        conn = await self._connection()
        assert self._lock is not None
        async with self._lock:
            return int(await conn.fetchval(f"SELECT count(*) FROM {self.table}"))

    async def aclose(self) -> None:
        if self._conn is not None and not self._conn.is_closed():
            try:
                await self._conn.close()
            except Exception:  # connection bound to a finished loop: nothing left to close
                pass
        self._conn = None

    def __repr__(self) -> str:
        return f"PgVectorStore(table={self.table!r})"


def make_pgvector_store(config: dict[str, Any], context: Any) -> PgVectorStore:
    """Registry factory for ``backend: pgvector`` (identifier check here, at build)."""
    connection = config.get("connection") or {}
    if not isinstance(connection, dict):
        raise SpecError(f"vector_store.connection must be a mapping, got {type(connection).__name__}")
    return PgVectorStore(
        dimension=context.dimension,
        table=check_identifier(config.get("collection", "embeddings")),
        dsn=config.get("dsn"),
        connection=connection,
    )


__all__ = ["PgVectorStore", "make_pgvector_store", "check_identifier"]
