"""Progress bars: asked for, or automatic for long indexing (RAG calls), and silent otherwise."""

from __future__ import annotations

import akasha
from akasha.embeddings.hash import HashEmbedder
from akasha.index import CorpusIndex
from akasha.index import ingest as ingest_module
from akasha.index import sources as sources_module


def write_files(folder, n):
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"note{i:03d}.txt").write_text(f"Note {i}: pump P-{i} needs grease every {i + 1} hours.")
    return folder


def test_progress_true_shows_reading_and_embedding_bars(tmp_path, capsys):
    docs = write_files(tmp_path / "docs", 5)
    CorpusIndex(HashEmbedder(), cache_dir=":memory:").sync(docs, progress=True)
    err = capsys.readouterr().err
    assert "indexing" in err and "embedding" in err


def test_short_work_is_silent_by_default_and_in_auto_mode(tmp_path, capsys):
    docs = write_files(tmp_path / "docs", 5)
    CorpusIndex(HashEmbedder(), cache_dir=":memory:").sync(docs)
    CorpusIndex(HashEmbedder(), cache_dir=":memory:").sync(docs, progress=None)
    assert capsys.readouterr().err == ""


def test_rag_call_shows_the_embedding_bar_when_indexing_is_long(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(ingest_module, "LONG_TEXTS", 3)
    docs = write_files(tmp_path / "docs", 5)
    rag = akasha.RAG(model=lambda prompt: "ok (note001.txt)", embeddings="hash", cache_dir=":memory:")
    rag(docs, "grease interval of P-1?")
    assert "embedding" in capsys.readouterr().err
    rag(docs, "grease interval of P-2?")  # nothing left to embed: no bar
    assert "embedding" not in capsys.readouterr().err


def test_an_unchanged_folder_draws_no_bar_even_when_asked(tmp_path, capsys, monkeypatch):
    """Bars are for work (reading changed files, parsing, embedding), not for the unchanged stat check."""
    monkeypatch.setattr(sources_module, "RACY_SECONDS", -1.0)  # trust the stat cache for files written just now
    docs = write_files(tmp_path / "docs", 5)
    cache = tmp_path / "cache"
    CorpusIndex(HashEmbedder(), cache_dir=cache).sync(docs, progress=True)
    assert "indexing" in capsys.readouterr().err
    CorpusIndex(HashEmbedder(), cache_dir=cache).sync(docs, progress=True)  # a new process: nothing to do
    assert capsys.readouterr().err == ""
    (docs / "note002.txt").write_text("Note 2: pump P-2 now needs grease every 9 hours.")
    CorpusIndex(HashEmbedder(), cache_dir=cache).sync(docs, progress=True)  # one file to parse: the bar is back
    assert "indexing" in capsys.readouterr().err
