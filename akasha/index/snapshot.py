"""Search-structure snapshots: reload BM25, vectors and chunks with two reads and no re-tokenising.

A snapshot is one ``.snap`` file named after the corpus state it describes, so
a snapshot can never be applied to another corpus. Layout (all little-endian)::

    b"AKSNAP" + format version (2 bytes)
    header length (8 bytes), header (UTF-8 JSON: state key, where each part lies)
    JSON parts    row ids, BM25 ids and vocabulary ...
    chunk records one ``[text, metadata]`` JSON document per chunk, back to back
    array parts   numpy arrays as raw bytes, each 64-byte aligned (incl. record ends)

Not ``.npz``: a zip archive costs a lookup, a parse and a copy per array and stores strings
as UTF-32. Here each JSON part is one read and one ``json.loads``, the arrays one ``readinto``
into a buffer they view without copying, and chunk records stay bytes until a search returns
them (:class:`~akasha.index.lazy_chunks.LazyChunks`). Nothing is ever unpickled.

A snapshot is a cache trusted only as far as it can be checked: the header records the
CRC-32 of every part and array, every size and offset is checked against the file's length
before anything is allocated (a header that claims a 6 GB array is refused, not obeyed), and
shapes must match byte counts. Any mismatch makes :func:`read_snapshot` log one warning and
return None; the index rebuilds from the SQLite manifest (nothing re-embedded). CRC-32 finds
damage, not a forger (see docs/threat-model.md).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import struct
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, BinaryIO

import numpy as np

from akasha.background import Background
from akasha.fs import atomic_write
from akasha.index.lazy_chunks import LazyChunks
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex
from akasha.types import Chunk

log = logging.getLogger(__name__)

SUFFIX = ".snap"
_MAGIC = b"AKSNAP"
_VERSION = 2  # 2: CRC-32 of every part in the header
_PREAMBLE = struct.Struct("<6sHQ")  # magic, version, header length
_ALIGN = 64
_DTYPES = {"uint8": "|u1", "int8": "|i1", "int32": "<i4", "int64": "<i8", "float32": "<f4"}
_RECORDS = "chunk_records"
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)  # one encoder: json.dumps(**options) builds one per call


#: Names akasha gives snapshots (``<embedder slug>-<32 hex>.snap``, older ``.npz``) and their temp files.
_OWN_NAME = re.compile(r"[A-Za-z0-9_.-]{1,40}-[0-9a-f]{32}\.(?:snap|npz)")
_OWN_TEMP = re.compile(r"\.([A-Za-z0-9_.-]{1,40}-[0-9a-f]{32}\.(?:snap|npz))\.[A-Za-z0-9_]+\.tmp")


def is_own_file(path: Path) -> bool:
    """True only for a file akasha wrote into a snapshots folder: a snapshot or a temp file of one.

    The name must match akasha's pattern and the file start with the snapshot magic (or a zip's), so a
    user's own ``*.npz`` or ``*.snap`` there (a cache folder pointed at the wrong place) is never deleted.
    """
    name = path.name
    if _OWN_TEMP.fullmatch(name):
        return True
    if not _OWN_NAME.fullmatch(name):
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(len(_MAGIC))
    except OSError:
        return False
    # an .npz from an older akasha is a zip archive
    return head == _MAGIC or (name.endswith(".npz") and head.startswith(b"PK\x03\x04"))


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
    # Computed here, at indexing time, if not yet, so a later process's first search need not.
    neighbours = dense.neighbour_state()
    if neighbours is not None:
        arrays["dense_hub_cosines"] = np.ascontiguousarray(neighbours[0], dtype=np.float32)
        arrays["dense_hub_rows"] = np.ascontiguousarray(neighbours[1], dtype=np.int64)
    passages = dense.passage_state()
    if passages is not None:
        arrays["passage_codes"] = np.ascontiguousarray(passages[0], dtype=np.int8)
        arrays["passage_scales"] = np.ascontiguousarray(passages[1], dtype=np.float32)
        arrays["passage_counts"] = np.ascontiguousarray(passages[2], dtype=np.int64)
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


def _write(handle: IO[bytes], state_key: str, blobs: dict[str, bytes], raw: set[str],
           arrays: dict[str, np.ndarray]) -> None:
    layout: dict[str, Any] = {"state_key": state_key, "json": {}, "raw": {}, "arrays": {}, "crc32": {}}
    offset = 0
    for name, blob in blobs.items():
        layout["raw" if name in raw else "json"][name] = [offset, len(blob)]
        layout["crc32"][name] = zlib.crc32(blob)
        offset += len(blob)
    array_offset = 0
    for name, array in arrays.items():
        kind = _DTYPES.get(array.dtype.name)
        if kind is None:
            raise TypeError(f"snapshot array {name!r} has dtype {array.dtype}; expected one of {sorted(_DTYPES)}")
        layout["arrays"][name] = [kind, list(array.shape), array_offset, array.nbytes]
        little = arrays[name] = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))  # written below
        layout["crc32"][name] = zlib.crc32(little.reshape(-1).view(np.uint8).data)
        array_offset += _aligned(array.nbytes)
    header = json.dumps(layout).encode("utf-8")
    layout_size = _PREAMBLE.size + len(header) + offset
    start = _aligned(layout_size)
    handle.write(_PREAMBLE.pack(_MAGIC, _VERSION, len(header)))
    handle.write(header)
    for blob in blobs.values():
        handle.write(blob)
    handle.write(b"\0" * (start - layout_size))
    for little in arrays.values():
        handle.write(little.reshape(-1).view(np.uint8).data)  # a memoryview: no copy, even for a 1.5 GB matrix
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
        neighbours = (arrays["dense_hub_cosines"], arrays["dense_hub_rows"]) if "dense_hub_rows" in arrays else None
        passages = (arrays["passage_codes"], arrays["passage_scales"], arrays["passage_counts"]) \
            if "passage_counts" in arrays else None
        dense = DenseIndex.from_matrix(texts["dense_ids"], matrix, normalized=True, neighbours=neighbours,
                                       passages=passages) if len(matrix) else DenseIndex()
        chunks = None
        if _RECORDS in texts:
            chunks = LazyChunks.from_records(texts["dense_ids"], texts[_RECORDS], arrays["chunk_ends"])
        return bm25, dense, chunks
    except FileNotFoundError:
        return None
    except OlderSnapshotError as exc:
        log.info("index snapshot %s %s; rebuilding it from the manifest", path, exc)
        return None
    except Exception as exc:  # a damaged snapshot is only a cache: rebuild instead
        log.warning("ignoring unreadable index snapshot %s (%s: %s); rebuilding from the manifest", path,
                    type(exc).__name__, exc)
        return None


class OlderSnapshotError(ValueError):
    """A snapshot written by an older akasha (rebuilt quietly, nothing re-embedded)."""


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise ValueError(what)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _read(handle: BinaryIO, state_key: str) -> tuple[dict[str, Any] | None, dict[str, np.ndarray]]:
    file_size = os.fstat(handle.fileno()).st_size
    preamble = handle.read(_PREAMBLE.size)
    _check(len(preamble) == _PREAMBLE.size, "the file is shorter than a snapshot header (truncated)")
    magic, version, header_size = _PREAMBLE.unpack(preamble)
    _check(magic == _MAGIC, f"not an akasha snapshot: starts with {magic!r}")
    if version < _VERSION:
        raise OlderSnapshotError(f"has an older format (v{version})")
    _check(version == _VERSION, f"snapshot format v{version} is newer than this akasha reads (v{_VERSION})")
    _check(header_size <= file_size - _PREAMBLE.size,
           f"its header claims {header_size} bytes; the file has {file_size}")
    layout = json.loads(handle.read(header_size))
    sections = ("json", "raw", "arrays", "crc32")
    _check(isinstance(layout, dict) and all(isinstance(layout.get(k), dict) for k in sections),
           "its header is not a snapshot layout")
    if layout.get("state_key") != state_key:
        return None, {}
    checksums = layout["crc32"]
    parts = []
    for kind in ("json", "raw"):
        for name, place in layout[kind].items():
            _check(isinstance(place, list) and len(place) == 2 and all(map(_int, place)), f"part {name!r} has no place")
            parts.append((place[0], place[1], name, kind == "raw"))
    parts.sort()
    layout_size = _PREAMBLE.size + header_size + sum(size for _offset, size, _name, _raw in parts)
    _check(layout_size <= file_size, f"its parts claim {layout_size} bytes; the file has {file_size} (truncated?)")
    start = _aligned(layout_size)
    arrays_layout = layout["arrays"]
    total = 0
    for name, spec in arrays_layout.items():
        _check(isinstance(spec, list) and len(spec) == 4, f"array {name!r} has no layout")
        kind, shape, offset, nbytes = spec
        _check(kind in _DTYPES.values(), f"array {name!r} has an unknown type {kind!r}")
        _check(isinstance(shape, list) and all(map(_int, shape)) and _int(offset) and _int(nbytes),
               f"array {name!r} has a bad shape or place")
        _check(int(np.prod(shape, dtype=np.float64)) * np.dtype(kind).itemsize == nbytes,
               f"array {name!r}: shape {shape} does not hold {nbytes} bytes")
        _check(offset == total, f"array {name!r} is not where the header says")
        total += _aligned(nbytes)
    # Sizes are checked against the file before anything is allocated: a header cannot make us allocate 6 GB.
    _check(start + total <= file_size, f"its arrays claim {total} bytes; the file has {max(file_size - start, 0)} "
                                       "after its header (truncated or edited)")
    # The arrays (most of the bytes) are read and checksummed on a second thread while this one parses the
    # JSON parts: positional reads and zlib.crc32 release the GIL, so the checksums cost no extra time.
    read_arrays = functools.partial(_read_arrays, handle.fileno(), start, total, arrays_layout, checksums)
    pending = Background(read_arrays, "akasha-snapshot-read") if parts and hasattr(os, "preadv") else None
    try:
        texts: dict[str, Any] = {}
        expected = 0
        for offset, size, name, is_raw in parts:  # back to back, in file order
            _check(offset == expected, f"part {name!r} is not where the header says")
            expected += size
            blob = handle.read(size)
            _check(len(blob) == size, "the file is shorter than its header says (truncated)")
            _check(zlib.crc32(blob) == checksums.get(name), f"part {name!r} fails its checksum (damaged or edited)")
            texts[name] = blob if is_raw else json.loads(blob)
    finally:  # without a second thread the arrays are read now, after the parts (one file position)
        arrays = pending.result() if pending is not None else read_arrays()
    return texts, arrays


def _read_arrays(fd: int, start: int, total: int, layout: dict[str, Any], checksums: dict[str, Any]
                 ) -> dict[str, np.ndarray]:
    """Read a snapshot's array section into one writable buffer and check every array's CRC-32."""
    # np.empty, not bytearray: no zero-fill pass over memory the read overwrites anyway. The arrays stay
    # writable, so the indexes can update them in place later.
    buffer = np.empty(total, dtype=np.uint8)
    view = buffer.data  # a memoryview over the array
    _check(_read_at(fd, view, start) == total, "the file is shorter than its header says (truncated)")
    arrays = {}
    for name, (kind, shape, offset, nbytes) in layout.items():
        _check(zlib.crc32(view[offset : offset + nbytes]) == checksums.get(name),
               f"array {name!r} fails its checksum (damaged or edited)")
        arrays[name] = buffer[offset : offset + nbytes].view(kind).reshape(shape)
    return arrays


def _read_at(fd: int, view: memoryview, offset: int) -> int:
    """Fill ``view`` from ``fd`` at ``offset``; positional reads where the platform has them (threads share ``fd``)."""
    done, positional = 0, hasattr(os, "preadv")
    if not positional:
        os.lseek(fd, offset, os.SEEK_SET)
    while done < len(view):
        got = os.preadv(fd, [view[done:]], offset + done) if positional else os.readv(fd, [view[done:]])
        if got <= 0:
            break
        done += got
    return done
