"""A fresh process reloads an unchanged corpus from the snapshot alone: no chunk rows read, no embedding."""

from __future__ import annotations

from akasha.embeddings.hash import HashEmbedder
from akasha.index import CorpusIndex
from akasha.index.manifest import Manifest


def test_reload_takes_chunks_from_the_snapshot(tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The hydraulic filter is replaced every 2000 hours.")
    (docs / "b.md").write_text("# Seals\n\nMechanical seals fail when the pump runs dry.")
    first = CorpusIndex(HashEmbedder(), cache_dir=tmp_path / "cache")
    first.sync(docs)
    expected = [(h.id, h.text, h.metadata) for h in first.search("hydraulic filter", k=2)]

    def no_chunk_rows(*_args, **_kwargs):
        raise AssertionError("chunk rows were read although the snapshot holds the chunks")

    monkeypatch.setattr(Manifest, "load_chunks_many", no_chunk_rows)
    embedder = HashEmbedder()
    again = CorpusIndex(embedder, cache_dir=tmp_path / "cache")
    report = again.sync(docs)

    assert (report.unchanged, report.embedded) == (2, 0)
    assert embedder.calls == 0
    assert [(h.id, h.text, h.metadata) for h in again.search("hydraulic filter", k=2)] == expected


def test_snapshot_without_chunks_still_loads_from_the_manifest(tmp_path, monkeypatch):
    """Snapshots written before chunks were stored in them keep working (chunks come from SQLite)."""
    from akasha.index import persistence as persistence_module
    from akasha.index import snapshot as snapshot_module

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Coolant is changed every five years.")
    original = snapshot_module.write_snapshot
    monkeypatch.setattr(persistence_module, "write_snapshot",
                        lambda path, key, bm25, dense, chunks=None: original(path, key, bm25, dense))
    CorpusIndex(HashEmbedder(), cache_dir=tmp_path / "cache").sync(docs)
    monkeypatch.undo()

    embedder = HashEmbedder()
    again = CorpusIndex(embedder, cache_dir=tmp_path / "cache")
    assert again.sync(docs).embedded == 0
    hits = again.search("coolant", k=1)
    assert hits and hits[0].path.endswith("a.txt")
    assert embedder.calls == 0
