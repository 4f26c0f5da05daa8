"""The Index's documents entry (a YAML pipeline's ingest), filtered searches and restore()."""

from __future__ import annotations

from pathlib import Path

import pytest

from akasha.embeddings.hash import HashEmbedder
from akasha.index import CorpusIndex
from akasha.types import Document


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting every text it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded = 0

    def embed_documents(self, texts):
        self.embedded += len(texts)
        return super().embed_documents(texts)


DOCS = [
    Document("Pumps need their seals checked every month.", {"team": "maintenance"}, id="pumps"),
    Document("Valves are greased twice a year by the night shift.", {"team": "maintenance"}, id="valves"),
    Document("The cafeteria serves soup on Fridays.", {"team": "kitchen"}, id="soup"),
]


def make(cache, embedder=None) -> CorpusIndex:
    return CorpusIndex(embedder or CountingEmbedder(), chunk_size=200, chunk_overlap=0, cache_dir=cache)


def test_documents_are_searchable_and_replaced_by_id(tmp_path: Path):
    index = make(tmp_path / "cache")
    report = index.add_documents(DOCS)
    assert report.indexed == 3 and report.chunks == 3
    assert index.bm25_search("seals pumps", 1)[0][0].id == "pumps#0"
    index.add_documents([Document("Pumps are replaced every decade.", id="pumps")])
    texts = [c.text for c in index.chunks]
    assert "Pumps are replaced every decade." in texts
    assert not any("seals" in t for t in texts)  # the old version is gone
    assert len(index) == 3


def test_unchanged_documents_are_not_embedded_again_in_a_new_process(tmp_path: Path):
    first = CountingEmbedder()
    make(tmp_path / "cache", first).add_documents(DOCS)
    assert first.embedded == 3
    second = CountingEmbedder()
    index = make(tmp_path / "cache", second)
    report = index.add_documents(DOCS)
    assert second.embedded == 0
    assert report.unchanged == 3 and report.indexed == 0


def test_restore_serves_the_last_committed_corpus_without_embedding(tmp_path: Path):
    make(tmp_path / "cache").add_documents(DOCS)
    embedder = CountingEmbedder()
    index = make(tmp_path / "cache", embedder)
    hits = index.bm25_search("cafeteria soup", 2)
    assert hits and hits[0][0].id == "soup#0"
    assert embedder.embedded == 0


def test_filters_keep_matching_metadata_and_document_ids(tmp_path: Path):
    index = make(":memory:")
    index.add_documents(DOCS)
    kitchen = index.vector_search("What is served?", 5, {"team": "kitchen"})
    assert [c.id for c, _ in kitchen] == ["soup#0"]
    only_valves = index.bm25_search("greased valves pumps", 5, {"doc_id": "valves"})
    assert [c.id for c, _ in only_valves] == ["valves#0"]
    scores = [s for _, s in index.vector_search("pumps seals", 3)]
    assert scores == sorted(scores, reverse=True)


def test_delete_documents_removes_their_chunks(tmp_path: Path):
    index = make(tmp_path / "cache")
    index.add_documents(DOCS)
    assert index.delete_documents(["soup", "never-added"]) == 1
    assert {c.doc_id for c in index.chunks} == {"pumps", "valves"}
    again = make(tmp_path / "cache")
    assert again.restore()
    assert {c.doc_id for c in again.chunks} == {"pumps", "valves"}


def test_a_failing_embedder_keeps_the_previous_documents(tmp_path: Path):
    index = make(tmp_path / "cache")
    index.add_documents(DOCS[:1])

    class Broken(CountingEmbedder):
        def embed_documents(self, texts):
            raise RuntimeError("provider down")

    broken = make(tmp_path / "cache", Broken())
    with pytest.raises(RuntimeError):
        broken.add_documents(DOCS[1:])
    retry = make(tmp_path / "cache")
    retry.restore()
    assert {c.doc_id for c in retry.chunks} == {"pumps"}
    report = retry.add_documents(DOCS[1:])
    assert report.indexed == 2
    assert {c.doc_id for c in retry.chunks} == {"pumps", "valves", "soup"}


def test_a_chunker_object_decides_the_chunks_and_the_cache_key(tmp_path: Path):
    class Sentences:
        settings_key = "test-sentences-v1"

        def split_documents(self, documents):
            from akasha.chunking.recursive import make_chunks

            out = []
            for doc in documents:
                out.extend(make_chunks(doc, [s.strip() + "." for s in doc.text.split(".") if s.strip()], "test"))
            return out

    index = CorpusIndex(CountingEmbedder(), cache_dir=tmp_path / "cache", chunker=Sentences())
    index.add_documents([Document("One sentence. Two sentences. Three.", id="d")])
    assert [c.text for c in index.chunks] == ["One sentence.", "Two sentences.", "Three."]
    assert index.settings_key == "test-sentences-v1"


def test_many_small_ingests_restore_completely_without_embedding(tmp_path: Path):
    """Snapshots are rewritten only once a tenth of the corpus changed; a restart in between still
    serves every document (rebuilt from the cache) and embeds nothing."""
    index = make(tmp_path / "cache")
    docs = [Document(f"Note {i}: valve {i} is checked by team {i % 3}.", id=f"note-{i}") for i in range(40)]
    for doc in docs:
        assert index.add_documents([doc]).written == 1
    index.add_documents([Document("Note 7 was rewritten: valve 7 is retired.", id="note-7")])
    assert index.delete_documents(["note-3"]) == 1
    index.close()  # commits what a stream of small ingests left pending (flush() does it too)
    embedder = CountingEmbedder()
    again = make(tmp_path / "cache", embedder)
    assert again.restore()
    assert {c.doc_id for c in again.chunks} == {f"note-{i}" for i in range(40)} - {"note-3"}
    assert "Note 7 was rewritten: valve 7 is retired." in [c.text for c in again.chunks]
    assert again.bm25_search("valve 7 retired", 1)[0][0].id == "note-7#0"
    assert embedder.embedded == 0


def test_a_stream_of_small_ingests_commits_at_least_every_twentieth_of_the_corpus(tmp_path: Path):
    index = make(tmp_path / "cache")
    index.add_documents([Document(f"Seed note {i} about pumps.", id=f"seed-{i}") for i in range(100)])
    for i in range(4):  # 4 changes in a corpus of 104: below a twentieth, so not committed yet
        index.add_documents([Document(f"Late note {i} about valves.", id=f"late-{i}")])
    other = make(tmp_path / "cache")
    other.restore()
    assert len(other) == 100  # another instance sees the last commit
    for i in (4, 5):  # 6 changes in a corpus of 106: a twentieth, so committed
        index.add_documents([Document(f"Late note {i} about valves.", id=f"late-{i}")])
    again = make(tmp_path / "cache")
    again.restore()
    assert len(again) == 106
    index.add_documents([Document("Late note 6 about valves.", id="late-6")])
    index.flush()
    last = make(tmp_path / "cache")
    last.restore()
    assert len(last) == 107
