"""CorpusIndex.prune / RAG.prune / ``akasha index --prune``: history goes, nothing a corpus needs does."""

from __future__ import annotations

import sqlite3

import pytest

from akasha import cli
from akasha.embeddings.hash import HashEmbedder
from akasha.index import CorpusIndex


def _index(cache, embedder=None, **kw) -> CorpusIndex:
    return CorpusIndex(embedder or HashEmbedder(), chunk_size=60, chunk_overlap=0, cache_dir=cache, **kw)


def _rows(cache, table: str) -> int:
    con = sqlite3.connect(cache / "index.sqlite3")
    try:
        return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(6):
        (folder / f"f{i}.txt").write_text(" ".join(f"pump{i} seal{j} bearing{j} valve{i}" for j in range(12)))
    return folder


def test_prune_drops_old_versions_and_keeps_every_current_vector(docs, tmp_path):
    cache = tmp_path / "cache"
    index = _index(cache)
    index.sync(docs)
    for version in range(3):  # three edits of one file, then a deleted file
        (docs / "f1.txt").write_text(f"edited version {version} of the pump manual " * 8)
        index.sync(docs)
    (docs / "f5.txt").unlink()
    index.sync(docs)
    expected = [(h.id, round(h.score, 6)) for h in index.search("pump seal", k=5)]
    vectors_before = _rows(cache, "embeddings")

    report = index.prune()
    assert report.file_versions == 4 and report.chunks > 0 and report.vectors > 0
    assert _rows(cache, "embeddings") == vectors_before - report.vectors == len(index)
    assert report.bytes_after <= report.bytes_before

    embedder = HashEmbedder()
    fresh = _index(cache, embedder)
    sync = fresh.sync(docs)
    assert (sync.unchanged, sync.embedded, embedder.calls) == (5, 0, 0)  # nothing a corpus needs was lost
    assert [(h.id, round(h.score, 6)) for h in fresh.search("pump seal", k=5)] == expected
    assert fresh.prune().vectors == 0  # idempotent


def test_prune_keeps_every_committed_corpus_and_skipped_files_on_disk(docs, tmp_path):
    cache = tmp_path / "cache"
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("the compressor needs new filters " * 10)
    (other / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    _index(cache).sync(docs)
    second = _index(cache)
    second.sync(other)
    second.prune()
    embedder = HashEmbedder()
    for source in (docs, other):
        report = _index(cache, embedder).sync(source)
        assert report.embedded == 0
    assert embedder.calls == 0
    con = sqlite3.connect(cache / "index.sqlite3")
    statuses = {row[0] for row in con.execute("SELECT status FROM parsed")}
    con.close()
    assert "skipped" in statuses  # the unreadable file is not re-read on every sync


def test_undoing_an_edit_after_prune_embeds_again(docs, tmp_path):
    """The price of pruning: history is gone, so restoring an old version costs its embeddings."""
    cache = tmp_path / "cache"
    original = (docs / "f2.txt").read_text()
    embedder = HashEmbedder()
    index = _index(cache, embedder)
    index.sync(docs)
    (docs / "f2.txt").write_text("a completely different text about gearboxes " * 6)
    index.sync(docs)
    (docs / "f2.txt").write_text(original)
    assert index.sync(docs).embedded == 0  # history kept: undo is free
    (docs / "f2.txt").write_text("a completely different text about gearboxes " * 6)
    index.sync(docs)
    index.prune()
    (docs / "f2.txt").write_text(original)
    assert index.sync(docs).embedded > 0


def test_prune_with_an_external_store_keeps_the_store_in_step(tmp_path, docs):
    from akasha.stores.memory import MemoryStore

    store = MemoryStore()
    index = CorpusIndex(HashEmbedder(), chunk_size=120, chunk_overlap=0, cache_dir=tmp_path / "cache", store=store)
    index.sync(docs)
    (docs / "f0.txt").write_text("replaced text about the cooling tower " * 5)
    index.sync(docs)
    report = index.prune()
    assert report.file_versions == 1
    assert store.count() == len(index)  # the store already dropped the old version's records at sync
    again = CorpusIndex(HashEmbedder(), chunk_size=120, chunk_overlap=0, cache_dir=tmp_path / "cache", store=store)
    assert again.sync(docs).embedded == 0


def test_cli_index_prune(docs, tmp_path, capsys, monkeypatch):
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    cache = str(tmp_path / "cache")
    assert cli.main(["index", str(docs), "--embeddings", "hash", "--cache-dir", cache, "--no-progress"]) == 0
    (docs / "f0.txt").write_text("replaced text about the cooling tower " * 5)
    assert cli.main(["index", str(docs), "--embeddings", "hash", "--cache-dir", cache, "--no-progress",
                     "--prune"]) == 0
    out = capsys.readouterr().out
    assert "pruned 1 old file versions" in out and "index database" in out


def test_a_database_akasha_did_not_create_is_refused_and_left_untouched(tmp_path):
    """issue 33: a foreign index.sqlite3 with tables of the same names is never written or pruned."""
    import sqlite3

    from akasha.embeddings.hash import HashEmbedder
    from akasha.errors import ConfigError
    from akasha.index import CorpusIndex

    cache = tmp_path / "cache"
    cache.mkdir()
    foreign = sqlite3.connect(cache / "index.sqlite3")
    foreign.execute("CREATE TABLE embeddings (model TEXT, text_hash TEXT, dim INTEGER, vector BLOB)")
    foreign.execute("INSERT INTO embeddings VALUES ('theirs', 'h', 1, x'00')")
    foreign.commit()
    foreign.close()
    before = (cache / "index.sqlite3").read_bytes()
    with pytest.raises(ConfigError, match="did not create"):
        CorpusIndex(HashEmbedder(), cache_dir=cache)
    assert (cache / "index.sqlite3").read_bytes() == before
