"""The Index writing its corpus into an external Store: idiomatic records, shared state, second machines."""

from __future__ import annotations

from pathlib import Path

import pytest

from akasha.embeddings.hash import HashEmbedder
from akasha.index import CorpusIndex
from akasha.stores.memory import MemoryStore


class CountingEmbedder(HashEmbedder):
    def __init__(self, fail_after: int | None = None) -> None:
        super().__init__()
        self.embedded = 0
        self.fail_after = fail_after

    def embed_documents(self, texts):
        if self.fail_after is not None and self.embedded + len(texts) > self.fail_after:
            raise RuntimeError("provider down")
        self.embedded += len(texts)
        return super().embed_documents(texts)


def write(folder: Path, n: int = 4) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        body = "\n\n".join(f"File {i} paragraph {p}: topic {i * 10 + p} is explained here." for p in range(3))
        (folder / f"f{i}.txt").write_text(body, encoding="utf-8")


def make(cache, store, embedder=None) -> CorpusIndex:
    return CorpusIndex(embedder or CountingEmbedder(), chunk_size=60, chunk_overlap=0, cache_dir=cache, store=store)


def test_records_carry_text_source_hash_and_embedder(tmp_path: Path):
    write(tmp_path / "docs")
    store = MemoryStore()
    index = make(tmp_path / "cache", store)
    index.sync(tmp_path / "docs")
    assert store.count() == len(index) > 0
    record = store.fetch([index.chunks[0].id])[0]
    assert record.text == index.chunks[0].text
    assert record.metadata["source"] == "f0.txt"  # portable: relative to the data_source folder
    assert record.metadata["embedder"] == index.embedder_id
    assert record.metadata["doc_id"] == record.metadata["source"]
    assert len(record.metadata["content_hash"]) == 64
    assert isinstance(record.metadata["chunk_index"], int)


def test_a_second_machine_takes_vectors_and_state_from_the_store(tmp_path: Path):
    write(tmp_path / "docs")
    store = MemoryStore()
    make(tmp_path / "machine-a", store).sync(tmp_path / "docs")
    embedder = CountingEmbedder()
    report = make(tmp_path / "machine-b", store, embedder).sync(tmp_path / "docs")
    assert embedder.embedded == 0
    assert report.unchanged == 4 and report.indexed == 0


def test_edit_and_delete_replace_exactly_their_records(tmp_path: Path):
    write(tmp_path / "docs")
    store = MemoryStore()
    index = make(tmp_path / "cache", store)
    index.sync(tmp_path / "docs")
    edited = tmp_path / "docs" / "f1.txt"
    edited.write_text("Only one short paragraph now.", encoding="utf-8")
    (tmp_path / "docs" / "f2.txt").unlink()
    embedder = CountingEmbedder()
    index.embedder = embedder
    index.sync(tmp_path / "docs")
    assert embedder.embedded == 1
    sources = {c.metadata["source"] for chunks, _ in store.scan() for c in chunks}
    assert "f2.txt" not in sources
    texts = [c.text for chunks, _ in store.scan() for c in chunks if c.metadata["source"] == edited.name]
    assert texts == ["Only one short paragraph now."]
    assert store.count() == len(index)


def test_an_edit_seen_by_a_new_process_removes_the_old_records(tmp_path: Path):
    write(tmp_path / "docs")
    store = MemoryStore()
    make(tmp_path / "cache", store).sync(tmp_path / "docs")
    (tmp_path / "docs" / "f3.txt").unlink()
    index = make(tmp_path / "cache", store)
    index.sync(tmp_path / "docs")
    assert store.count() == len(index)
    assert not store.ids_of_documents([str(tmp_path / "docs" / "f3.txt")])


