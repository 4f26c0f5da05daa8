"""Cold start (issue 16): work a first build overlaps without changing results.

BM25's tokenising runs on a thread while chunks are embedded; the PDF/.docx worker process
starts (importing its parsers) as soon as changed files of those kinds are seen; the embedder
is told once what it will embed; the answer-vector cache commits
without an fsync per answer.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np

from akasha.embeddings.hash import HashEmbedder
from akasha.index import CorpusIndex, ingest
from akasha.llm.extractive import VECTORS_FILE, SentenceVectors
from akasha.loaders import guard, load_file, prepare_loaders

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "docs"


def _bm25_state(index: CorpusIndex) -> dict:
    """What the index's BM25 holds: every id's tokens' postings, as plain data."""
    bm25 = index._live.bm25
    return {"ids": bm25.ids, "vocab": dict(bm25._vocab), "df": bm25._df.tolist(),
            "search": [(h.id, round(h.score, 6)) for h in index.search("seal failure 泵 安全", k=8,
                                                                       search_type="bm25")]}


def test_bm25_tokens_made_during_embedding_give_the_same_index(monkeypatch):
    threads: list[str] = []
    original = ingest.Ingest.tokens_ahead

    def watched(self, chunks):
        ahead = original(self, chunks)
        if ahead is not None:
            threads.append(ahead._thread.name)
        return ahead

    monkeypatch.setattr(ingest.Ingest, "tokens_ahead", watched)
    with CorpusIndex(HashEmbedder(), cache_dir=":memory:") as index:
        index.sync(EXAMPLES)
        ahead = _bm25_state(index)
    assert threads == ["akasha-bm25-tokens"]
    monkeypatch.setattr(ingest, "BM25_BATCH", 0)  # too many chunks: tokenised by BM25Index.add, as before
    with CorpusIndex(HashEmbedder(), cache_dir=":memory:") as index:
        index.sync(EXAMPLES)
        plain = _bm25_state(index)
    assert threads == ["akasha-bm25-tokens"] and ahead == plain


def test_a_failing_tokeniser_thread_leaves_no_half_built_index(monkeypatch):
    with CorpusIndex(HashEmbedder(), cache_dir=":memory:") as index:
        def broken(text):
            raise RuntimeError("tokeniser failed")

        monkeypatch.setattr(index._live.bm25, "tokenize", broken)
        try:
            index.sync(EXAMPLES)
        except RuntimeError as exc:
            assert "tokeniser failed" in str(exc)
        else:  # pragma: no cover
            raise AssertionError("the tokeniser's error was lost")
        assert index._live.state_key is None and len(index) == 0


def test_prepare_loaders_starts_one_warm_worker_that_the_next_pdf_uses():
    guard.shutdown()
    prepare_loaders({".txt", ".md"})  # read in this process: no worker
    assert guard._idle == []
    prepare_loaders({".PDF", ".docx", ".txt"})
    assert len(guard._idle) == 1
    warm = guard._idle[0]
    prepare_loaders({".pdf"})  # one is idle already: no second
    assert guard._idle == [warm]
    pdf = EXAMPLES / "annual-maintenance-report-2024.pdf"
    started: list[object] = []
    original = guard._Worker.__init__

    def counting(self, *args, **kwargs):
        started.append(self)
        original(self, *args, **kwargs)

    guard._Worker.__init__ = counting  # type: ignore[method-assign]
    try:
        documents = load_file(pdf)
    finally:
        guard._Worker.__init__ = original  # type: ignore[method-assign]
    assert started == [] and guard._idle == [warm]
    from akasha.loaders.limits import LoaderLimits

    assert [d.text for d in documents] == [d.text for d in load_file(pdf, limits=LoaderLimits(isolate=False))]
    guard.shutdown()


def test_the_embedder_is_told_once_before_the_first_file_is_parsed(tmp_path, monkeypatch):
    from akasha.index import sources

    monkeypatch.setattr(sources, "RACY_SECONDS", -1.0)
    order: list[str] = []

    class Recording(HashEmbedder):
        def prepare_documents(self, text_bytes: int) -> None:
            order.append(f"prepare {text_bytes}")

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Pump P-1 needs new bearings.", encoding="utf-8")
    (docs / "b.txt").write_text("Pump P-2 runs dry.", encoding="utf-8")
    size = sum(p.stat().st_size for p in docs.iterdir())
    with CorpusIndex(Recording(), cache_dir=tmp_path / "cache") as index:
        index.sync(docs)
        assert order == [f"prepare {size}"]
        index.sync(docs)  # nothing to parse: nothing announced
        assert order == [f"prepare {size}"]


def test_the_answer_vector_cache_keeps_a_write_ahead_log(tmp_path):
    path = tmp_path / VECTORS_FILE
    vectors = SentenceVectors(path)
    vectors.put("m", {"a sentence": np.ones(4, dtype=np.float32) / 2})
    vectors.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert len(SentenceVectors(path).get("m", ["a sentence"])) == 1


def test_background_result_raises_the_functions_error_once():
    from akasha.background import Background

    def fail():
        raise ValueError("boom")

    task = Background(fail, "t")
    try:
        task.result()
    except ValueError as exc:
        assert str(exc) == "boom"
    assert task.result() is None and threading.current_thread().name == "MainThread"
