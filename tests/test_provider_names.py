"""Provider names mean one thing in every door: the same string builds the same embedder in RAG and YAML."""

from __future__ import annotations

from akasha.embeddings import resolve_embedder
from akasha.embeddings.hf_api import HFInferenceEmbedder
from akasha.embeddings.local import SentenceTransformerEmbedder
from akasha.spec import build, load_spec


def spec_embedder(section: dict):
    body = {"kind": "RAGPipeline", "metadata": {"name": "names"},
            "spec": {"embeddings": section, "vector_store": {"backend": "memory"}}}
    return build(load_spec(body)).embedder


def test_hf_api_is_the_inference_api_in_both_doors():
    facade = resolve_embedder("hf_api:BAAI/bge-small-en-v1.5")
    yaml = spec_embedder({"provider": "hf_api", "model": "BAAI/bge-small-en-v1.5"})
    assert isinstance(facade, HFInferenceEmbedder) and isinstance(yaml, HFInferenceEmbedder)
    assert facade.name == yaml.name == "hf-api:BAAI/bge-small-en-v1.5"
    assert facade.url == yaml.url
    assert spec_embedder({"provider": "hf", "model": "BAAI/bge-small-en-v1.5"}).name == facade.name  # the spec's hf


def test_sentence_transformers_is_local_in_both_doors():
    facade = resolve_embedder("sentence_transformers:all-MiniLM-L6-v2")
    yaml = spec_embedder({"provider": "sentence_transformers", "model": "all-MiniLM-L6-v2"})
    assert isinstance(facade, SentenceTransformerEmbedder)
    assert facade.name == yaml.name == resolve_embedder("hf:all-MiniLM-L6-v2").name  # one cache identity
