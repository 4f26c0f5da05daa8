"""CorpusIndex over real files with the hash embedder: content keying, persistence, failures."""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from akasha.embeddings.hash import HashEmbedder
from akasha.errors import AkashaError, EmptySourceError, SourceNotFoundError
from akasha.index import CorpusIndex, default_cache_dir
from akasha.retrieval.bm25 import BM25Index

TOPICS = ["astronomy", "botany", "cooking", "dancing", "economics", "forestry", "geology", "history",
          "irrigation", "juggling"]


def write_corpus(folder: Path, n: int = 10) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        body = "\n\n".join(f"Paragraph {p} of the {topic} notes: {topic} fact number {p} for file {i}."
                           for p in range(6))
        path = folder / f"file{i:02d}.txt"
        path.write_text(body, encoding="utf-8")
        paths.append(path)
    return paths


def make_index(cache, embedder=None, **kw) -> CorpusIndex:
    return CorpusIndex(embedder or HashEmbedder(), chunk_size=120, chunk_overlap=0, cache_dir=cache, **kw)


def sources(hits) -> set[str]:
    return {Path(h.path).name for h in hits}


@pytest.fixture
def docs(tmp_path) -> Path:
    write_corpus(tmp_path / "docs")
    return tmp_path / "docs"


def test_first_sync_then_unchanged_sync_embeds_nothing(docs, tmp_path):
    embedder = HashEmbedder()
    index = make_index(tmp_path / "cache", embedder)
    first = index.sync(docs)
    assert (first.indexed, first.unchanged, first.skipped, first.removed) == (10, 0, 0, 0)
    assert first.embedded == embedder.texts_embedded > 0 and first.chunks == len(index.chunks)
    calls = embedder.calls
    second = index.sync(docs)
    assert embedder.calls == calls and second.embedded == 0
    assert (second.indexed, second.unchanged) == (0, 10)
    hit = index.search("botany notes", k=1)[0]
    assert hit.path.endswith("file01.txt")
    for key in ("source", "chunk_index", "chunk_id", "content_hash"):
        assert key in hit.metadata
    assert hit.metadata["chunk_id"] == hit.id


@pytest.mark.parametrize("change", ["touch", "copy", "rename"])
def test_touch_copy_rename_embed_nothing(docs, tmp_path, change):
    embedder = HashEmbedder()
    index = make_index(tmp_path / "cache", embedder)
    index.sync(docs)
    before = embedder.texts_embedded
    target = docs / "file03.txt"
    if change == "touch":
        later = time.time() + 50
        os.utime(target, (later, later))
    elif change == "copy":
        shutil.copy(target, docs / "copy-of-3.txt")
    else:
        target.rename(docs / "renamed.txt")
    report = index.sync(docs)
    assert embedder.texts_embedded == before and report.embedded == 0
    found = sources(index.search("dancing notes", k=20, search_type="bm25"))
    if change == "copy":
        assert {"file03.txt", "copy-of-3.txt"} <= found
    elif change == "rename":
        assert "renamed.txt" in found and "file03.txt" not in found
        assert report.removed == 1 and report.indexed == 1
    # and a fresh index on the same cache agrees
    fresh = HashEmbedder()
    make_index(tmp_path / "cache", fresh).sync(docs)
    assert fresh.calls == 0


def test_editing_one_file_reembeds_only_its_changed_chunks(docs, tmp_path):
    embedder = HashEmbedder()
    index = make_index(tmp_path / "cache", embedder)
    index.sync(docs)
    target = docs / "file02.txt"
    paragraphs = target.read_text().split("\n\n")
    paragraphs[3] = "A brand new paragraph about zeppelins replaced the old one."
    target.write_text("\n\n".join(paragraphs))
    before = embedder.texts_embedded
    report = index.sync(docs)
    assert report.indexed == 1 and report.unchanged == 9
    assert embedder.texts_embedded - before == report.embedded == 1
    assert index.search("zeppelins", k=1, search_type="bm25")[0].path.endswith("file02.txt")
    texts = [c.text for c in index.chunks]
    assert not any("fact number 3 for file 2." in t for t in texts)
    assert sum("cooking" in t for t in texts) == 5 + 0  # one cooking paragraph is gone, no stale copy


def test_deleting_a_file_removes_its_chunks(docs, tmp_path):
    index = make_index(tmp_path / "cache")
    index.sync(docs)
    (docs / "file04.txt").unlink()
    report = index.sync(docs)
    assert report.removed == 1
    for kind in ("auto", "knn", "bm25", "hybrid", "mmr"):
        assert "file04.txt" not in sources(index.search("economics", k=50, search_type=kind))
    assert all(not c.metadata["source"].endswith("file04.txt") for c in index.chunks)


class FailingEmbedder(HashEmbedder):
    """Raises when it is asked to embed a text containing ``trigger``."""

    def __init__(self, trigger: str | None) -> None:
        super().__init__()
        self.batch_size = 3
        self.trigger = trigger

    def embed_documents(self, texts):
        if self.trigger and any(self.trigger in t for t in texts):
            raise RuntimeError("provider unavailable")
        return super().embed_documents(texts)


