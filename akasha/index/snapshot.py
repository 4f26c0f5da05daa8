"""Search-structure snapshots: reload BM25, vectors and chunks with two reads and no re-tokenising.

A snapshot is one ``.snap`` file named after the corpus state it describes, so
a snapshot can never be applied to another corpus. Layout (all little-endian)::

    b"AKSNAP" + format version (2 bytes)
    header length (8 bytes), header (UTF-8 JSON: state key, where each part lies)
    JSON parts    row ids, BM25 ids and vocabulary ...
    chunk records one ``[text, metadata]`` JSON document per chunk, back to back
    array parts   numpy arrays as raw bytes, each 64-byte aligned (incl. record ends)

Why not ``.npz``: a zip archive costs a member lookup, a header parse and a copy
per array, and string arrays are stored as fixed-width UTF-32, so a fresh
process spent most of an unchanged re-run unpacking it. Here each JSON part
comes back with one read and one ``json.loads``, the arrays with one
``readinto`` into a single buffer that they then view without copying, and the
chunk records are kept as bytes and parsed one by one when a search returns
them (:class:`~akasha.index.lazy_chunks.LazyChunks`): a re-run of a 100,000-chunk corpus builds no chunk
objects at all. Nothing is ever unpickled: the header is JSON, the arrays are
plain numbers.
"""

from __future__ import annotations

import json
import logging
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from akasha.index.lazy_chunks import LazyChunks
from akasha.index.paths import atomic_write
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex
from akasha.types import Chunk

log = logging.getLogger(__name__)

SUFFIX = ".snap"
_MAGIC = b"AKSNAP"
_VERSION = 1
_PREAMBLE = struct.Struct("<6sHQ")  # magic, version, header length
_ALIGN = 64
_DTYPES = {"uint8": "|u1", "int32": "<i4", "int64": "<i8", "float32": "<f4"}
_RECORDS = "chunk_records"
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)  # one encoder: json.dumps(**options) builds one per call


