"""Several processes on one cache folder: a write lock, consistent results, clear timeouts."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from akasha.embeddings.hash import HashEmbedder
from akasha.errors import IndexLockError
from akasha.index import CorpusIndex


def write_corpus(folder: Path, n: int = 30) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"doc{i:03d}.md").write_text(
            "\n\n".join(f"Section {s} of document {i} talks about subject{i} and item{s}." for s in range(8)))


def _worker(docs: str, cache: str, queue) -> None:
    embedder = HashEmbedder()
    index = CorpusIndex(embedder, chunk_size=150, chunk_overlap=0, cache_dir=cache, lock_timeout=60)
    report = index.sync(docs)
    hits = index.search("subject7 item3", k=3)
    queue.put((report.chunks, [h.id for h in hits], embedder.calls))


def test_two_processes_indexing_the_same_folder_agree(tmp_path):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_corpus(docs)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(str(docs), str(cache), queue)) for _ in range(2)]
    for w in workers:
        w.start()
    results = [queue.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    (chunks_a, hits_a, calls_a), (chunks_b, hits_b, calls_b) = results
    assert chunks_a == chunks_b > 0 and hits_a == hits_b
    assert min(calls_a, calls_b) == 0  # whoever came second reused everything
    # and a third, fresh process on the unchanged corpus embeds nothing
    queue = ctx.Queue()
    third = ctx.Process(target=_worker, args=(str(docs), str(cache), queue))
    third.start()
    chunks_c, hits_c, calls_c = queue.get(timeout=120)
    third.join(timeout=60)
    assert (chunks_c, hits_c, calls_c) == (chunks_a, hits_a, 0)


def test_lock_held_elsewhere_raises_a_clear_error(tmp_path):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_corpus(docs, 3)
    index = CorpusIndex(HashEmbedder(), cache_dir=cache, lock_timeout=0.5)
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import time, filelock
            lock = filelock.FileLock({str(cache / 'index.lock')!r})
            lock.acquire()
            print("locked", flush=True)
            time.sleep(30)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(IndexLockError) as info:  # the holder keeps the lock 30 s: sync gave up first
            index.sync(docs)
        message = str(info.value)
        assert str(cache) in message and "lock_timeout" in message
        assert isinstance(info.value, TimeoutError)
    finally:
        holder.kill()
        holder.wait()
    assert index.sync(docs).indexed == 3  # the lock is free again once the holder is gone


_SLOW_SYNC = """
import sys, time
from akasha.embeddings.hash import HashEmbedder
from akasha.index import CorpusIndex

class Slow(HashEmbedder):
    batch_size = 4
    def embed_documents(self, texts):
        print("batch", flush=True)  # the previous batch is committed once the next one starts
        time.sleep(0.05)
        return super().embed_documents(texts)

CorpusIndex(Slow(), chunk_size=150, chunk_overlap=0, cache_dir=sys.argv[2]).sync(sys.argv[1])
print("done", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("batches_before_kill", [1, 5])
def test_kill_9_mid_sync_leaves_a_consistent_resumable_index(tmp_path, batches_before_kill):
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    write_corpus(docs, 12)
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_SYNC, str(docs), str(cache)], stdout=subprocess.PIPE,
                            text=True)
    try:
        for _ in range(batches_before_kill + 1):
            assert proc.stdout.readline().strip() == "batch"
    finally:
        proc.kill()  # SIGKILL: no cleanup runs
        proc.wait()
    embedder = HashEmbedder()
    index = CorpusIndex(embedder, chunk_size=150, chunk_overlap=0, cache_dir=cache, lock_timeout=10)
    report = index.sync(docs)
    unique = len({c.metadata["content_hash"] for c in index.chunks})
    assert 0 < report.embedded <= unique - 4 * batches_before_kill  # committed batches were kept
    assert index.search("subject5 item2", k=1)[0].path.endswith("doc005.md")
    again = HashEmbedder()
    CorpusIndex(again, chunk_size=150, chunk_overlap=0, cache_dir=cache).sync(docs)
    assert again.calls == 0
