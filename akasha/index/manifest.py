"""The SQLite manifest: what each file contained, and every vector ever computed.

SQLite, not Chroma, by default: it ships with Python, commits atomically (a ``kill -9``
leaves the last committed state), needs no pickles and reloads in milliseconds. Vectors
are float32 BLOBs; WAL mode lets readers run beside the one writer (the index's file lock).

Tables
    ``files``       stat cache: path -> (size, mtime_ns, sha256 of the bytes, ctime_ns, inode), only to
                    skip re-reading files whose stat is unchanged;
    ``parsed``      per (file sha256, chunk settings): loaded fine or skipped (+ reason);
    ``chunks``      per (file sha256, chunk settings, seq): chunk text, its sha256 and metadata;
    ``embeddings``  per (embedder name, text sha256): the vector (namespaced by model);
    ``corpora``     per (data source, namespace): the last committed corpus state and snapshot.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from akasha.retrieval.passages import PASSAGE_STRIDE, PASSAGE_TOKENS
from akasha.stores.base import batches

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, file_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS parsed (
    file_hash TEXT NOT NULL, settings TEXT NOT NULL, status TEXT NOT NULL, reason TEXT,
    n_chunks INTEGER NOT NULL, PRIMARY KEY (file_hash, settings));
CREATE TABLE IF NOT EXISTS chunks (
    file_hash TEXT NOT NULL, settings TEXT NOT NULL, seq INTEGER NOT NULL, text_hash TEXT NOT NULL,
    text TEXT NOT NULL, metadata TEXT NOT NULL, PRIMARY KEY (file_hash, settings, seq));
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL, text_hash TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash));
CREATE TABLE IF NOT EXISTS corpora (
    source_key TEXT NOT NULL, namespace TEXT NOT NULL, state_key TEXT NOT NULL, files TEXT NOT NULL,
    snapshot TEXT, PRIMARY KEY (source_key, namespace));
"""

StoredChunk = tuple[int, str, str, dict[str, Any]]  # (seq, text_hash, text, metadata)