def _aligned(size: int) -> int:
    """``size`` rounded up to the next multiple of the array alignment."""
    return -(-size // _ALIGN) * _ALIGN


def write_snapshot(
    path: Path, state_key: str, bm25: BM25Index, dense: DenseIndex, chunks: Mapping[str, Chunk] | None = None
) -> None:
    """Atomically write the search structures (and ``chunks``, if given) for ``state_key`` to ``path``."""
    parts = bm25.to_parts()
    texts: dict[str, Any] = {name: value for name, value in parts.items() if not isinstance(value, np.ndarray)}
    arrays = {name: value for name, value in parts.items() if isinstance(value, np.ndarray)}
    ids = dense.ids
    texts["dense_ids"] = ids
    arrays["dense_matrix"] = np.ascontiguousarray(dense.matrix(), dtype=np.float32)
    blobs = {name: _ENCODER.encode(value).encode("utf-8") for name, value in texts.items()}
    raw = set()
    # Chunks are stored in row order, one record each; a mapping that does not match the rows is left out
    # (the index then reads the chunks from the manifest), never stored half.
    if chunks is not None and len(chunks) == len(ids) and all(i in chunks for i in ids):
        stored = chunks.raw_record if isinstance(chunks, LazyChunks) else lambda _id: None
        records = [stored(i) or _ENCODER.encode([chunks[i].text, chunks[i].metadata]).encode("utf-8") for i in ids]
        blobs[_RECORDS] = b"".join(records)
        arrays["chunk_ends"] = np.cumsum([len(r) for r in records], dtype=np.int64)
        raw.add(_RECORDS)
    atomic_write(path, lambda handle: _write(handle, state_key, blobs, raw, arrays))


def _write(handle: BinaryIO, state_key: str, blobs: dict[str, bytes], raw: set[str],
           arrays: dict[str, np.ndarray]) -> None:
    layout: dict[str, Any] = {"state_key": state_key, "json": {}, "raw": {}, "arrays": {}}
    offset = 0
    for name, blob in blobs.items():
        layout["raw" if name in raw else "json"][name] = [offset, len(blob)]
        offset += len(blob)
    array_offset = 0
    for name, array in arrays.items():
        kind = _DTYPES.get(array.dtype.name)
        if kind is None:
            raise TypeError(f"snapshot array {name!r} has dtype {array.dtype}; expected one of {sorted(_DTYPES)}")
        layout["arrays"][name] = [kind, list(array.shape), array_offset, array.nbytes]
        array_offset += _aligned(array.nbytes)
    header = json.dumps(layout).encode("utf-8")
    layout_size = _PREAMBLE.size + len(header) + offset
    start = _aligned(layout_size)
    handle.write(_PREAMBLE.pack(_MAGIC, _VERSION, len(header)))
    handle.write(header)
    for blob in blobs.values():
        handle.write(blob)
    handle.write(b"\0" * (start - layout_size))
    for array in arrays.values():
        little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
        handle.write(memoryview(little.reshape(-1).view(np.uint8)))  # no copy, even for a 1.5 GB matrix
        handle.write(b"\0" * (_aligned(little.nbytes) - little.nbytes))


def read_snapshot(
    path: Path, state_key: str
) -> tuple[BM25Index, DenseIndex, Mapping[str, Chunk] | None] | None:
    """(bm25, dense, chunks or None) stored at ``path`` if it exists and describes ``state_key``, else None."""
    if path.suffix != SUFFIX:  # an older format (.npz): rebuilt from the manifest, nothing re-embedded
        log.info("index snapshot %s has an older format; rebuilding it from the manifest", path)
        return None
    try:
        with path.open("rb") as handle:
            texts, arrays = _read(handle, state_key)
        if texts is None:
            return None
        bm25 = BM25Index.from_parts({**texts, **arrays})
        matrix = arrays["dense_matrix"]
        dense = DenseIndex.from_matrix(texts["dense_ids"], matrix, normalized=True) if len(matrix) else DenseIndex()
        chunks = None
        if _RECORDS in texts:
            chunks = LazyChunks.from_records(texts["dense_ids"], texts[_RECORDS], arrays["chunk_ends"])
        return bm25, dense, chunks
    except FileNotFoundError:
        return None
    except Exception as exc:  # a damaged snapshot is only a cache: rebuild instead
        log.warning("ignoring unreadable index snapshot %s (%s); rebuilding from the manifest", path, exc)
        return None


def _read(handle: BinaryIO, state_key: str) -> tuple[dict[str, Any] | None, dict[str, np.ndarray]]:
    magic, version, header_size = _PREAMBLE.unpack(handle.read(_PREAMBLE.size))
    if magic != _MAGIC or version != _VERSION:
        raise ValueError(f"not an akasha snapshot (v{_VERSION}): starts with {magic!r}, version {version}")
    layout = json.loads(handle.read(header_size))
    if layout["state_key"] != state_key:
        return None, {}
    parts = sorted([(offset, size, name, name in layout["raw"]) for kind in ("json", "raw")
                    for name, (offset, size) in layout[kind].items()])
    texts: dict[str, Any] = {}
    for _offset, size, name, is_raw in parts:  # back to back, in file order
        blob = handle.read(size)
        if len(blob) != size:
            raise ValueError("the file is shorter than its header says (truncated)")
        texts[name] = blob if is_raw else json.loads(blob)
    layout_size = _PREAMBLE.size + header_size + sum(size for _offset, size, _name, _raw in parts)
    handle.seek(_aligned(layout_size))
    total = sum(_aligned(nbytes) for _kind, _shape, _offset, nbytes in layout["arrays"].values())
    buffer = bytearray(total)  # writable, so the indexes can update the arrays later
    if handle.readinto(buffer) != total:
        raise ValueError("the file is shorter than its header says (truncated)")
    arrays = {}
    for name, (kind, shape, offset, nbytes) in layout["arrays"].items():
        count = nbytes // np.dtype(kind).itemsize
        arrays[name] = np.frombuffer(buffer, dtype=kind, count=count, offset=offset).reshape(shape)
    return texts, arrays