def test_failure_part_way_keeps_previous_state_and_resumes(tmp_path):
    docs = tmp_path / "docs"
    write_corpus(docs, 6)
    cache = tmp_path / "cache"
    ok = FailingEmbedder(None)
    index = make_index(cache, ok)
    index.sync(docs)
    old_chunks = index.chunks
    write_corpus(docs, 10)  # files 6..9 are new; file 7 is "history" (index 7)
    failing = FailingEmbedder("history")
    with pytest.raises(RuntimeError, match="provider unavailable"):
        index.embedder = failing
        index.sync(docs)
    # previous state fully usable, in this process and in a new one
    assert [c.id for c in index.chunks] == [c.id for c in old_chunks]
    assert index.search("astronomy", k=1)[0].path.endswith("file00.txt")
    done_before_failure = failing.texts_embedded
    assert done_before_failure > 0  # batches before the failing one were committed
    # next call resumes: only what was not committed gets embedded
    resumed = FailingEmbedder(None)
    index.embedder = resumed
    report = index.sync(docs)
    total_new = len({c.metadata["content_hash"] for c in index.chunks}) - len(
        {c.metadata["content_hash"] for c in old_chunks})
    assert report.embedded == resumed.texts_embedded == total_new - done_before_failure
    assert "file07.txt" in sources(index.search("history", k=3, search_type="bm25"))


def test_two_embedding_models_never_mix(docs, tmp_path):
    cache = tmp_path / "cache"
    small, big = HashEmbedder(64), HashEmbedder(128)
    a = make_index(cache, small)
    a.sync(docs)
    b = make_index(cache, big)
    b.sync(docs)
    assert big.calls > 0  # nothing reused across models
    assert a._live.dense.dimension == 64 and b._live.dense.dimension == 128
    assert b.search("geology", k=1)[0].path.endswith("file06.txt")
    again = HashEmbedder(64)
    make_index(cache, again).sync(docs)
    assert again.calls == 0


