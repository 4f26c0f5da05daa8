"""The component registry: user components by name, in code and through Python entry points."""

from __future__ import annotations

import importlib
import textwrap

import numpy as np
import pytest

import akasha.registry as registry
from akasha.retrieval.patterns import Pattern
from akasha.spec import build, load_spec
from akasha.stores.memory import MemoryStore
from tests.spec_fixtures import CORPUS, body


def test_kinds_and_builtin_names():
    assert set(registry.KINDS) == {"splitter", "embedder", "index", "reranker", "pattern"}
    assert {"fixed", "recursive", "sentence", "semantic"} <= set(registry.names("splitter"))
    assert {"memory", "faiss", "chroma", "qdrant", "pgvector"} <= set(registry.names("index"))
    with pytest.raises(ValueError, match="known kinds"):
        registry.names("retriever")
    with pytest.raises(KeyError, match="known: "):
        registry.get("index", "nope")


def test_register_every_kind_in_code(clean_registry):
    calls = {}

    class UpperSplitter:
        def split_text(self, text):
            return [text.upper()]

    class TinyEmbedder:
        name = "tiny"
        dimension = 3
        batch_size = 8

        def embed_documents(self, texts):
            return np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)

        def embed_query(self, text):
            return np.array([len(text), 1.0, 0.0], dtype=np.float32)

    class FirstOnly:
        name = "first-only"

        def rerank(self, query, hits, top_k):
            return hits[:1]

    def index_factory(config, context):
        calls["index"] = (config.get("flavour"), context.dimension, context.embedder.name)
        return MemoryStore()

    registry.register("splitter", "upper", lambda c, ctx: UpperSplitter())
    registry.register("embedder", "tiny", lambda c, ctx: TinyEmbedder())
    registry.register("index", "mine", index_factory)
    registry.register("reranker", "first", lambda c, ctx: FirstOnly())
    registry.register("pattern", "bm25_only", lambda c, ctx: Pattern("bm25_only", ("bm25",), "none"))
    pipeline = build(load_spec(body(
        chunking={"strategy": "upper"}, embeddings={"provider": "tiny"},
        vector_store={"backend": "mine", "flavour": "vanilla"}, reranking={"enabled": True, "provider": "first"},
        retrieval={"pattern": "bm25_only"})))
    assert calls["index"] == ("vanilla", 3, "tiny")  # factories get their section and the context
    assert pipeline.ingest_sync(CORPUS) == 4
    result = pipeline.query_sync("COOLANT", k=3)
    assert [h.chunk.text for h in result.hits] == [CORPUS[2]["text"].upper()]
    assert result.hits[0].source == "bm25"
    for kind, name in [("splitter", "upper"), ("embedder", "tiny"), ("index", "mine"), ("reranker", "first"),
                       ("pattern", "bm25_only")]:
        assert name in registry.names(kind)


def test_register_rules(clean_registry):
    registry.register("splitter", "dup", lambda c, ctx: None)
    with pytest.raises(ValueError, match="already registered"):
        registry.register("splitter", "dup", lambda c, ctx: None)
    registry.register("splitter", "dup", "akasha.chunking.fixed:make_fixed_splitter", replace=True)
    assert registry.get("splitter", "dup") is importlib.import_module("akasha.chunking.fixed").make_fixed_splitter
    with pytest.raises(TypeError):
        registry.register("splitter", "bad", 42)
    with pytest.raises(ValueError):
        registry.register("nope", "x", lambda c, ctx: None)


def test_registered_name_shadows_builtin(clean_registry):
    marker = MemoryStore()
    registry.register("index", "faiss", lambda c, ctx: marker)
    assert build(load_spec(body(vector_store={"backend": "faiss"}))).store is marker
    registry.unregister("index", "faiss")
    assert build(load_spec(body(vector_store={"backend": "faiss"}))).store.name == "faiss"


def test_entry_points_per_kind_group_and_shared_group(tmp_path, monkeypatch):
    package = tmp_path / "akasha_plugin_demo"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent("""
        from akasha.chunking.fixed import PieceSplitter
        from akasha.stores.memory import MemoryStore

        def make_words(config, context):
            return PieceSplitter("words", lambda text: text.split())

        class Tagged(MemoryStore):
            name = "tagged"

        def make_tagged(config, context):
            return Tagged()
    """), encoding="utf-8")
    dist = tmp_path / "akasha_plugin_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: akasha-plugin-demo\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(
        "[akasha.splitters]\nwords = akasha_plugin_demo:make_words\n\n"
        "[akasha.plugins]\nindex.tagged = akasha_plugin_demo:make_tagged\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert "words" in registry.names("splitter") and "tagged" in registry.names("index")
    pipeline = build(load_spec(body(chunking={"strategy": "words"}, vector_store={"backend": "tagged"})))
    assert pipeline.store.name == "tagged"
    assert pipeline.ingest_sync([{"id": "d", "text": "alpha beta gamma"}]) == 3
    hits = pipeline.query_sync("beta", k=3).hits
    assert sorted(h.chunk.text for h in hits) == ["alpha", "beta", "gamma"]
    assert max(h.score for h in hits) == pytest.approx(1.0)


def test_unknown_entry_point_name_still_lists_known(tmp_path):
    with pytest.raises(Exception, match="known: .*memory"):
        build(load_spec(body(vector_store={"backend": "not-installed-plugin"})))


def test_an_invalid_yaml_reranker_ordering_is_a_stage_error_and_a_value_error():
    """ragpipeline-yaml.md: a failing reranker raises StageError(stage, name, cause); ValueError still catches it."""
    from akasha import registry
    from akasha.errors import OrderingError, StageError
    from akasha.spec import build

    class Forgetful:
        name = "forgetful"

        def rerank(self, query, hits, top_k):  # noqa: ANN001, ANN201 - keeps only the first candidate
            return list(hits)[:1]

    registry.register("reranker", "forgetful-test", lambda config, context: Forgetful(), replace=True)
    pipeline = build({"apiVersion": "astromesh/v1", "kind": "RAGPipeline", "metadata": {"name": "r"},
                      "spec": {"embeddings": {"provider": "hash"}, "vector_store": {"backend": "memory"},
                               "reranking": {"enabled": True, "provider": "forgetful-test"}}})
    pipeline.ingest_sync(["pump seal failed", "valve replaced", "filter changed"])
    with pytest.raises(StageError) as caught:
        pipeline.query_sync("pump", k=3)
    assert caught.value.stage == "rerank" and isinstance(caught.value.cause, OrderingError)
    assert isinstance(caught.value, ValueError)
