"""Issue 7, "Crashes and faults": a failing provider, a disk that refuses writes, two writers.

Every case checks the same promise: a clear error (what failed, where, what to do),
and the index that was there before stays usable, returning the old results.

How "the disk refuses writes" is simulated:

* a really full disk: a size-limited tmpfs filled up with a filler file (needs root and
  ``mount``, as in the dev container; skipped elsewhere);
* a really read-only cache folder: a read-only bind mount of an existing cache (root +
  ``mount``), or ``chmod -R a-w`` when not running as root (root ignores file modes);
* everywhere: the index's SQLite connection replaced by a proxy whose writes fail with
  sqlite's own "attempt to write a readonly database" error (fault injection).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from akasha.embeddings.hash import HashEmbedder
from akasha.errors import AkashaError, IndexWriteError
from akasha.index import CorpusIndex
from reliability_helpers import (
    CountingEmbedder,
    assert_internally_consistent,
    can_mount,
    chunk_signature,
    committed_vectors,
    document_text,
    read_only_view,
    tmpfs,
    write_text_corpus,
)
from sleeps import record_sleeps

SETTINGS = {"chunk_size": 200, "chunk_overlap": 0, "tokenizer": "bigram"}
QUERY = "file003 pump bearing"
MOUNT = can_mount()


def top(index: CorpusIndex, query: str = QUERY, search_type: str = "auto") -> list[tuple[str, float]]:
    return [(h.id, round(h.score, 6)) for h in index.search(query, k=5, search_type=search_type)]


def all_scores(index: CorpusIndex, query: str = QUERY, search_type: str = "bm25") -> dict[str, float]:
    """Every chunk's score (history-independent, unlike the order of tied hits)."""
    return {h.id: round(h.score, 5) for h in index.search(query, k=10_000, search_type=search_type)}


def add_new_files(docs: Path, n: int = 6, tag: str = "fresh") -> None:
    import random

    rng = random.Random(n)
    for i in range(n):
        (docs / f"{tag}{i}.txt").write_text(document_text(rng, f"{tag}{i}"), encoding="utf-8")


def assert_clear_write_error(error: BaseException, folder: Path, *, hint: str) -> None:
    message = str(error)
    assert isinstance(error, IndexWriteError) and isinstance(error, AkashaError) and isinstance(error, OSError)
    assert str(folder) in message, message
    assert hint in message, message
    assert "cache_dir=" in message and ":memory:" in message, message  # says what else to do


# -- the embedding provider fails part way ----------------------------------------------


@pytest.mark.parametrize("failure", [RuntimeError, TimeoutError, ConnectionResetError])
def test_provider_failing_mid_run_keeps_the_previous_index(tmp_path, failure):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_text_corpus(docs, 8)
    index = CorpusIndex(CountingEmbedder(batch_size=4), cache_dir=cache, **SETTINGS)
    index.sync(docs)
    before, chunks_before = top(index), chunk_signature(index)

    add_new_files(docs)
    failing = CountingEmbedder(batch_size=4, fail_on="fresh3", fail_with=failure)
    index.embedder = failing
    with pytest.raises(failure, match="embedding provider failed") as info:
        index.sync(docs)
    assert not isinstance(info.value, IndexWriteError)  # a provider timeout is not blamed on the disk
    assert top(index) == before and chunk_signature(index) == chunks_before  # old results, in this process
    reopened = CorpusIndex(CountingEmbedder(fail_on="fresh3", fail_with=failure), cache_dir=cache, **SETTINGS)
    with pytest.raises(failure):
        reopened.sync(docs)
    committed = committed_vectors(cache)

    index.embedder = resumed = CountingEmbedder(batch_size=4)
    report = index.sync(docs)
    assert report.indexed == 6 and not set(resumed.embedded) & committed
    assert set(failing.embedded) <= committed  # what was embedded before the failure was kept
    assert index.search("fresh3 paragraph", k=1, search_type="bm25")[0].path.endswith("fresh3.txt")


def test_openai_embedder_timing_out_keeps_the_previous_index(tmp_path):
    """A real client against a loopback server that stalls longer than the client's timeout."""
    pytest.importorskip("openai")
    from servers.base import serve
    from servers.openai_server import OpenAIApp

    from akasha.embeddings import resolve_embedder

    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_text_corpus(docs, 6)
    app = OpenAIApp(api_key="sk-test-timeout")
    with serve(app) as srv:
        embedder = resolve_embedder("openai:text-embedding-3-small", api_key="sk-test-timeout",
                                    base_url=srv.url + "/v1", timeout=0.5, max_retries=1,
                                    retry_initial_delay=0.001, retry_jitter=0.0,
                                    timeout_per_text=0.0)  # the limit is 0.5 s, however many texts
        index = CorpusIndex(embedder, cache_dir=cache, **SETTINGS)
        index.sync(docs)
        before = top(index, search_type="bm25"), top(index, search_type="knn")
        add_new_files(docs, 3)
        app.delay_next(3.0, times=2)  # the first try and the retry both stall
        with pytest.raises(AkashaError) as info:  # the client gave up; it did not wait for the server
            index.sync(docs)
        assert "timed out" in str(info.value) and "timeout" in str(info.value)
        assert (top(index, search_type="bm25"), top(index, search_type="knn")) == before
        time.sleep(3.2)  # let the stalled handlers finish before the server recovers
        assert index.sync(docs).indexed == 3
        assert index.search("fresh2", k=1, search_type="bm25")[0].path.endswith("fresh2.txt")