def test_new_index_on_same_cache_loads_snapshot_without_tokenising(docs, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    first = make_index(cache)
    first.sync(docs)
    expected = [(h.id, round(h.score, 6)) for h in first.search("forestry notes", k=5)]
    assert list((cache / "snapshots").glob("*.snap"))

    def no_tokenising(self, ids, texts):
        raise AssertionError("BM25 was rebuilt instead of loaded from the snapshot")

    monkeypatch.setattr(BM25Index, "add", no_tokenising)
    embedder = HashEmbedder()
    second = make_index(cache, embedder)
    report = second.sync(docs)
    assert embedder.calls == 0 and report.unchanged == 10 and report.indexed == 0
    assert [(h.id, round(h.score, 6)) for h in second.search("forestry notes", k=5)] == expected


def test_damaged_snapshot_is_rebuilt_from_manifest(docs, tmp_path):
    cache = tmp_path / "cache"
    make_index(cache).sync(docs)
    for snap in (cache / "snapshots").glob("*.snap"):
        snap.write_bytes(b"garbage")
    embedder = HashEmbedder()
    index = make_index(cache, embedder)
    index.sync(docs)
    assert embedder.calls == 0
    assert index.search("juggling", k=1)[0].path.endswith("file09.txt")


def test_skipped_files_are_listed_and_logged_once(docs, tmp_path, caplog):
    (docs / "empty.txt").write_text("")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    index = make_index(tmp_path / "cache")
    with caplog.at_level(logging.WARNING, logger="akasha.index"):
        report = index.sync(docs)
        index.sync(docs)
    assert report.skipped == 2 and report.indexed == 10
    assert sorted(Path(p).name for p, _ in report.skipped_files) == ["broken.pdf", "empty.txt"]
    assert all(reason for _, reason in report.skipped_files)
    warned = [r for r in caplog.records if "broken.pdf" in r.getMessage()]
    assert len(warned) == 1


def test_missing_and_empty_sources(tmp_path):
    index = make_index(":memory:")
    with pytest.raises(SourceNotFoundError, match="nowhere"):
        index.sync(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "blank.txt").write_text("   \n")
    with pytest.raises(EmptySourceError, match="empty"):
        index.sync(empty)
    with pytest.raises(AkashaError, match="sync"):
        index.search("anything")


def test_cache_inside_data_folder_is_not_indexed(docs):
    cache = docs / "cache"
    index = make_index(cache)
    (cache / "stray-notes.txt").write_text("text that lives inside the cache folder")
    report = index.sync(docs)
    assert report.indexed == 10
    assert all("/cache/" not in c.metadata["source"] for c in index.chunks)


def test_memory_index_writes_nothing(docs, tmp_path, monkeypatch):
    monkeypatch.setenv("AKASHA_CACHE_DIR", str(tmp_path / "default"))
    index = make_index(":memory:")
    report = index.sync([docs / "file00.txt", docs / "file01.txt"], progress=True)
    assert report.indexed == 2
    assert index.search("botany", k=1)[0].path.endswith("file01.txt")
    assert not (tmp_path / "default").exists()
    assert default_cache_dir() == tmp_path / "default"


def test_default_cache_dir_from_environment(docs, tmp_path, monkeypatch):
    monkeypatch.setenv("AKASHA_CACHE_DIR", str(tmp_path / "envcache"))
    make_index(None).sync(docs)
    assert (tmp_path / "envcache" / "index.sqlite3").is_file()


def test_batches_follow_embedder_batch_size(docs, tmp_path):
    embedder = HashEmbedder()
    embedder.batch_size = 4
    report = make_index(":memory:", embedder).sync(docs)
    assert embedder.calls == -(-report.embedded // 4)


def test_chinese_corpus_is_searchable(tmp_path):
    folder = tmp_path / "zh"
    folder.mkdir()
    (folder / "a.md").write_text("我们在北京大学学习自然语言处理。", encoding="utf-8")
    (folder / "b.md").write_text("上海的天气今天很好，适合散步。", encoding="utf-8")
    index = make_index(":memory:")
    index.sync(folder)
    assert index.search("北京", k=1, search_type="bm25")[0].path.endswith("a.md")
    assert index.search("天气", k=1)[0].path.endswith("b.md")


def test_vectors_are_normalised_float32(docs):
    index = make_index(":memory:")
    index.sync(docs)
    matrix = index._live.dense.matrix()
    assert matrix.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, rtol=1e-5)


def _count_bm25_additions(monkeypatch) -> list[int]:
    """How many documents each BM25Index.add or add_tokens call indexes (a first build tokenises on a thread
    while it embeds, then hands the tokens to add_tokens)."""
    tokenised: list[int] = []
    for name in ("add", "add_tokens"):
        original = getattr(BM25Index, name)

        def counting(self, ids, texts_or_tokens, _original=original):
            tokenised.append(len(ids))
            return _original(self, ids, texts_or_tokens)

        monkeypatch.setattr(BM25Index, name, counting)
    return tokenised


def test_new_index_after_an_edit_applies_only_the_difference(docs, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    make_index(cache).sync(docs)
    (docs / "file05.txt").write_text("Only one new sentence about quasars now.")
    (docs / "file06.txt").unlink()
    tokenised = _count_bm25_additions(monkeypatch)
    embedder = HashEmbedder()
    index = make_index(cache, embedder)
    report = index.sync(docs)
    assert (report.indexed, report.unchanged, report.removed) == (1, 8, 1)
    assert tokenised == [1] and embedder.texts_embedded == 1
    assert index.search("quasars", k=1)[0].path.endswith("file05.txt")
    assert not any(c.metadata["source"].endswith(("file05.txt", "file06.txt")) and "notes" in c.text
                   for c in index.chunks)


def test_failed_snapshot_write_is_retried_on_the_next_sync(docs, tmp_path, monkeypatch):
    import akasha.index.persistence as persistence_module

    cache = tmp_path / "cache"
    index = make_index(cache)

    def disk_full(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(persistence_module, "write_snapshot", disk_full)
    with pytest.raises(OSError):
        index.sync(docs)
    monkeypatch.undo()
    assert index.sync(docs).embedded == 0
    assert list((cache / "snapshots").glob("*.snap"))  # committed this time
    fresh = HashEmbedder()
    make_index(cache, fresh).sync(docs)
    assert fresh.calls == 0


def test_searching_never_rebuilds_or_updates_the_structures(docs, monkeypatch):
    from akasha.retrieval.dense import DenseIndex

    index = make_index(":memory:")
    index.sync(docs)

    def forbidden(*_args, **_kwargs):
        raise AssertionError("a query must not rebuild or update the index")

    for cls, names in ((BM25Index, ("_merge", "add", "add_tokens", "remove")), (DenseIndex, ("add", "remove"))):
        for name in names:
            monkeypatch.setattr(cls, name, forbidden)
    for kind in ("auto", "knn", "bm25", "mmr", "hybrid"):
        assert index.search("history notes", k=3, search_type=kind)
    assert index.sync(docs).embedded == 0  # an unchanged sync does not touch them either


@pytest.mark.skipif(not __import__("akasha.retrieval.tokenize", fromlist=["x"]).jieba_available(),
                    reason="jieba not installed")
def test_bm25_statistics_from_different_tokenizers_never_mix(docs, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    bigram = make_index(cache, tokenizer="bigram")
    bigram.sync(docs)
    tokenised = _count_bm25_additions(monkeypatch)
    embedder = HashEmbedder()
    jieba_index = make_index(cache, embedder, tokenizer="jieba")
    jieba_index.sync(docs)
    assert jieba_index._live.bm25.tokenizer_id.endswith("jieba") and bigram._live.bm25.tokenizer_id.endswith("bigram")
    assert sum(tokenised) == len(jieba_index.chunks)  # its own statistics, built from the texts
    assert embedder.calls == 0  # vectors do not depend on the tokenizer: reused
    tokenised.clear()
    make_index(cache, tokenizer="bigram").sync(docs)
    assert tokenised == []  # the bigram snapshot is still there, untouched
