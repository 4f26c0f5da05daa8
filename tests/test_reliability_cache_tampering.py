"""Issue 14, items 7, 8 and 12: a damaged or edited cache, and files that lie about their edits.

Before: bytes garbled inside the snapshot's chunk records made every query raise
a bare JSONDecodeError on every run; altered vectors or texts were served
silently; a header claiming a 6 GB array allocated it; sqlite with garbage pages
said "database disk image is malformed" and nothing else; akasha deleted any
``*.npz`` in ``<cache_dir>/snapshots``; a same-size edit with the mtime put back
served the old text. After: checksums and size checks refuse the snapshot with
one warning and the index is rebuilt from the manifest (nothing re-embedded);
the database error says what to do; only akasha's own files are deleted; ctime
and inode join the stat cache.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from akasha.embeddings.hash import HashEmbedder
from akasha.errors import IndexWriteError
from akasha.index import CorpusIndex
from akasha.index.lazy_chunks import DamagedRecordError, LazyChunks
from akasha.index.snapshot import is_own_file, read_snapshot
from reliability_helpers import write_text_corpus

SETTINGS = {"chunk_size": 200, "chunk_overlap": 0}


def build(tmp_path: Path, n: int = 6) -> tuple[Path, Path, list[tuple[str, str]]]:
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_text_corpus(docs, n)
    index = CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS)
    index.sync(docs)
    expected = [(h.id, h.text) for h in index.search("file003 pump valve", k=5)]
    index.close()
    return docs, cache, expected


def snapshot_of(cache: Path) -> Path:
    (snap,) = (cache / "snapshots").glob("*.snap")
    return snap


def layout_of(data: bytes) -> tuple[dict, int]:
    _magic, _version, size = struct.unpack("<6sHQ", data[:16])
    return json.loads(data[16 : 16 + size]), 16 + size


def reopen_and_check(cache: Path, docs: Path, expected, caplog) -> CorpusIndex:
    """A new process: the damaged snapshot is refused once, the answers are the original ones, nothing embedded."""
    embedder = HashEmbedder()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="akasha"):
        index = CorpusIndex(embedder, cache_dir=cache, **SETTINGS)
        report = index.sync(docs)
        got = [(h.id, h.text) for h in index.search("file003 pump valve", k=5)]
    warnings = [r.getMessage() for r in caplog.records if "snapshot" in r.getMessage()]
    assert len(warnings) == 1 and "rebuilding from the manifest" in warnings[0], warnings
    assert (report.embedded, embedder.calls) == (0, 0)
    assert got == expected
    # the rebuilt snapshot was written back: the next process loads it without a word
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="akasha"):
        again = CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS)
        again.sync(docs)
        assert [(h.id, h.text) for h in again.search("file003 pump valve", k=5)] == expected
    assert not [r for r in caplog.records if "snapshot" in r.getMessage()]
    return index


def test_garbled_chunk_records_are_refused_once_and_rebuilt(tmp_path, caplog):
    docs, cache, expected = build(tmp_path)
    snap = snapshot_of(cache)
    data = bytearray(snap.read_bytes())
    layout, start = layout_of(bytes(data))
    offset, size = layout["raw"]["chunk_records"]
    middle = start + offset + size // 2
    data[middle : middle + 6] = b'"}]\x00{['  # broken JSON inside one record
    snap.write_bytes(bytes(data))
    reopen_and_check(cache, docs, expected, caplog)


def test_a_text_edited_inside_a_record_is_not_served(tmp_path, caplog):
    docs, cache, expected = build(tmp_path)
    snap = snapshot_of(cache)
    data = snap.read_bytes()
    target = expected[0][1][:20].encode()
    assert data.count(target) == 1
    snap.write_bytes(data.replace(target, target.upper()))  # same length, still valid JSON
    index = reopen_and_check(cache, docs, expected, caplog)
    assert all(c.text == c.text for c in index.chunks) and expected[0][1] in {c.text for c in index.chunks}


def test_altered_vectors_are_not_served(tmp_path, caplog):
    docs, cache, expected = build(tmp_path)
    snap = snapshot_of(cache)
    data = bytearray(snap.read_bytes())
    layout, start = layout_of(bytes(data))
    _kind, _shape, offset, nbytes = layout["arrays"]["dense_matrix"]
    base = -(-start // 64) * 64  # arrays start at the next 64-byte boundary after the parts
    base = -(-(start + sum(s for _o, s in [*layout["json"].values(), *layout["raw"].values()])) // 64) * 64
    matrix = np.frombuffer(bytes(data[base + offset : base + offset + nbytes]), dtype="<f4").copy()
    matrix[: len(matrix) // 2] = -matrix[: len(matrix) // 2]  # flip half the vectors
    data[base + offset : base + offset + nbytes] = matrix.tobytes()
    snap.write_bytes(bytes(data))
    reopen_and_check(cache, docs, expected, caplog)


def test_a_header_claiming_a_six_gigabyte_array_allocates_nothing(tmp_path, caplog):
    docs, cache, expected = build(tmp_path)
    snap = snapshot_of(cache)
    data = snap.read_bytes()
    layout, start = layout_of(data)
    kind, shape, offset, _nbytes = layout["arrays"]["dense_matrix"]
    rows = 6 * 2**30 // (4 * shape[1])
    layout["arrays"]["dense_matrix"] = [kind, [rows, shape[1]], offset, rows * shape[1] * 4]
    header = json.dumps(layout).encode()
    parts = data[start:]
    snap.write_bytes(data[:6] + struct.pack("<HQ", 2, len(header)) + header + parts)
    tracemalloc.start()
    try:
        assert read_snapshot(snap, layout["state_key"]) is None
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2**20, peak
    reopen_and_check(cache, docs, expected, caplog)


def test_a_header_claiming_a_huge_json_part_is_refused_before_reading(tmp_path):
    _docs, cache, _expected = build(tmp_path)
    snap = snapshot_of(cache)
    data = snap.read_bytes()
    layout, start = layout_of(data)
    name = next(iter(layout["json"]))
    layout["json"][name] = [layout["json"][name][0], 5 * 2**30]
    header = json.dumps(layout).encode()
    snap.write_bytes(data[:6] + struct.pack("<HQ", 2, len(header)) + header + data[start:])
    tracemalloc.start()
    try:
        assert read_snapshot(snap, layout["state_key"]) is None
        assert tracemalloc.get_traced_memory()[1] < 50 * 2**20
    finally:
        tracemalloc.stop()


def test_a_header_length_past_the_end_of_the_file_is_refused(tmp_path):
    _docs, cache, _expected = build(tmp_path)
    snap = snapshot_of(cache)
    data = snap.read_bytes()
    layout, _start = layout_of(data)
    snap.write_bytes(data[:8] + struct.pack("<Q", 2**40) + data[16:])
    assert read_snapshot(snap, layout["state_key"]) is None


def test_a_garbled_record_in_memory_raises_a_clear_error_not_json_decode_error():
    records = b'["fine", {}]' + b'["broken'
    ends = np.array([12, len(records)], dtype=np.int64)
    chunks = LazyChunks.from_records(["a#0", "a#1"], records, ends)
    assert chunks["a#0"].text == "fine"
    with pytest.raises(DamagedRecordError) as info:
        chunks["a#1"]
    assert "a#1" in str(info.value) and "snapshots" in str(info.value)
    with pytest.raises(DamagedRecordError):
        LazyChunks.from_records(["b#0"], b"[1, 2]", np.array([6], dtype=np.int64))["b#0"]


# -- sqlite with garbage pages -----------------------------------------------------------------


def test_garbage_pages_in_the_middle_of_the_database_give_a_hint(tmp_path):
    """One page of garbage at a time: each failure is an IndexWriteError saying what to do, never bare sqlite3."""
    import shutil
    import sqlite3

    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_text_corpus(docs, 40)
    with CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS) as index:
        index.sync(docs)
    database = cache / "index.sqlite3"  # closing checkpointed the write-ahead log into it
    original = database.read_bytes()
    page = int.from_bytes(original[16:18], "big") or 65536
    pages = len(original) // page
    assert pages > 12
    failures = 0
    for number in range(2, 14):
        data = bytearray(original)
        data[number * page : (number + 1) * page] = bytes((i * 37 + number) % 256 for i in range(page))
        database.write_bytes(bytes(data))
        shutil.rmtree(cache / "snapshots", ignore_errors=True)  # make the index read its tables
        try:
            with CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS) as index:
                index.sync(docs)
                index.search("file003 pump", k=3)
        except IndexWriteError as exc:
            failures += 1
            message = str(exc)
            assert str(cache) in message and "delete" in message and "index.sqlite3" in message, message
        except sqlite3.Error as exc:  # before: "database disk image is malformed", nothing else
            raise AssertionError(f"page {number}: bare {type(exc).__name__}: {exc}") from exc
    assert failures >= 5
    for name in ("index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm"):
        (cache / name).unlink(missing_ok=True)  # doing what the message says works
    assert CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS).sync(docs).indexed == 40


# -- item 7: only what akasha wrote is deleted -----------------------------------------------


def test_files_akasha_did_not_write_survive_in_the_snapshots_folder(tmp_path):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_text_corpus(docs, 3)
    folder = cache / "snapshots"
    folder.mkdir(parents=True)
    mine = {
        "experiment.npz": b"PK\x03\x04 my numpy arrays",
        "weights.snap": b"my own format",
        "notes.tmp": b"draft",
        # named like akasha's, but not one of its snapshots (no AKSNAP magic)
        "hash-64-0123456789abcdef0123456789abcdef.snap": b"not a snapshot",
    }
    for name, data in mine.items():
        (folder / name).write_bytes(data)
        old = time.time() - 7200
        os.utime(folder / name, (old, old))
    index = CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS)
    index.sync(docs)
    (docs / "file000.txt").write_text("edited: a new corpus state, so the old snapshot goes")
    index.sync(docs)
    index.prune()
    for name, data in mine.items():
        assert (folder / name).read_bytes() == data, name
    own = [p for p in folder.iterdir() if p.name not in mine]
    assert len(own) == 1 and is_own_file(own[0])  # akasha's stale snapshot was removed, its current one kept


def test_akasha_still_removes_its_own_stale_temp_files(tmp_path):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_text_corpus(docs, 3)
    index = CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS)
    index.sync(docs)
    snap = snapshot_of(cache)
    leftover = snap.parent / f".{snap.name}.abc123_x.tmp"  # what atomic_write names its temp file
    leftover.write_bytes(b"half a snapshot")
    old = time.time() - 7200
    os.utime(leftover, (old, old))
    assert is_own_file(leftover)
    (docs / "file001.md").write_text("edited again")
    index.sync(docs)
    assert not leftover.exists()


# -- item 12: edits that keep size and mtime ------------------------------------------------


def _age(path: Path, seconds: float = 3600) -> None:
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def test_a_same_size_edit_with_the_mtime_put_back_is_seen(tmp_path):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    docs.mkdir()
    path = docs / "spec.txt"
    path.write_text("The relief valve opens at 8 bar.")
    _age(path)
    index = CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS)
    index.sync(docs)
    time.sleep(2.1)  # past the racy window, so the first stat was cached
    before = path.stat()
    path.write_text("The relief valve opens at 9 bar.")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime put back
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    for fresh in (index, CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS)):
        fresh.sync(docs)
        assert [c.text for c in fresh.chunks] == ["The relief valve opens at 9 bar."]


def test_a_file_replaced_by_another_with_the_same_size_and_mtime_is_seen(tmp_path):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    docs.mkdir()
    path = docs / "spec.txt"
    path.write_text("Torque the flange bolts to 40 Nm.")
    _age(path)
    index = CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS)
    index.sync(docs)
    stamp = path.stat()
    other = tmp_path / "replacement.txt"
    other.write_text("Torque the flange bolts to 45 Nm.")
    os.utime(other, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    os.replace(other, path)  # a new inode at the same path
    index.sync(docs)
    assert [c.text for c in index.chunks] == ["Torque the flange bolts to 45 Nm."]


def test_an_untouched_corpus_is_still_not_read_again(tmp_path, monkeypatch):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_text_corpus(docs, 5)
    for path in docs.iterdir():
        _age(path)
    time.sleep(0.01)
    CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS).sync(docs)
    time.sleep(2.1)  # ctime is "now" after the utime above: wait out the racy window once
    CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS).sync(docs)
    reads: list[str] = []
    original = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self.name) or original(self))
    CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS).sync(docs)
    assert reads == []
