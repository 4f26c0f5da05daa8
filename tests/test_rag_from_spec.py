"""RAG.from_spec: the facade answering through a YAML-built RAGPipeline (one engine, two doors)."""

from __future__ import annotations

import textwrap

import akasha
from akasha.testing import FakeLLM
from facade_fixtures import write_corpus

SPEC = """\
apiVersion: astromesh/v1
kind: RAGPipeline
metadata:
  name: handbook
spec:
  chunking: {{ strategy: recursive, chunk_size: 300, overlap: 30 }}
  embeddings: {{ provider: hash }}
  vector_store: {{ backend: memory }}
  retrieval:
    pattern: {pattern}
    top_k: 3
    hybrid: {{ fusion: rrf }}
"""


def write_spec(folder, pattern="hybrid"):
    path = folder / "handbook.rag.yaml"
    path.write_text(textwrap.dedent(SPEC.format(pattern=pattern)), encoding="utf-8")
    return path


def test_from_spec_answers_with_the_yaml_pipeline(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    prompts: list[str] = []

    def model(prompt: str) -> str:
        prompts.append(prompt)
        return "Every 5 years (coolant.md)."

    rag = akasha.RAG.from_spec(write_spec(tmp_path), model=model, k=3)
    answer = rag(docs, "When must the coolant be changed?")

    assert answer.startswith("Every 5 years")
    assert rag.docs and rag.docs[0].path.endswith("coolant.md")
    stages = [entry["stage"] for entry in rag.trace]
    assert stages[:1] == ["index"]
    assert "retrieve" in stages and "fuse" in stages and stages[-1] == "generate"
    assert "blue long-life coolant" in prompts[0]  # the pipeline's chunk reached the prompt

    # A second question re-ingests nothing: the pipeline remembers the file hashes.
    rag(docs, "What is the tyre pressure?")
    index_entry = next(e for e in rag.trace if e["stage"] == "index")
    assert index_entry["out"] == 0
    assert rag.docs[0].path.endswith("tyres.txt")


def test_from_spec_model_doubles_as_the_multi_query_llm(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    llm = FakeLLM(["air filter replacement interval\nfilter housing cracks", "Every 12 months (filters.md)."])
    rag = akasha.RAG.from_spec(write_spec(tmp_path, "multi_query"), model=llm, k=3)

    answer = rag(docs, "How often is the air filter replaced?")

    assert "12 months" in answer
    assert any(entry["stage"] == "transform" for entry in rag.trace)
    assert rag.docs[0].path.endswith("filters.md")
