"""RAGPipeline 'embeddings' table: providers over real wire formats (loopback servers) and the dimension rules."""

from __future__ import annotations

import numpy as np
import pytest

from akasha.embeddings.identity import PROBE_TEXTS

from akasha.spec import build, load_spec
from tests.spec_fixtures import body, json_server


def vector_for(text: str, dim: int) -> list[float]:
    rng = np.random.default_rng(abs(hash(text)) % (2**32))
    return rng.normal(size=dim).round(5).tolist()


def ollama_handler(dim: int):
    def handle(path, payload, headers):
        if path != "/api/embed":
            return 404, {"error": f"no route {path}"}
        return 200, {"model": payload["model"], "embeddings": [vector_for(t, dim) for t in payload["input"]]}

    return handle


def test_ollama_defaults():
    pipeline = build(load_spec(body(embeddings={"provider": "ollama"})))
    assert pipeline.embedder.name == "ollama:nomic-embed-text"
    assert pipeline.embedder.connection.base_url == "http://ollama:11434"
    assert pipeline.dimension == 384  # Ollama reports nothing before it is called


def test_ollama_over_api_embed():
    with json_server(ollama_handler(12)) as (url, requests):
        pipeline = build(load_spec(body(embeddings={"provider": "ollama", "endpoint": url, "model": "tiny-embed",
                                                    "dimension": 12})))
        assert pipeline.ingest_sync([{"id": "a", "text": "alpha text"}, {"id": "b", "text": "beta text"}]) == 2
        hits = pipeline.query_sync("alpha text", k=1).hits
    assert hits[0].chunk.id == "a#0" and hits[0].score == pytest.approx(1.0, abs=1e-5)
    paths = {p for p, _, _ in requests}
    assert paths == {"/api/embed"}
    requests = [r for r in requests if r[1]["input"] != list(PROBE_TEXTS)]  # the identity probe, once
    assert requests[0][1]["model"] == "tiny-embed" and requests[0][1]["input"] == ["alpha text", "beta text"]


def tei_handler(dim: int, token_level: bool = False):
    def handle(path, payload, headers):
        inputs = payload["inputs"]
        inputs = [inputs] if isinstance(inputs, str) else inputs
        if token_level:  # feature-extraction without pooling: one vector per token
            return 200, [[vector_for(t, dim), vector_for(t + "!", dim)] for t in inputs]
        return 200, [vector_for(t, dim) for t in inputs]

    return handle


def test_hf_against_a_tei_server():
    with json_server(tei_handler(16)) as (url, requests):
        pipeline = build(load_spec(body(embeddings={"provider": "hf", "endpoint": url, "api_key": "hf_secret"})))
        assert pipeline.dimension == 384  # nothing reported at build, no dimension key
        pipeline = build(load_spec(body(embeddings={"provider": "hf", "endpoint": url, "api_key": "hf_secret",
                                                    "dimension": 16})))
        assert pipeline.ingest_sync(["gamma text", "delta text"]) == 2
        hits = pipeline.query_sync("delta text", k=1).hits
    assert hits[0].chunk.text == "delta text"
    requests = [r for r in requests if r[1]["inputs"] != list(PROBE_TEXTS)]  # the identity probe, once
    path, payload, headers = requests[0]
    assert path == "/embed" and payload == {"inputs": ["gamma text", "delta text"]}
    assert headers["authorization"] == "Bearer hf_secret"
    assert "hf_secret" not in repr(pipeline.embedder) and "hf_secret" not in pipeline.embedder.name


def test_hf_inference_api_shape_and_token_pooling():
    from akasha.embeddings.hf_api import HFInferenceEmbedder

    with json_server(tei_handler(8, token_level=True)) as (url, requests):
        full = f"{url}/hf-inference/models/BAAI/bge-small-en-v1.5/pipeline/feature-extraction"
        embedder = HFInferenceEmbedder(endpoint=full)
        matrix = embedder.embed_documents(["one", "two"])
    assert requests[0][0] == "/hf-inference/models/BAAI/bge-small-en-v1.5/pipeline/feature-extraction"
    expected = (np.array(vector_for("one", 8)) + np.array(vector_for("one!", 8))) / 2
    assert matrix.shape == (2, 8) and np.allclose(matrix[0], expected, atol=1e-4)
    assert embedder.dimension == 8


def test_hf_defaults_to_the_inference_api_for_the_model():
    pipeline = build(load_spec(body(embeddings={"provider": "hf"})))
    assert "BAAI/bge-small-en-v1.5" in pipeline.embedder.url
    assert pipeline.embedder.url.startswith("https://")