# -- the disk refuses writes ---------------------------------------------------------------


class _RefusingConnection:
    """A sqlite3 connection whose writes fail like a read-only database's."""

    def __init__(self, real: sqlite3.Connection) -> None:
        self._real = real

    def execute(self, sql: str, *args):
        if sql.lstrip().split()[0].upper() in ("INSERT", "DELETE", "UPDATE"):
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return self._real.execute(sql, *args)

    def executemany(self, sql: str, *args):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    def __getattr__(self, name):
        return getattr(self._real, name)


def test_database_refusing_writes_is_a_clear_error_and_old_index_stays(tmp_path):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_text_corpus(docs, 6)
    index = CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS)
    index.sync(docs)
    before, chunks_before = top(index), chunk_signature(index)
    real = index._manifest._db
    index._manifest._db = _RefusingConnection(real)
    add_new_files(docs, 3)
    with pytest.raises(IndexWriteError) as info:
        index.sync(docs)
    assert_clear_write_error(info.value, cache, hint="make the folder writable")
    assert isinstance(info.value.__cause__, sqlite3.OperationalError)
    assert top(index) == before and chunk_signature(index) == chunks_before
    assert not real.in_transaction  # the failed transaction was rolled back, the lock released
    index._manifest._db = real
    assert index.sync(docs).indexed == 3  # writable again: the next sync completes


def test_snapshot_write_refused_is_a_clear_error(tmp_path, monkeypatch):
    import akasha.index.persistence as persistence

    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_text_corpus(docs, 4)

    def no_space(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(persistence, "write_snapshot", no_space)
    index = CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS)
    with pytest.raises(IndexWriteError) as info:
        index.sync(docs)
    assert_clear_write_error(info.value, cache, hint="free some disk space")
    monkeypatch.undo()
    fresh = CountingEmbedder()
    assert CorpusIndex(fresh, cache_dir=cache, **SETTINGS).sync(docs).chunks == len(index.chunks)
    assert fresh.embedded == []  # vectors were committed before the snapshot failed


def test_cache_path_that_is_a_file_is_a_clear_error(tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("not a folder")
    with pytest.raises(IndexWriteError) as info:
        CorpusIndex(HashEmbedder(), cache_dir=blocker / "inner")
    assert_clear_write_error(info.value, blocker / "inner", hint="check the folder")


def test_damaged_database_is_a_clear_error(tmp_path):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_text_corpus(docs, 3)
    cache.mkdir()
    (cache / "index.sqlite3").write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 64)
    with pytest.raises(IndexWriteError) as info:
        CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS).sync(docs)
    assert_clear_write_error(info.value, cache, hint="delete its index.sqlite3")
    assert "cannot read" in str(info.value)
    (cache / "index.sqlite3").unlink()  # doing what the message says works
    assert CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS).sync(docs).indexed == 3


@pytest.mark.skipif(not MOUNT, reason="needs root and mount to make a small file system")
def test_disk_full_mid_sync_is_a_clear_error_and_old_index_stays(tmp_path):
    docs = tmp_path / "docs"
    write_text_corpus(docs, 6)
    with tmpfs(tmp_path / "disk", "8m") as disk:
        cache = disk / "cache"
        index = CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS)
        index.sync(docs)
        before, chunks_before = top(index), chunk_signature(index)
        filler = disk / "filler"
        with open(filler, "wb") as handle:
            try:
                while True:
                    handle.write(b"\0" * 65536)
                    handle.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        add_new_files(docs, 30)
        with pytest.raises(IndexWriteError) as info:
            index.sync(docs)
        assert_clear_write_error(info.value, cache, hint="free some disk space")
        assert top(index) == before and chunk_signature(index) == chunks_before
        filler.unlink()
        report = index.sync(docs)
        assert report.indexed == 30
        fresh = CorpusIndex(HashEmbedder(), cache_dir=":memory:", **SETTINGS)
        fresh.sync(docs)
        assert chunk_signature(index) == chunk_signature(fresh)
        assert_internally_consistent(index)
        index.close()