def test_a_failing_embedder_leaves_the_store_at_the_last_state_and_resumes(tmp_path: Path):
    write(tmp_path / "docs", 2)
    store = MemoryStore()
    make(tmp_path / "cache", store).sync(tmp_path / "docs")
    before = store.count()
    write(tmp_path / "docs", 6)
    failing = CountingEmbedder(fail_after=0)
    with pytest.raises(RuntimeError):
        make(tmp_path / "cache", store, failing).sync(tmp_path / "docs")
    assert store.count() == before
    retry = CountingEmbedder()
    index = make(tmp_path / "cache", store, retry)
    index.sync(tmp_path / "docs")
    assert store.count() == len(index) > before
    assert retry.embedded == len(index) - before


def test_a_new_empty_store_is_filled_from_the_local_cache_without_embedding(tmp_path: Path):
    write(tmp_path / "docs")
    make(tmp_path / "cache", MemoryStore()).sync(tmp_path / "docs")
    fresh = MemoryStore()
    embedder = CountingEmbedder()
    index = make(tmp_path / "cache", fresh, embedder)
    index.sync(tmp_path / "docs")
    assert embedder.embedded == 0
    assert fresh.count() == len(index)


def test_load_store_searches_records_written_elsewhere(tmp_path: Path):
    write(tmp_path / "docs")
    store = MemoryStore()
    make(tmp_path / "cache", store).sync(tmp_path / "docs")
    embedder = CountingEmbedder()
    reader = CorpusIndex(embedder, cache_dir=":memory:", store=store)
    report = reader.load_store()
    assert report.chunks == store.count()
    hits = reader.search("topic 21 is explained", k=3, search_type="bm25")
    assert hits[0].text.startswith("File 2 paragraph 1")
    assert embedder.embedded == 0


def test_an_object_that_is_not_a_store_is_refused(tmp_path: Path):
    from akasha.errors import ConfigError

    with pytest.raises(ConfigError, match="not an akasha Store"):
        CorpusIndex(HashEmbedder(), cache_dir=":memory:", store=object())


def test_restore_rebuilds_the_last_corpus_from_the_store_alone(tmp_path: Path):
    write(tmp_path / "docs")
    store = MemoryStore()
    make(":memory:", store).sync(tmp_path / "docs")
    embedder = CountingEmbedder()
    fresh = make(":memory:", store, embedder)  # a restart with an in-memory cache: only the store remembers
    hits = fresh.bm25_search("topic 21 is explained", 1)
    assert hits and hits[0][0].text.startswith("File 2 paragraph 1")
    assert embedder.embedded == 0
    (tmp_path / "docs" / "f0.txt").unlink()
    report = fresh.sync(tmp_path / "docs")  # the restored corpus is the baseline of the next sync
    assert report.embedded == 0 and report.removed == 1
    assert store.count() == len(fresh)


def test_the_stores_lexical_tokenizer_is_resolved_once_not_per_search(tmp_path: Path, monkeypatch):
    """A store that searches in its own engine gets the question's terms from a tokenizer resolved
    once (again only when the store adopts another id), not on every search (issue 34)."""
    import akasha.stores.query as query_module

    class SearchingStore(MemoryStore):
        capabilities = frozenset({"dense", "lexical"})
        asked: list[tuple[str, ...]] = []

        def _lexical(self, tokens, k, filters):
            self.asked.append(tokens)
            return []

    write(tmp_path / "docs")
    store = SearchingStore()
    index = make(tmp_path / "cache", store)
    index.sync(tmp_path / "docs")
    resolved = []
    real = query_module.lexical_tokenizer
    monkeypatch.setattr(query_module, "lexical_tokenizer", lambda tid: resolved.append(tid) or real(tid))
    for question in ("topic 21", "topic 12", "paragraph 1"):
        index.search(question, k=3, search_type="bm25")
    assert store.asked == [("topic", "21"), ("topic", "12"), ("paragraph", "1")]
    assert resolved == [store.lexical_tokenizer]
    store.lexical_tokenizer = "words-v2+bigram"  # the store adopted another tokenizer (a table's recorded one)
    index.search("topic 21", k=3, search_type="bm25")
    assert resolved == [resolved[0], "words-v2+bigram"]
