"""rag.last_sync and the index trace entry report what the last call indexed, skipped and kept."""

from __future__ import annotations

import akasha
from facade_fixtures import write_corpus


def test_last_sync_counts_files(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    rag = akasha.RAG(model=lambda prompt: "ok (filters.md)", embeddings="hash", cache_dir=tmp_path / "cache")

    assert rag.last_sync is None
    rag(docs, "air filter interval?")
    first = rag.last_sync
    assert (first.indexed, first.skipped, first.unchanged) == (4, 1, 0)
    assert any(path.endswith("broken.pdf") for path, _ in first.skipped_files)
    entry = next(e for e in rag.trace if e["stage"] == "index")
    assert entry["files"] == {"indexed": 4, "unchanged": 0, "skipped": 1, "removed": 0}

    (docs / "tyres.txt").unlink()
    rag(docs, "air filter interval?")
    second = rag.last_sync
    assert (second.indexed, second.unchanged, second.removed) == (0, 3, 1)