def _make_read_only(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


@pytest.mark.skipif(os.geteuid() == 0 and not MOUNT, reason="root ignores chmod and mount is not available")
def test_read_only_cache_folder_is_a_clear_error_and_old_index_stays(tmp_path, monkeypatch):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_text_corpus(docs, 6)
    index = CorpusIndex(HashEmbedder(), cache_dir=cache, **SETTINGS)
    index.sync(docs)
    before = top(index)
    index.close()
    files_before = {p.name: p.read_bytes() for p in cache.rglob("*") if p.is_file()}
    add_new_files(docs, 2)
    if os.geteuid() == 0:
        view = read_only_view(cache, tmp_path / "ro-cache")
    else:
        import contextlib

        _make_read_only(cache)
        view = contextlib.nullcontext(cache)
    try:
        with view as folder:
            slept = record_sleeps(monkeypatch)
            with pytest.raises(IndexWriteError) as info:
                CorpusIndex(HashEmbedder(), cache_dir=folder, lock_timeout=30, **SETTINGS).sync(docs)
            assert sum(slept) < 15  # refused at once: waiting for the lock would poll for its 30 s
            assert_clear_write_error(info.value, folder, hint="make the folder writable")
    finally:
        for path in [cache, *cache.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    assert {p.name: p.read_bytes() for p in cache.rglob("*") if p.is_file()} == files_before
    # writable again: the old index is all there, only the two new files get embedded
    embedder = CountingEmbedder()
    again = CorpusIndex(embedder, cache_dir=cache, **SETTINGS)
    report = again.sync(docs)
    assert (report.indexed, report.unchanged) == (2, 6)
    assert {c.metadata["content_hash"] for c in again.chunks if "fresh" in c.metadata["source"]} == set(embedder.embedded)
    fresh = CorpusIndex(HashEmbedder(), cache_dir=":memory:", **SETTINGS)
    fresh.sync(docs)
    assert before and all(all_scores(again, search_type=t) == all_scores(fresh, search_type=t) for t in ("bm25", "knn"))


# -- two writers, and the corpus changes between them -----------------------------------------

_WRITER = """
import sys, json
sys.path.insert(0, sys.argv[4])
from reliability_helpers import CountingEmbedder, chunk_signature
from akasha.index import CorpusIndex

class Announcing(CountingEmbedder):
    def embed_documents(self, texts):
        print("batch", flush=True)
        return super().embed_documents(texts)

embedder = Announcing(sys.argv[3], delay=float(sys.argv[5]), batch_size=4)
index = CorpusIndex(embedder, chunk_size=200, chunk_overlap=0, tokenizer="bigram", cache_dir=sys.argv[2],
                    lock_timeout=120)
report = index.sync(sys.argv[1])
print("result " + json.dumps({"chunks": report.chunks, "signature": chunk_signature(index)}), flush=True)
"""


def _start_writer(docs: Path, cache: Path, log: Path, delay: float) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(docs), str(cache), str(log), str(Path(__file__).parent), str(delay)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen) -> dict:
    import json

    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    line = next(line for line in out.splitlines() if line.startswith("result "))
    data = json.loads(line[len("result "):])
    data["signature"] = [tuple(x) for x in data["signature"]]
    return data


def test_two_writers_while_the_corpus_changes_between_them(tmp_path):
    import random

    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_text_corpus(docs, 16)
    fresh_v1 = CorpusIndex(HashEmbedder(), cache_dir=":memory:", **SETTINGS)
    fresh_v1.sync(docs)

    first = _start_writer(docs, cache, tmp_path / "first.log", 0.05)
    assert first.stdout.readline().strip() == "batch", first.stderr.read()  # it holds the lock, embedding v1
    rng = random.Random(3)
    for name in ("file001.md", "file002.txt", "file003.md"):
        (docs / name).write_text(document_text(rng, name + "-edited"), encoding="utf-8")
    (docs / "file004.txt").unlink()
    add_new_files(docs, 3, tag="late")
    second = _start_writer(docs, cache, tmp_path / "second.log", 0.0)
    a, b = _result(first), _result(second)

    fresh_v2 = CorpusIndex(HashEmbedder(), cache_dir=":memory:", **SETTINGS)
    fresh_v2.sync(docs)
    assert a["signature"] == chunk_signature(fresh_v1)  # the first writer indexed the folder it listed
    assert b["signature"] == chunk_signature(fresh_v2)  # the second waited, then indexed the changed folder
    # the second writer embedded only the changed files' chunks, never what the first one committed
    from reliability_helpers import logged_hashes

    first_embedded, second_embedded = logged_hashes(tmp_path / "first.log"), logged_hashes(tmp_path / "second.log")
    assert not set(first_embedded) & set(second_embedded)
    assert max([*first_embedded.values(), *second_embedded.values()]) == 1
    # and a third process on the changed folder finds everything in place
    third = CountingEmbedder()
    index = CorpusIndex(third, cache_dir=cache, **SETTINGS)
    report = index.sync(docs)
    assert third.embedded == [] and report.indexed == 0
    assert chunk_signature(index) == chunk_signature(fresh_v2)
    assert_internally_consistent(index)
    for search_type in ("bm25", "knn"):  # same scores for every chunk (tie order may follow index history)
        assert all_scores(index, "late1 pump", search_type) == all_scores(fresh_v2, "late1 pump", search_type)
