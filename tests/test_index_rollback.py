"""One ingest path, one rollback guard (issue 34): a failure while the search structures are
updated leaves the previously indexed corpus searchable, in this process and the next.

The failure is injected into ``DenseIndex.add``, the last step of an ingest, after the
vectors are cached and BM25 has already been changed: the case a guard exists for.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from akasha.embeddings.hash import HashEmbedder
from akasha.index import CorpusIndex
from akasha.retrieval.dense import DenseIndex
from akasha.types import Document
from tests.reliability_helpers import assert_internally_consistent

DOCS = [
    Document("Pumps need their seals checked every month.", id="pumps"),
    Document("Valves are greased twice a year by the night shift.", id="valves"),
    Document("The cafeteria serves soup on Fridays.", id="soup"),
]
EDITED = Document("Pumps are replaced every decade by contractors.", id="pumps")


def make(cache: Path) -> CorpusIndex:
    return CorpusIndex(HashEmbedder(), chunk_size=200, chunk_overlap=0, cache_dir=cache)


def _break_dense_add(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self, *args, **kwargs):
        raise RuntimeError("dense add failed")

    monkeypatch.setattr(DenseIndex, "add", broken)


def _texts(hits) -> list[str]:
    return [chunk.text for chunk, _score in hits]


def test_a_failed_document_ingest_keeps_the_indexed_documents_searchable(tmp_path: Path, monkeypatch):
    index = make(tmp_path / "cache")
    index.add_documents(DOCS)
    with monkeypatch.context() as patch:
        _break_dense_add(patch)
        with pytest.raises(RuntimeError, match="dense add failed"):
            index.add_documents([EDITED])
    assert _texts(index.bm25_search("seals", 3)) == [DOCS[0].text]  # the old version, as before the call
    assert _texts(index.vector_search(DOCS[0].text, 1)) == [DOCS[0].text]
    assert sorted(c.text for c in index.chunks) == sorted(d.text for d in DOCS)
    assert_internally_consistent(index)
    report = index.add_documents([EDITED])  # the same call again succeeds and replaces exactly one document
    assert report.indexed == 1 and len(index) == 3
    assert _texts(index.bm25_search("decade contractors", 3)) == [EDITED.text]
    assert not index.bm25_search("seals", 3)
    assert_internally_consistent(index)
    index.close()
    again = make(tmp_path / "cache")
    assert again.restore() and sorted(c.text for c in again.chunks) == sorted(
        [EDITED.text, DOCS[1].text, DOCS[2].text])
    again.close()


def test_documents_waiting_for_their_commit_survive_a_failed_ingest(tmp_path: Path, monkeypatch):
    index = make(tmp_path / "cache")
    many = [Document(f"Routine note number {n} about shift {n % 7}.", id=f"note{n}") for n in range(100)]
    index.add_documents(many)
    extra = Document("The forklift battery is charged overnight.", id="forklift")
    index.add_documents([extra])  # one of 101: under a twentieth, so it waits for its commit
    with monkeypatch.context() as patch:
        _break_dense_add(patch)
        with pytest.raises(RuntimeError, match="dense add failed"):
            index.add_documents([Document("Ladders are inspected weekly.", id="ladders")])
    assert _texts(index.bm25_search("forklift battery", 1)) == [extra.text]
    assert len(index) == 101
    assert_internally_consistent(index)
    other = make(tmp_path / "cache")  # another process before this one commits anything more
    assert other.restore() and len(other) == 101
    other.close()
    index.close()


def test_a_failed_folder_sync_keeps_the_last_corpus_searchable(tmp_path: Path, monkeypatch):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "pumps.txt").write_text(DOCS[0].text)
    (folder / "valves.txt").write_text(DOCS[1].text)
    index = make(tmp_path / "cache")
    index.sync(folder)
    (folder / "pumps.txt").write_text(EDITED.text)
    with monkeypatch.context() as patch:
        _break_dense_add(patch)
        with pytest.raises(RuntimeError, match="dense add failed"):
            index.sync(folder)
    hits = index.search("seals", k=2, search_type="bm25")
    assert [h.chunk.text for h in hits] == [DOCS[0].text]
    assert_internally_consistent(index)
    report = index.sync(folder)
    assert report.indexed == 1 and report.unchanged == 1
    assert [h.chunk.text for h in index.search("decade contractors", k=1, search_type="bm25")] == [EDITED.text]
    index.close()
