"""rag.as_llamaindex_retriever(): a real llama-index-core retriever in a real RetrieverQueryEngine (MockLLM)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.base_retriever import BaseRetriever  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode  # noqa: E402

import akasha  # noqa: E402
from adapter_fixtures import docs, rag  # noqa: E402, F401
from akasha.errors import ConfigError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_retriever_returns_nodes_with_source_page_and_scores(rag, docs):
    retriever = rag.as_llamaindex_retriever(str(docs), k=2)
    assert isinstance(retriever, BaseRetriever)
    found = retriever.retrieve("Which river flows through Paris, France?")
    assert len(found) == 2 and all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in found)
    top = found[0]
    assert Path(top.node.metadata["source"]).name == "paris.txt"
    assert "Paris is the capital of France" in top.node.get_content()
    assert top.node.metadata["page"] is None  # a text file has no pages
    assert top.node.node_id.rsplit("#", 1)[0].endswith("paris.txt")
    assert top.score == 1.0 and 0 < found[1].score <= 1.0  # relative to the call's best hit (documented)
    assert found[1].score == pytest.approx(found[1].node.metadata["score"] / top.node.metadata["score"])
    assert top.node.metadata["scores"] and found[0].score >= found[1].score
    # LlamaIndex's own reader names: file_path, file_name, file_type as a MIME type; ref_doc_id
    assert top.node.metadata["file_name"] == "paris.txt" and top.node.metadata["file_type"] == "text/plain"
    assert top.node.metadata["file_path"] == top.node.metadata["source"] and top.node.ref_doc_id == "paris.txt"
    # the prompt text of a node names its source, not akasha's score bookkeeping
    shown = top.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "paris.txt" in shown and "scores" not in shown and "Paris is the capital" in shown


def test_retriever_in_a_query_engine_with_llamaindex_mock_llm(rag, docs):
    retriever = rag.as_llamaindex_retriever(str(docs), k=1)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query("Which river flows through Paris, France?")
    # MockLLM (max_tokens unset) answers with the prompt it was given: the context reached the LLM
    assert "The Seine flows through Paris" in str(response)
    assert "Tokyo" not in str(response)  # k=1: only the best chunk was in the prompt
    assert len(response.source_nodes) == 1
    assert Path(response.source_nodes[0].node.metadata["source"]).name == "paris.txt"


def test_async_retrieve_and_async_query(rag, docs):
    retriever = rag.as_llamaindex_retriever(str(docs), k=1)
    found = asyncio.run(retriever.aretrieve("sourdough bread starter flour"))
    assert Path(found[0].node.metadata["source"]).name == "bread.txt"
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = asyncio.run(engine.aquery("Tokyo, Japan: a very large city"))
    assert "Tokyo is the capital of Japan" in str(response)


def test_overrides_apply_to_the_retriever_only_and_rerank(rag, docs):
    calls = []

    def reverse(query, documents):
        calls.append(len(documents))
        return list(reversed(documents))

    retriever = rag.as_llamaindex_retriever(str(docs), k=3, reranker=reverse, search_type="bm25")
    found = retriever.retrieve("the Seine flows through Paris")
    assert calls and "rerank" in found[0].node.metadata["scores"]
    assert Path(found[-1].node.metadata["source"]).name == "paris.txt"  # the reranker's order is kept
    assert rag.reranker is None  # the instance keeps its own settings


def test_bad_overrides_and_k_fail_when_the_retriever_is_made(rag, docs):
    with pytest.raises(ConfigError):
        rag.as_llamaindex_retriever(str(docs), search_type="nonsense")
    with pytest.raises(TypeError):
        rag.as_llamaindex_retriever(str(docs), no_such_option=1)
    with pytest.raises(ValueError):
        rag.as_llamaindex_retriever(str(docs), k=0)


def test_without_llama_index_the_adapter_imports_and_names_the_extra(tmp_path):
    """The adapter module imports without llama-index-core; using it raises MissingExtraError with the pip line."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(textwrap.dedent("""
        import importlib.abc, sys

        class _Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "llama_index" or name.startswith("llama_index."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, _Block())
    """), encoding="utf-8")
    script = textwrap.dedent("""
        import sys
        import akasha
        import akasha.adapters.llamaindex as adapter
        from akasha.errors import MissingExtraError
        rag = akasha.RAG(model="extractive", embeddings="hash", cache_dir=":memory:")
        try:
            rag.as_llamaindex_retriever(".", k=2)
        except MissingExtraError as exc:
            print("MISSING:", exc)
        assert not any(name.startswith("llama_index") for name in sys.modules)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "MISSING:" in result.stdout
    assert "pip install 'akasha-rag[llamaindex]'" in result.stdout and "llama-index-core" in result.stdout


def test_a_pdf_page_gets_llamaindex_reader_names():
    from akasha.adapters.llamaindex import hits_to_nodes
    from akasha.types import Chunk, Hit

    hits = [Hit(Chunk("manuals/pump.pdf#4", "Dry running cracks the seal faces.", {"source": "manuals/pump.pdf",
                                                                                     "page": 3}), 0.08, "bm25"),
            Hit(Chunk("notes.md#0", "Refill before restart.", {"source": "notes.md"}), 0.02, "vector")]
    first, second = hits_to_nodes(hits)
    assert first.node.metadata["file_type"] == "application/pdf" and first.node.metadata["page_label"] == "3"
    assert first.node.metadata["file_name"] == "pump.pdf" and first.node.ref_doc_id == "manuals/pump.pdf"
    assert (first.score, second.score) == (1.0, 0.25) and "page_label" not in second.node.metadata
