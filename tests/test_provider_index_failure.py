"""An embedding batch that fails after retries leaves the index as it was (real client, loopback server)."""

from __future__ import annotations

import pytest

pytest.importorskip("openai")
pytest.importorskip("akasha.index")

from servers.base import serve  # noqa: E402
from servers.openai_server import OpenAIApp  # noqa: E402

from akasha.embeddings import resolve_embedder  # noqa: E402
from akasha.errors import AkashaError  # noqa: E402
from akasha.index import CorpusIndex  # noqa: E402

KEY = "sk-test-SECRET-123"


def test_failed_embedding_batch_keeps_previous_index(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Apples are red fruit that grow on trees in orchards.")
    (docs / "b.txt").write_text("Bananas are long yellow fruit from tropical plants.")
    app = OpenAIApp(api_key=KEY)
    with serve(app) as srv:
        embedder = resolve_embedder("openai:text-embedding-3-small", api_key=KEY, base_url=srv.url + "/v1",
                                    max_retries=1, retry_initial_delay=0.001, retry_jitter=0.0)
        index = CorpusIndex(embedder, chunk_size=200, cache_dir=tmp_path / "cache")
        index.sync(docs)
        before = sorted(c.text for c in index.chunks)
        assert any("Apples" in t for t in before)

        (docs / "a.txt").write_text("Apricots are small orange fruit with a stone inside.")
        app.fail_next(503, "embedding service overloaded", times=2, paths=("/embeddings",))
        with pytest.raises(AkashaError) as info:
            index.sync(docs)
        assert "overloaded" in str(info.value) and KEY not in str(info.value)
        assert sorted(c.text for c in index.chunks) == before  # nothing half-written
        assert any("Apples" in h.chunk.text for h in index.search("apples red", k=2))

        # a fresh index over the same cache sees the same, previous state
        reopened = CorpusIndex(embedder, chunk_size=200, cache_dir=tmp_path / "cache")
        reopened.sync(docs)  # the server has recovered: now the edit lands
        texts = [c.text for c in reopened.chunks]
        assert any("Apricots" in t for t in texts) and not any("Apples" in t for t in texts)


def test_nan_or_wrong_width_vectors_are_never_cached_and_a_fixed_server_heals(tmp_path):
    """issue 33: bad embedding replies were cached for good; one wrong-width vector broke the cache folder."""
    import numpy as np

    from akasha.embeddings.wrappers import CallableEmbedder
    from akasha.index import CorpusIndex

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(4):
        (docs / f"f{i}.txt").write_text(f"note {i} about the pump and its seal")
    state = {"mode": "good"}

    def embed(texts):  # noqa: ANN001, ANN202
        rows = np.array([[1.0, float(len(t)), 0.5, 0.25] for t in texts], dtype=np.float32)
        if state["mode"] == "nan":
            rows[0, 0] = np.nan
        if state["mode"] == "wide":
            rows = np.hstack([rows, rows])
        return rows

    embedder = CallableEmbedder(embed, name="flaky")
    embedder.vector_identity = "flaky"  # one identity throughout: the test is about the replies
    index = CorpusIndex(embedder, cache_dir=tmp_path / "cache", chunk_size=200, chunk_overlap=0)
    index.sync(docs)
    (docs / "f1.txt").write_text("an edited note about the valve")
    for mode, words in (("nan", "NaN"), ("wide", "8-dimensional")):
        state["mode"] = mode
        with pytest.raises(ValueError, match=words):
            index.sync(docs)
    state["mode"] = "good"
    report = index.sync(docs)  # the server is fixed: the edited file is embedded properly, nothing else
    assert report.embedded == 1 and len(index.vector_search("valve", 2)) == 2
