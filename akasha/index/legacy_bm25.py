"""Reading, once, the index folder an earlier akasha kept beside ``retrieval.bm25_path``.

Earlier releases kept the whole index in ``<bm25_path minus .json>.index/``. When that folder
exists and the JSON file does not, its last corpus (same chunk settings) is written as the
JSON file, so BM25 answers after the upgrade without re-ingesting. The folder is only read
and left as it is: its vectors stay reusable with ``build(spec, cache_dir=<that folder>)``.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

from akasha.index.bm25_file import write_bm25_file
from akasha.metadata import chunk_metadata
from akasha.types import Chunk

log = logging.getLogger(__name__)


def legacy_folder(bm25_file: Path) -> Path:
    """The folder an earlier release kept for ``bm25_file``: ``./x.bm25.json`` -> ``./x.bm25.index``."""
    stem = bm25_file.name[: -len(".json")] if bm25_file.name.endswith(".json") else bm25_file.name
    return bm25_file.with_name(f"{stem}.index")


def migrate_index_folder(bm25_file: Path, settings: str) -> bool:
    """Write ``bm25_file`` from the earlier release's folder beside it, when there is one and no file yet;
    True when it did. A folder without a corpus of these ``settings``, or unreadable, is logged (False)."""
    folder = legacy_folder(bm25_file)
    database = folder / "index.sqlite3"
    if bm25_file.exists() or not database.is_file():
        return False
    try:
        found = _last_corpus(database, settings)
    except (sqlite3.Error, ValueError) as exc:
        log.warning("could not read the index folder %s an earlier akasha wrote for retrieval.bm25_path (%s); "
                    "ingest the documents again to write %s", folder, exc, bm25_file)
        return False
    if found is None:
        log.warning("the index folder %s an earlier akasha wrote holds no corpus of these chunk settings; "
                    "ingest the documents again to write %s", folder, bm25_file)
        return False
    source, documents, chunks = found
    write_bm25_file(bm25_file, source=source, chunking=settings, documents=documents, chunks=chunks)
    log.warning("retrieval.bm25_path: wrote %s (%d chunks) from the index folder %s an earlier akasha kept; "
                "akasha no longer uses that folder and has not changed it: pass build(spec, cache_dir=%r) to "
                "keep reusing its vectors, or delete it", bm25_file, len(chunks), folder, str(folder))
    return True


def _last_corpus(database: Path, settings: str) -> tuple[str, dict[str, str], list[Chunk]] | None:
    """(source key, documents, chunks) of the corpus committed last with these chunk settings, or None."""
    # immutable: SQLite creates no -wal/-shm file beside a database it only reads (the folder stays as it
    # was); a -wal file already there holds commits the main file lacks, so it is read the ordinary way.
    wal = database.with_name(database.name + "-wal").exists()
    connection = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro{'' if wal else '&immutable=1'}", uri=True)
    try:
        rows = connection.execute(
            "SELECT source_key, files FROM corpora WHERE instr(namespace, ?) > 0 ORDER BY rowid DESC LIMIT 1",
            (f"|{settings}|",)).fetchall()
        if not rows:
            return None
        source, documents = rows[0][0], json.loads(rows[0][1])
        if not isinstance(documents, dict):
            raise ValueError("its corpus row is not a mapping of documents")
        chunks: list[Chunk] = []
        for doc, content in documents.items():
            for seq, text, meta in connection.execute(
                    "SELECT seq, text, metadata FROM chunks WHERE file_hash=? AND settings=? ORDER BY seq",
                    (content, settings)):
                chunk_id = f"{doc}#{seq}"
                chunks.append(Chunk(chunk_id, text, chunk_metadata(json.loads(meta), doc, chunk_id)))
        return str(source), {str(k): str(v) for k, v in documents.items()}, chunks
    finally:
        connection.close()


__all__ = ["legacy_folder", "migrate_index_folder"]