class Manifest:
    """Thin, transactional access to the index database (one connection, thread-safe)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(path, timeout=60.0, check_same_thread=False, isolation_level=None)
            self._check_ours()  # before anything is written, the journal mode included
            if path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            raise self._storage_error(exc) from exc
        with self.transaction():
            for statement in _SCHEMA.strip().split(";"):
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(files)")}
            for column in ("ctime_ns", "inode"):  # added after schema 1 shipped: old rows hold NULL (re-read once)
                if column not in columns:
                    self._db.execute(f"ALTER TABLE files ADD COLUMN {column} INTEGER")
        version = self._query("SELECT value FROM meta WHERE key='schema'")[0][0]
        if version != SCHEMA_VERSION:
            raise RuntimeError(f"index database {path} has schema {version}, this akasha writes {SCHEMA_VERSION}; "
                               "delete the cache folder to rebuild it")

    def _check_ours(self) -> None:
        """Refuse a database akasha did not create (ConfigError, nothing written): akasha only writes to its own.

        A new (empty) database is akasha's; an existing one is when its ``meta`` table holds the
        ``schema`` row every akasha release writes first, whatever tables it has.
        """
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return
        ours = "meta" in tables and bool(self._db.execute("SELECT 1 FROM meta WHERE key = 'schema'").fetchall())
        if not ours:
            self._db.close()
            from akasha.errors import ConfigError

            raise ConfigError(f"{self.path} is a database akasha did not create (it has tables "
                              f"{', '.join(sorted(tables)[:5])} but no akasha schema row); akasha never writes "
                              "into or prunes another program's data: point cache_dir at another folder, or move "
                              "that file away")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------ transactions
    def _storage_error(self, exc: BaseException) -> Exception:
        from pathlib import Path

        from akasha.index.paths import storage_error

        return storage_error(Path(self.path).parent if self.path != ":memory:" else self.path, exc)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``with manifest.transaction() as db:`` runs statements in one atomic commit."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._storage_error(exc) from exc
            try:
                yield self._db
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):  # sqlite may have rolled back: the first error wins
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):  # a write refused inside the transaction (read-only, disk full)
                    raise self._storage_error(exc) from exc
                raise
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as failure:
                if self._db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise self._storage_error(failure) from failure

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.DatabaseError as exc:  # "database disk image is malformed": say what to do
                raise self._storage_error(exc) from exc

    def _query_in(self, sql: str, args: Sequence[Any], keys: Iterable[str]) -> Iterator[tuple[Any, ...]]:
        """The rows of ``sql`` (``{marks}``: the placeholders of ``keys``, last) over ``keys``, 500 at a time."""
        for part in batches(list(dict.fromkeys(keys)), 500):
            yield from self._query(sql.format(marks=",".join("?" * len(part))), [*args, *part])

    # -------------------------------------------------------------------- meta
    def get_meta(self, key: str) -> str | None:
        """A value akasha keeps about the cache itself (``last:<namespace>``: the source committed last)."""
        rows = self._query("SELECT value FROM meta WHERE key=?", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Keep ``value`` under ``key`` (one atomic statement; safe beside other processes' writes)."""
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -------------------------------------------------------------- stat cache
    def stat_cache(self) -> dict[str, tuple[int, int, str, int | None, int | None]]:
        """path -> (size, mtime_ns, file_hash, ctime_ns, inode) for every file seen before (None: not recorded)."""
        return {p: (s, m, h, c, i) for p, s, m, h, c, i in
                self._query("SELECT path, size, mtime_ns, file_hash, ctime_ns, inode FROM files")}

    def remember_stats(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Store ``(path, size, mtime_ns, file_hash, ctime_ns, inode)`` rows (the last two may be left out)."""
        rows = [tuple(row) + (None,) * (6 - len(row)) for row in rows]
        if rows:
            with self.transaction() as db:
                db.executemany("INSERT OR REPLACE INTO files (path, size, mtime_ns, file_hash, ctime_ns, inode) "
                               "VALUES (?, ?, ?, ?, ?, ?)", rows)

    # ------------------------------------------------------------------ chunks
    def parsed_status(self, settings: str) -> dict[str, tuple[str, str | None]]:
        """file_hash -> (status, reason) for every file parsed with ``settings``."""
        rows = self._query("SELECT file_hash, status, reason FROM parsed WHERE settings=?", (settings,))
        return {h: (s, r) for h, s, r in rows}

    def parsed_status_of(self, settings: str, file_hashes: Sequence[str]) -> dict[str, tuple[str, str | None]]:
        """:meth:`parsed_status` for these file hashes only (a few documents need not read every row)."""
        return {h: (s, r) for h, s, r in self._query_in(
            "SELECT file_hash, status, reason FROM parsed WHERE settings=? AND file_hash IN ({marks})", [settings],
            file_hashes)}

    def store_parsed(self, file_hash: str, settings: str, chunks: Sequence[StoredChunk],
                     status: str = "ok", reason: str | None = None) -> None:
        """Record one file's chunks (or why it was skipped) in one commit."""
        with self.transaction() as db:
            db.execute("DELETE FROM chunks WHERE file_hash=? AND settings=?", (file_hash, settings))
            db.executemany(
                "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?)",
                [(file_hash, settings, seq, th, text, json.dumps(meta, ensure_ascii=False, default=str))
                 for seq, th, text, meta in chunks],
            )
            db.execute("INSERT OR REPLACE INTO parsed VALUES (?, ?, ?, ?, ?)",
                       (file_hash, settings, status, reason, len(chunks)))

    def load_chunks_many(self, file_hashes: Sequence[str], settings: str) -> dict[str, list[StoredChunk]]:
        """The stored chunks of many files, in order, in a few queries (a fresh process loads a whole corpus)."""
        out: dict[str, list[StoredChunk]] = {h: [] for h in file_hashes}
        for file_hash, seq, text_hash, text, meta in self._query_in(
                "SELECT file_hash, seq, text_hash, text, metadata FROM chunks WHERE settings=? "
                "AND file_hash IN ({marks}) ORDER BY file_hash, seq", [settings], out):
            out[file_hash].append((seq, text_hash, text, json.loads(meta)))
        return out

    # -------------------------------------------------------------- embeddings
    def cached_hashes(self, model: str, text_hashes: Sequence[str], width: int | None = None) -> set[str]:
        """The subset of ``text_hashes`` that already has a vector for ``model`` (of ``width``, when given)."""
        dim = " AND dim=?" if width is not None else ""
        return {r[0] for r in self._query_in(f"SELECT text_hash FROM embeddings WHERE model=?{dim} "
                                             "AND text_hash IN ({marks})", [model, *([width] if dim else [])],
                                             text_hashes)}

    def load_vectors(self, model: str, text_hashes: Sequence[str], width: int | None = None) -> dict[str, np.ndarray]:
        """The cached vectors of ``text_hashes`` for ``model``; with ``width``, only those of that width (a vector
        of another width, left by a misbehaving server, is as good as missing: it is embedded again)."""
        out: dict[str, np.ndarray] = {}
        for th, blob in self._query_in("SELECT text_hash, vector FROM embeddings WHERE model=? AND text_hash IN "
                                       "({marks})", [model], text_hashes):
            vector = np.frombuffer(blob, dtype=np.float32)
            if width is None or vector.shape[0] == width:
                out[th] = vector
        return out

    def common_width(self, model: str) -> int | None:
        """The width most of ``model``'s cached vectors have, or None when none is cached."""
        rows = self._query("SELECT dim, count(*) AS n FROM embeddings WHERE model=? GROUP BY dim ORDER BY n DESC "
                           "LIMIT 1", (model,))
        return int(rows[0][0]) if rows else None

    def sample_vectors(self, model: str, count: int) -> tuple[list[str], np.ndarray]:
        """Up to ``count`` cached chunk texts with their vectors for ``model`` (to check whose vectors they are)."""
        rows = self._query("SELECT c.text, e.vector FROM embeddings e JOIN chunks c ON c.text_hash = e.text_hash "
                           "WHERE e.model = ? LIMIT ?", (model, int(count)))
        rows = [r for r in rows if len(r[1]) == len(rows[0][1])] if rows else []
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [r[0] for r in rows], np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])

    def store_vectors(self, model: str, text_hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Commit one batch of vectors (so a later failure never loses them)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._store_embeddings([(model, th, int(vec.shape[0]), vec.tobytes())
                                for th, vec in zip(text_hashes, vectors, strict=True)])

    def store_passages(self, model: str, text_hashes: Sequence[str], blobs: Sequence[bytes], dimension: int) -> None:
        """Commit the packed passage vectors of texts (:func:`akasha.retrieval.passages.pack`) under
        ``passage_model(model)``, so pruning and content keying treat them as the texts' vectors."""
        self._store_embeddings([(passage_model(model), th, int(dimension), blob)
                                for th, blob in zip(text_hashes, blobs, strict=True) if blob])

    def _store_embeddings(self, rows: list[tuple[str, str, int, bytes]]) -> None:
        with self.transaction() as db:
            db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)

    def load_passages(self, model: str, text_hashes: Sequence[str]) -> dict[str, bytes]:
        """The packed passage vectors stored for ``text_hashes`` (texts without any are left out)."""
        return {th: bytes(blob) for th, blob in self._query_in(
            "SELECT text_hash, vector FROM embeddings WHERE model=? AND text_hash IN ({marks})", [passage_model(model)],
            text_hashes)}

    # ----------------------------------------------------------------- corpora
    def last_source(self, namespace: str) -> str | None:
        """The source committed last in ``namespace`` (None when none was); for a cache written before that
        was recorded, the row with the largest rowid (every commit is an INSERT OR REPLACE)."""
        recorded = self.get_meta(f"last:{namespace}")
        if recorded is not None:
            return recorded
        rows = self._query("SELECT source_key FROM corpora WHERE namespace=? ORDER BY rowid DESC LIMIT 1", (namespace,))
        return rows[0][0] if rows else None

    def corpus(self, source_key: str, namespace: str) -> tuple[str, dict[str, str], str | None] | None:
        """(state_key, {path: file_hash}, snapshot name) last committed for this source, or None."""
        rows = self._query("SELECT state_key, files, snapshot FROM corpora WHERE source_key=? AND namespace=?",
                           (source_key, namespace))
        if not rows:
            return None
        state, files, snapshot = rows[0]
        return state, json.loads(files), snapshot

    def adopt_namespace(self, earlier: str, namespace: str) -> bool:
        """Give ``namespace`` the corpora committed under ``earlier`` when it has none; True when it did.

        For a change of lexical rules only (the namespace ends with the tokenizer id): files, chunks and
        vectors are the same. Snapshots are not carried over: their BM25 terms follow the earlier rules.
        """
        has = "SELECT 1 FROM corpora WHERE namespace=? LIMIT 1"
        if self._query(has, (namespace,)) or not self._query(has, (earlier,)):
            return False  # the usual case, read only: no write lock taken when a process opens its index
        with self.transaction() as db:
            if db.execute(has, (namespace,)).fetchone():  # another process adopted it meanwhile
                return False
            moved = db.execute("INSERT INTO corpora SELECT source_key, ?, state_key, files, NULL FROM corpora "
                               "WHERE namespace=?", (namespace, earlier)).rowcount
            last = db.execute("SELECT value FROM meta WHERE key=?", (f"last:{earlier}",)).fetchone()
            if last is not None:
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"last:{namespace}", last[0]))
        return moved > 0

    def snapshots_in_use(self) -> set[str]:
        return {r[0] for r in self._query("SELECT snapshot FROM corpora WHERE snapshot IS NOT NULL")}

    def store_corpus(self, source_key: str, namespace: str, state_key: str, files: dict[str, str],
                     snapshot: str | None) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO corpora VALUES (?, ?, ?, ?, ?)",
                       (source_key, namespace, state_key, json.dumps(files, ensure_ascii=False), snapshot))
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"last:{namespace}", source_key))

    # ----------------------------------------------------------------- pruning
    def prune(self, path_exists: Any) -> dict[str, int]:
        """Forget what no committed corpus uses, in one transaction; returns the rows removed per kind.

        Kept: the chunks of every file version some corpus (any source, embedder or chunk settings)
        was last committed with, and the vectors of their texts. Removed: older file versions' chunks
        and parse results, other vectors, and stat-cache rows of paths ``path_exists`` says are gone.
        """
        keep = {h for (files,) in self._query("SELECT files FROM corpora") for h in json.loads(files).values()}
        gone_paths = [(p,) for (p,) in self._query("SELECT path FROM files") if not path_exists(p)]
        with self.transaction() as db:
            db.execute("CREATE TEMP TABLE IF NOT EXISTS keep_files (file_hash TEXT PRIMARY KEY)")
            db.execute("DELETE FROM keep_files")
            db.executemany("INSERT OR IGNORE INTO keep_files VALUES (?)", [(h,) for h in keep])
            db.executemany("DELETE FROM files WHERE path=?", gone_paths)
            counts = {"stat_rows": len(gone_paths)}
            counts["chunks"] = db.execute(
                "DELETE FROM chunks WHERE file_hash NOT IN (SELECT file_hash FROM keep_files)").rowcount
            # A parse result goes with its chunks; only "skipped" results of versions still on disk stay
            # (an unreadable file is not re-read every sync).
            counts["file_versions"] = db.execute(
                "DELETE FROM parsed WHERE file_hash NOT IN (SELECT file_hash FROM keep_files) "
                "AND (status = 'ok' OR file_hash NOT IN (SELECT file_hash FROM files))").rowcount
            counts["vectors"] = db.execute(
                "DELETE FROM embeddings WHERE text_hash NOT IN (SELECT text_hash FROM chunks)").rowcount
            db.execute("DROP TABLE keep_files")
        return counts

    def vacuum(self) -> None:
        """Give the space of deleted rows back to the file system (rewrites the database)."""
        with self._lock:
            try:
                self._db.execute("VACUUM")
                if self.path != ":memory:":
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                raise self._storage_error(exc) from exc


def passage_model(model: str) -> str:
    """The ``embeddings`` table's model key of ``model``'s passage vectors (never an embedder's own name)."""
    return f"{model} #passages-{PASSAGE_TOKENS}/{PASSAGE_STRIDE}"