def test_hf_errors_are_provider_errors():
    from akasha.errors import ProviderError, StageError

    with json_server(lambda p, b, h: (503, {"error": "loading"})) as (url, _):
        pipeline = build(load_spec(body(embeddings={"provider": "hf", "endpoint": url})))
        with pytest.raises(StageError) as info:
            pipeline.ingest_sync(["x"])
    assert isinstance(info.value.cause, ProviderError) and info.value.cause.status == 503


@pytest.mark.parametrize("provider", ["sentence_transformers", "sentence_transformer"])
def test_sentence_transformers_reports_its_dimension_at_build(provider):
    pipeline = build(load_spec(body(embeddings={"provider": provider})))
    assert pipeline.embedder.name == "hf:all-MiniLM-L6-v2"
    assert pipeline.dimension == 384


@pytest.mark.integration
def test_sentence_transformers_offline_end_to_end(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    pipeline = build(load_spec(body(embeddings={"provider": "sentence_transformers"},
                                    vector_store={"backend": "faiss"})))
    pipeline.ingest_sync(["The cat sleeps on the sofa.", "Interest rates rose in March."])
    assert pipeline.query_sync("Where is the cat?", k=1).hits[0].chunk.text.startswith("The cat")


def test_hash_is_the_testing_embedder_with_64_dimensions():
    from akasha.testing import HashEmbedder

    pipeline = build(load_spec(body()))
    assert isinstance(pipeline.embedder, HashEmbedder) and pipeline.dimension == 64
    assert pipeline.embedder.embed_query("x").shape == (64,)


def test_dimension_key_wins_then_reported_then_384():
    assert build(load_spec(body(embeddings={"provider": "hash", "dimension": 32}))).dimension == 32
    assert build(load_spec(body(embeddings={"provider": "hash"}))).dimension == 64
    assert build(load_spec(body(embeddings={"provider": "ollama"}))).dimension == 384
    with pytest.raises(Exception, match="dimension"):
        build(load_spec(body(embeddings={"provider": "hash", "dimension": 0})))


def test_indexes_are_created_with_the_pipeline_dimension():
    faiss = build(load_spec(body(embeddings={"provider": "ollama", "dimension": 768}, vector_store={"backend": "faiss"})))
    assert faiss.store.dimension == 768
    plural = build(load_spec(body(vector_store={"backend": "faiss", "dimensions": 64})))
    assert plural.store.dimension == 64
    qdrant = build(load_spec(body(embeddings={"provider": "ollama"}, vector_store={"backend": "qdrant", "url": ":memory:"})))
    assert qdrant.store.dimension == 384
    assert build(load_spec(body(embeddings={"provider": "ollama"}))).store.name == "memory"
    default_backend = build(load_spec({"kind": "RAGPipeline", "metadata": {"name": "x"},
                                       "spec": {"embeddings": {"provider": "hash"}}}))
    assert default_backend.store.name == "faiss" and default_backend.store.dimension == 64


def test_wrong_default_dimension_shows_up_at_ingest():
    """Without embeddings.dimension a 768-wide model meets a 384-wide faiss index: a clear error."""
    with json_server(ollama_handler(768)) as (url, _):
        pipeline = build(load_spec(body(embeddings={"provider": "ollama", "endpoint": url},
                                        vector_store={"backend": "faiss"})))
        with pytest.raises(ValueError, match="768 dimensions.*384"):
            pipeline.ingest_sync(["text"])


def test_vector_store_defaults():
    chroma = build(load_spec(body(vector_store={"backend": "chroma"})))
    assert chroma.store.collection_name == "astromesh"
    assert chroma.store.collection.metadata["hnsw:space"] == "cosine"
    qdrant = build(load_spec(body(vector_store={"backend": "qdrant"})))
    assert (qdrant.store.collection, qdrant.store._url) == ("astromesh", "http://localhost:6333")
    pg = build(load_spec(body(vector_store={"backend": "pgvector"})))
    assert pg.store.table == "embeddings" and pg.store.dsn is None
    assert pg.store.connect_kwargs == {"host": "localhost", "port": 5432, "database": "astromesh",
                                       "user": "astromesh", "password": "astromesh"}
    dsn = build(load_spec(body(vector_store={"backend": "pgvector", "dsn": "postgresql://u@h/db"})))
    assert dsn.store.dsn == "postgresql://u@h/db"
