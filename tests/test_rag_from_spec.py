"""RAG.from_spec: the facade answering through a YAML-built RAGPipeline (one engine, two doors)."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

import akasha
import akasha.registry as registry
from akasha.errors import ConfigError
from akasha.testing import FakeLLM, HashEmbedder
from facade_fixtures import RecordingModel, write_corpus

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
{extra}"""


def write_spec(folder, pattern="hybrid", extra=""):
    path = folder / "handbook.rag.yaml"
    path.write_text(textwrap.dedent(SPEC.format(pattern=pattern, extra=extra)), encoding="utf-8")
    return path


def test_from_spec_answers_with_the_yaml_pipeline(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    prompts: list[str] = []

    def model(prompt: str) -> str:
        prompts.append(prompt)
        return "Every 5 years (coolant.md)."

    rag = akasha.RAG.from_spec(write_spec(tmp_path), model=model, k=3, cache_dir=tmp_path / "cache")
    answer = rag(docs, "When must the coolant be changed?")

    assert answer.startswith("Every 5 years")
    assert rag.docs and rag.docs[0].path.endswith("coolant.md")
    stages = [entry["stage"] for entry in rag.trace]
    assert stages[:1] == ["index"]
    assert "retrieve" in stages and "fuse" in stages and stages[-1] == "generate"
    assert "blue long-life coolant" in prompts[0]  # the pipeline's chunk reached the prompt

    # A second question re-ingests nothing: the index remembers the file hashes.
    rag(docs, "What is the tyre pressure?")
    index_entry = next(e for e in rag.trace if e["stage"] == "index")
    assert index_entry["files"] == {"indexed": 0, "unchanged": 4, "skipped": 0, "removed": 0}
    assert index_entry["embedded"] == 0
    assert rag.docs[0].path.endswith("tyres.txt")
    assert rag.last_sync.unchanged == 4


def test_from_spec_model_doubles_as_the_multi_query_llm(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    llm = FakeLLM(["air filter replacement interval\nfilter housing cracks", "Every 12 months (filters.md)."])
    rag = akasha.RAG.from_spec(write_spec(tmp_path, "multi_query"), model=llm, k=3, cache_dir=":memory:")

    answer = rag(docs, "How often is the air filter replaced?")

    assert "12 months" in answer
    assert any(entry["stage"] == "transform" for entry in rag.trace)
    assert rag.docs[0].path.endswith("filters.md")


# ------------------------------------------------------------ the spec governs
@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("search_type", "bm25", "retrieval.pattern: hybrid"),
        ("chunk_size", 1000, "chunking.chunk_size: 300"),
        ("chunk_overlap", 10, "chunking.overlap: 30"),
        ("vector_store", "chroma://localhost:8000/x", "vector_store.backend: memory"),
        ("use_chroma", True, "vector_store.backend: memory"),
        ("embeddings", "hash:32", "embeddings.provider: hash"),
        ("k", 7, "retrieval.top_k: 3"),
    ],
)
def test_a_conflicting_facade_option_names_both(tmp_path, option, value, named):
    path = write_spec(tmp_path)
    with pytest.raises(ConfigError) as info:
        akasha.RAG.from_spec(path, model=RecordingModel(), cache_dir=":memory:", **{option: value})
    assert f"{option}=" in str(info.value) and named in str(info.value) and "handbook.rag.yaml" in str(info.value)
    rag = akasha.RAG.from_spec(path, model=RecordingModel(), cache_dir=":memory:")
    with pytest.raises(ConfigError, match=named):
        rag(write_corpus(tmp_path / "docs"), "coolant?", **{option: value})
    assert rag.docs == [] and rag.response == ""


def test_agreeing_options_are_accepted(tmp_path):
    rag = akasha.RAG.from_spec(write_spec(tmp_path), model=RecordingModel("ok (coolant.md)"), cache_dir=":memory:",
                               k=3, chunk_size=300, chunk_overlap=30, search_type="auto")
    assert rag(write_corpus(tmp_path / "docs"), "coolant?", k=3).startswith("ok")


def test_the_facade_k_does_not_replace_the_spec_top_k(tmp_path):
    docs = write_corpus(tmp_path / "docs", {f"note{i}.txt": f"Maintenance note {i}: coolant and tyres." for i in range(30)})
    rag = akasha.RAG.from_spec(write_spec(tmp_path), model=RecordingModel("ok (coolant.md)"), cache_dir=":memory:",
                               chunk_size=300)
    rag(docs, "maintenance coolant tyres")
    fuse = next(e for e in rag.trace if e["stage"] == "fuse")
    assert fuse["out"] == 6  # candidates = 2 * retrieval.top_k, not 2 * the facade's default k=20
    assert len(rag.docs) <= 3


