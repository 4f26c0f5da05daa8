"""Search-structure snapshots: reload BM25 and vectors without re-tokenising.

A snapshot is one ``.npz`` (numpy arrays only, loaded with
``allow_pickle=False``) named after the corpus state it describes, so a
snapshot can never be applied to another corpus. It holds the chunk ids in
order, the normalised vector matrix and :meth:`BM25Index.to_arrays`.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from akasha.index.paths import atomic_write
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex

log = logging.getLogger(__name__)


def write_snapshot(path: Path, state_key: str, bm25: BM25Index, dense: DenseIndex) -> None:
    """Atomically write the search structures for ``state_key`` to ``path``."""
    arrays = bm25.to_arrays()
    ids = dense.ids
    arrays["state_key"] = np.array([state_key])
    arrays["dense_ids"] = np.array(ids, dtype=str) if ids else np.zeros(0, dtype="<U1")
    arrays["dense_matrix"] = np.ascontiguousarray(dense.matrix(), dtype=np.float32)
    atomic_write(path, lambda handle: np.savez(handle, **arrays))


def read_snapshot(path: Path, state_key: str) -> tuple[BM25Index, DenseIndex] | None:
    """The structures stored at ``path`` if it exists and describes ``state_key``, else None."""
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
        return bm25, dense
    except Exception as exc:  # a damaged snapshot is only a cache: rebuild instead
        log.warning("ignoring unreadable index snapshot %s (%s); rebuilding from the manifest", path, exc)
        return None
