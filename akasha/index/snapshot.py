"""Search-structure snapshots: reload BM25 and vectors without re-tokenising.

A snapshot is one ``.npz`` (numpy arrays only, loaded with
``allow_pickle=False``) named after the corpus state it describes, so a
snapshot can never be applied to another corpus. It holds the chunk ids in
order, the normalised vector matrix, :meth:`BM25Index.to_arrays` and, when given,
the chunks themselves (id, text, metadata) as one UTF-8 JSON document, so a new
process reloads an unchanged corpus with one file read and one JSON parse.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from akasha.index.paths import atomic_write
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex
from akasha.types import Chunk

log = logging.getLogger(__name__)


def write_snapshot(
    path: Path, state_key: str, bm25: BM25Index, dense: DenseIndex, chunks: Mapping[str, Chunk] | None = None
) -> None:
    """Atomically write the search structures (and ``chunks``, if given) for ``state_key`` to ``path``."""
    arrays = bm25.to_arrays()
    if chunks is not None:
        rows = [[c.id, c.text, c.metadata] for c in chunks.values()]
        blob = json.dumps(rows, ensure_ascii=False, default=str).encode("utf-8")
        arrays["chunks_json"] = np.frombuffer(blob, dtype=np.uint8)
    ids = dense.ids
    arrays["state_key"] = np.array([state_key])
    arrays["dense_ids"] = np.array(ids, dtype=str) if ids else np.zeros(0, dtype="<U1")
    arrays["dense_matrix"] = np.ascontiguousarray(dense.matrix(), dtype=np.float32)
    atomic_write(path, lambda handle: np.savez(handle, **arrays))


def read_snapshot(
    path: Path, state_key: str
) -> tuple[BM25Index, DenseIndex, dict[str, Chunk] | None] | None:
    """(bm25, dense, chunks or None) stored at ``path`` if it exists and describes ``state_key``, else None."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            if str(data["state_key"][0]) != state_key:
                return None
            arrays = {name: data[name] for name in data.files}
        bm25 = BM25Index.from_arrays(arrays)
        matrix = arrays["dense_matrix"]
        dense = DenseIndex.from_matrix(arrays["dense_ids"].tolist(), matrix, normalized=True)
        if matrix.shape[0] == 0:
            dense = DenseIndex()
        chunks = None
        if "chunks_json" in arrays:
            rows = json.loads(arrays["chunks_json"].tobytes().decode("utf-8"))
            chunks = {chunk_id: Chunk(chunk_id, text, meta) for chunk_id, text, meta in rows}
        return bm25, dense, chunks
    except Exception as exc:  # a damaged snapshot is only a cache: rebuild instead
        log.warning("ignoring unreadable index snapshot %s (%s); rebuilding from the manifest", path, exc)
        return None
