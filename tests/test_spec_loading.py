"""RAGPipeline 'Loading and validation': every row of the reference's error table, and its promises."""

from __future__ import annotations

import sys

import pytest

from akasha.errors import AkashaError, MissingExtraError, RAGError, SpecError
from akasha.spec import build, load_spec, load_spec_file
from tests.spec_fixtures import body

# ------------------------------------------------------------- load_spec rows


@pytest.mark.parametrize(
    "doc, needle",
    [
        (["not", "a", "mapping"], "must be a mapping"),
        ("kind: RAGPipeline", "must be a mapping"),
        ({"kind": "Agent", "metadata": {"name": "x"}}, "kind must be 'RAGPipeline'"),
        ({"metadata": {"name": "x"}}, "kind must be 'RAGPipeline'"),
        ({"kind": "RAGPipeline"}, "metadata"),
        ({"kind": "RAGPipeline", "metadata": {}}, "metadata.name is missing"),
        ({"kind": "RAGPipeline", "metadata": {"name": "  "}}, "metadata.name is missing"),
        ({"kind": "RAGPipeline", "metadata": {"name": "x"}, "spec": ["chunking"]}, "spec must be a mapping"),
        ({"kind": "RAGPipeline", "metadata": {"name": "x"}, "spec": {"chunking": "fixed"}}, "spec.chunking"),
        ({"kind": "RAGPipeline", "metadata": {"name": "x"}, "spec": {"embeddings": [1]}}, "spec.embeddings"),
        ({"kind": "RAGPipeline", "metadata": {"name": "x"}, "spec": {"vector_store": 3}}, "spec.vector_store"),
        ({"kind": "RAGPipeline", "metadata": {"name": "x"}, "spec": {"reranking": True}}, "spec.reranking"),
        ({"kind": "RAGPipeline", "metadata": {"name": "x"}, "spec": {"retrieval": "hybrid"}}, "spec.retrieval"),
    ],
)
def test_load_spec_rejects_bad_shapes(doc, needle):
    with pytest.raises(SpecError, match=needle) as info:
        load_spec(doc)
    assert isinstance(info.value, RAGError) and isinstance(info.value, AkashaError)


def test_load_spec_checks_shape_only():
    # names are not resolved by load_spec: an unknown backend loads, and build rejects it
    spec = load_spec(body(vector_store={"backend": "nope"}, retrieval={"pattern": "nope"}))
    assert spec.vector_store["backend"] == "nope"
    with pytest.raises(SpecError):
        build(spec)


def test_every_section_is_optional_and_unknown_keys_are_ignored():
    doc = {"kind": "RAGPipeline", "metadata": {"name": "min", "labels": {"x": 1}}, "extra": 1,
           "spec": {"embeddings": {"provider": "hash", "colour": "blue"}, "vector_store": {"backend": "memory"},
                    "retrieval": {"patern": "hybrid"}, "unknown_section": {"a": 1}}}
    spec = load_spec(doc)
    assert spec.name == "min" and spec.chunking == {} and spec.reranking == {}
    pipeline = build(spec)
    assert pipeline.pattern.name == "naive"  # the misspelt key is ignored, as documented


def test_api_version_is_not_checked():
    doc = body()
    doc["apiVersion"] = "something/else"
    assert load_spec(doc).api_version == "something/else"
    del doc["apiVersion"]
    assert load_spec(doc).api_version is None


def test_load_spec_file_reads_yaml(tmp_path):
    path = tmp_path / "product.rag.yaml"
    path.write_text(
        "apiVersion: astromesh/v1\nkind: RAGPipeline\nmetadata:\n  name: product-knowledge\nspec:\n"
        "  chunking: { strategy: recursive, chunk_size: 512, overlap: 50 }\n"
        "  embeddings: { provider: hash }\n  vector_store: { backend: memory }\n"
        "  retrieval:\n    pattern: hybrid\n    top_k: 5\n    candidates: 20\n    hybrid: { fusion: rrf }\n",
        encoding="utf-8",
    )
    spec = load_spec_file(path)
    assert spec.name == "product-knowledge" and spec.chunking["chunk_size"] == 512
    assert spec.source == str(path)
    assert build(path).pattern.name == "hybrid"  # build also takes a path


