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