class Reverse:
    name = "reverse-spec"

    def __init__(self):
        self.calls = 0

    def rerank(self, query, hits, top_k):
        from akasha.rerank.cross_encoder import rescore

        self.calls += 1
        return rescore(hits, [float(i) for i in range(len(hits))], top_k)


def test_a_facade_reranker_is_refused_when_the_spec_reranks(tmp_path):
    reverse = Reverse()
    registry.register("reranker", "reverse-spec", lambda config, context: reverse, replace=True)
    try:
        path = write_spec(tmp_path, extra="  reranking: { enabled: true, provider: reverse-spec, top_k: 2 }\n")
        with pytest.raises(ConfigError, match="reranking.provider: reverse-spec"):
            akasha.RAG.from_spec(path, model=RecordingModel(), reranker=lambda q, d: d, cache_dir=":memory:")
        rag = akasha.RAG.from_spec(path, model=RecordingModel("ok (coolant.md)"), cache_dir=":memory:")
        rag(write_corpus(tmp_path / "docs"), "coolant?")
        assert reverse.calls == 1 and [e["name"] for e in rag.trace if e["stage"] == "rerank"] == ["reverse-spec"]
        assert len(rag.docs) <= 2
        with pytest.raises(ConfigError, match="reranker="):
            rag(tmp_path / "docs", "coolant?", reranker="llm")
    finally:
        registry.unregister("reranker", "reverse-spec")


def test_a_facade_reranker_runs_when_the_spec_does_not_rerank(tmp_path):
    seen = []

    def spy(query, documents):
        seen.append(len(documents))
        return list(reversed(documents))

    rag = akasha.RAG.from_spec(write_spec(tmp_path), model=RecordingModel("ok (coolant.md)"), cache_dir=":memory:",
                               reranker=spy, rerank_top_k=1)
    rag(write_corpus(tmp_path / "docs"), "coolant?")
    assert seen and len(rag.docs) == 1
    assert [e["stage"] for e in rag.trace].count("rerank") == 1


def test_index_and_prune_act_on_the_spec_index_and_cache_dir_is_honoured(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    cache = tmp_path / "cache"
    rag = akasha.RAG.from_spec(write_spec(tmp_path), model=RecordingModel("ok (coolant.md)"), cache_dir=cache)
    report = rag.index(docs)
    assert (report.indexed, report.unchanged) == (4, 0)
    assert (cache / "index.sqlite3").exists()
    rag(docs, "coolant?")
    entry = next(e for e in rag.trace if e["stage"] == "index")
    assert entry["files"]["unchanged"] == 4 and entry["embedded"] == 0  # the call used the index rag.index() built
    (docs / "tyres.txt").write_text("Tyres are now checked weekly.", encoding="utf-8")
    rag.index(docs)
    pruned = rag.prune()
    assert pruned.file_versions >= 1  # the old tyres.txt version of the spec's index


def test_a_restart_embeds_nothing(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    counting = HashEmbedder()
    registry.register("embedder", "counting-spec", lambda config, context: counting, replace=True)
    try:
        path = write_spec(tmp_path)
        path.write_text(path.read_text().replace("provider: hash", "provider: counting-spec"), encoding="utf-8")
        akasha.RAG.from_spec(path, model=RecordingModel("ok"), cache_dir=tmp_path / "cache")(docs, "coolant?")
        embedded = counting.calls
        assert embedded > 0
        again = akasha.RAG.from_spec(path, model=RecordingModel("ok"), cache_dir=tmp_path / "cache")
        again(docs, "coolant?")
        assert counting.calls == embedded and again.last_sync.embedded == 0
    finally:
        registry.unregister("embedder", "counting-spec")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_and_dangling_link_are_skipped_as_for_plain_rag(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    os.mkfifo(docs / "pipe.txt")
    (docs / "gone.md").symlink_to(tmp_path / "nowhere.md")
    rag = akasha.RAG.from_spec(write_spec(tmp_path), model=RecordingModel("ok (coolant.md)"), cache_dir=":memory:")
    assert rag(docs, "coolant?").startswith("ok")
    skipped = {os.path.basename(path) for path, _ in rag.last_sync.skipped_files}
    plain = akasha.RAG(model=RecordingModel("ok"), embeddings="hash", cache_dir=":memory:")
    plain(docs, "coolant?")
    assert skipped == {os.path.basename(path) for path, _ in plain.last_sync.skipped_files}
    assert "pipe.txt" in skipped


def test_from_spec_logs_name_the_spec(tmp_path):
    rag = akasha.RAG.from_spec(write_spec(tmp_path), model=RecordingModel("ok (coolant.md)"), cache_dir=":memory:",
                               keep_logs=True)
    rag(write_corpus(tmp_path / "docs"), "coolant?")
    assert rag.logs[-1]["search_type"] == "spec:handbook"
    assert json.dumps(rag.logs[-1]["docs"])