def test_load_spec_file_errors_name_the_file(tmp_path):
    with pytest.raises(SpecError, match="no such"):
        load_spec_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed", encoding="utf-8")
    with pytest.raises(SpecError, match="bad.yaml"):
        load_spec_file(bad)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("kind: Other\nmetadata: {name: x}\n", encoding="utf-8")
    with pytest.raises(SpecError, match="wrong.yaml.*kind"):
        load_spec_file(wrong)


def test_empty_sections_in_yaml_mean_defaults(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("kind: RAGPipeline\nmetadata: {name: x}\nspec:\n  chunking:\n  embeddings: {provider: hash}\n"
                    "  vector_store: {backend: memory}\n", encoding="utf-8")
    pipeline = build(load_spec_file(path))
    assert pipeline.splitter.strategy == "recursive"
    assert pipeline.ingest_sync(["word " * 200]) == 3  # 1000 characters, chunk_size 500, overlap 50


# ------------------------------------------------------------------ build rows


@pytest.mark.parametrize(
    "section, key, known",
    [
        ("chunking", "strategy", ["fixed", "recursive", "semantic", "sentence"]),
        ("embeddings", "provider", ["hash", "hf", "ollama", "sentence_transformer", "sentence_transformers"]),
        ("vector_store", "backend", ["chroma", "faiss", "memory", "pgvector", "qdrant"]),
        ("retrieval", "pattern", ["hybrid", "hyde", "multi_query", "naive"]),
    ],
)
def test_unknown_component_names_list_the_known_ones(section, key, known):
    doc = body()
    doc["spec"].setdefault(section, {})[key] = "does-not-exist"
    with pytest.raises(SpecError, match="does-not-exist") as info:
        build(load_spec(doc))
    for name in known:
        assert name in str(info.value)


def test_unknown_reranker_provider_lists_known_ones():
    with pytest.raises(SpecError, match="cohere.*cross_encoder"):
        build(load_spec(body(reranking={"enabled": True, "provider": "nope"})))


def test_unknown_reranker_is_fine_while_disabled():
    build(load_spec(body(reranking={"enabled": False, "provider": "nope"})))


@pytest.mark.parametrize("pattern", ["multi_query", "hyde"])
def test_llm_patterns_need_an_llm_at_build(pattern):
    with pytest.raises(SpecError, match="llm"):
        build(load_spec(body(retrieval={"pattern": pattern})))
    from akasha.testing import FakeLLM

    assert build(load_spec(body(retrieval={"pattern": pattern})), llm=FakeLLM()).pattern.name == pattern


@pytest.mark.parametrize("strategy", ["fixed", "recursive"])
@pytest.mark.parametrize(
    "window",
    [{"chunk_size": 0}, {"chunk_size": -5}, {"overlap": -1}, {"chunk_size": 100, "overlap": 100},
     {"chunk_size": 100, "overlap": 150}, {"chunk_size": "big"}],
)
def test_bad_chunk_windows_fail_at_build(strategy, window):
    with pytest.raises(SpecError, match="chunk"):
        build(load_spec(body(chunking={"strategy": strategy, **window})))


@pytest.mark.parametrize("strategy", ["sentence", "semantic"])
def test_overlap_is_not_validated_where_it_is_ignored(strategy):
    build(load_spec(body(chunking={"strategy": strategy, "chunk_size": 100, "overlap": 500})))
    with pytest.raises(SpecError):
        build(load_spec(body(chunking={"strategy": strategy, "chunk_size": 0})))


@pytest.mark.parametrize("table", ["bad-name", "drop table x;--", "1abc", "a" * 64, "", "with space", 7])
def test_pgvector_table_must_be_a_plain_identifier(table):
    with pytest.raises(SpecError, match="identifier"):
        build(load_spec(body(vector_store={"backend": "pgvector", "collection": table})))


def test_pgvector_good_identifier_builds_without_connecting():
    pipeline = build(load_spec(body(vector_store={"backend": "pgvector", "collection": "Product_docs_2",
                                                  "connection": {"host": "127.0.0.1", "port": 1}})))
    assert pipeline.store.table == "Product_docs_2"
    assert pipeline.store.connect_kwargs["database"] == "astromesh"


@pytest.mark.parametrize(
    "retrieval",
    [{"top_k": 0}, {"top_k": "5"}, {"candidates": -1}, {"similarity_threshold": "high"},
     {"pattern": "hybrid", "fusion": "max"}, {"pattern": "hybrid", "hybrid": {"fusion": "sum"}},
     {"pattern": "hybrid", "hybrid": {"weights": [1.0]}}, {"pattern": "hybrid", "hybrid": {"weights": [1, 2, 3]}},
     {"pattern": "hybrid", "hybrid": {"weights": ["a", "b"]}}],
)
def test_bad_retrieval_values_fail_at_build(retrieval):
    with pytest.raises(SpecError):
        build(load_spec(body(retrieval=retrieval)))


# ------------------------------------------------------------- missing extras


@pytest.mark.parametrize(
    "backend, module, extra",
    [("faiss", "faiss", "faiss"), ("qdrant", "qdrant_client", "qdrant"), ("chroma", "chromadb", "chroma")],
)
def test_missing_extra_is_raised_by_build(monkeypatch, backend, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # the package is "not installed"
    with pytest.raises(MissingExtraError, match=rf"pip install 'akasha-rag\[{extra}\]'"):
        build(load_spec(body(vector_store={"backend": backend, "url": ":memory:"})))


def test_missing_sentence_transformers_is_raised_by_build(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sentence_transformers" else real(name, *a))
    with pytest.raises(MissingExtraError, match=r"akasha-rag\[full\]"):
        build(load_spec(body(embeddings={"provider": "sentence_transformers"})))


def test_pgvector_checks_its_driver_on_first_use_not_at_build(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)
    pipeline = build(load_spec(body(vector_store={"backend": "pgvector"})))  # builds fine
    with pytest.raises(MissingExtraError, match=r"pip install 'akasha-rag\[pgvector\]'"):
        pipeline.ingest_sync(["some text"])
    with pytest.raises(MissingExtraError, match="psycopg"):
        pipeline.query_sync("a question")


@pytest.mark.parametrize(
    "sections",
    [
        {"embeddings": {"provider": "hf"}},
        {"embeddings": {"provider": "ollama"}},
        {"reranking": {"enabled": True, "provider": "cohere", "api_key": "k"}},
    ],
)
def test_missing_httpx_is_raised_by_build(monkeypatch, sections):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "httpx" else real(name, *a))
    with pytest.raises(MissingExtraError, match=r"httpx.*akasha-rag\[light\]"):
        build(load_spec(body(**sections)))


def test_remote_stores_are_not_contacted_at_build():
    # nothing listens on these ports; build must still succeed (the first use reports the connection)
    build(load_spec(body(vector_store={"backend": "qdrant", "url": "http://127.0.0.1:9"})))
    build(load_spec(body(vector_store={"backend": "pgvector", "dsn": "postgresql://x@127.0.0.1:9/db"})))


@pytest.mark.parametrize("enabled", ["false", "true", 1, 0, "no"])
def test_reranking_enabled_must_be_a_boolean(enabled):
    with pytest.raises(SpecError, match="reranking.enabled must be true or false"):
        build(load_spec(body(reranking={"enabled": enabled, "provider": "cross_encoder"})))
    assert build(load_spec(body(reranking={"enabled": False}))).reranker is None
