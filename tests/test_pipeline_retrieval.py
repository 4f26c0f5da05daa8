"""RAGPipeline 'retrieval' table, the result shape, the trace and the error rules of query()."""

from __future__ import annotations

import asyncio

import pytest

import akasha.registry as registry
from akasha.errors import StageError
from akasha.retrieval.fusion import RRF_K
from akasha.spec import build, load_spec
from akasha.testing import FakeLLM
from akasha.types import QueryResult
from tests.spec_fixtures import CORPUS, CountingEmbedder, body

MANY = [{"id": f"d{i:02d}", "text": f"common words document number {i} about topic{i % 3}"} for i in range(30)]


def make(llm=None, **sections):
    return build(load_spec(body(**sections)), llm=llm)


@pytest.fixture
def counting(register_embedder):
    return register_embedder("counting-test", CountingEmbedder())


# ----------------------------------------------------------------- the result
def test_query_result_shape():
    pipeline = make(retrieval={"pattern": "hybrid"})
    assert asyncio.run(pipeline.ingest(CORPUS)) == 4
    result = asyncio.run(pipeline.query("How often should the air filter be replaced?", k=2))
    assert isinstance(result, QueryResult) and len(result.hits) == 2
    assert result.hits[0].chunk.id == "filters#0"
    assert result.context == "\n\n".join(h.chunk.text for h in result.hits)
    first = result.to_list()[0]
    assert set(first) == {"doc_id", "content", "metadata", "score", "source"}
    assert first["doc_id"] == "filters#0" and first["metadata"]["topic"] == "maintenance"
    assert first["source"] == "bm25+vector"
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)


def test_trace_has_one_entry_per_stage():
    reranker_calls = []

    class Keep:
        name = "keep"

        def rerank(self, query, hits, top_k):
            reranker_calls.append(len(hits))
            return hits[:top_k]

    registry.register("reranker", "keep-test", lambda c, ctx: Keep(), replace=True)
    try:
        pipeline = make(llm=FakeLLM("air filter interval"), retrieval={"pattern": "multi_query", "variants": 1},
                        reranking={"enabled": True, "provider": "keep-test"})
        pipeline.ingest_sync(CORPUS)
        trace = pipeline.query_sync("air filter", k=2).trace
    finally:
        registry.unregister("reranker", "keep-test")
    assert [e["stage"] for e in trace] == ["transform", "retrieve", "retrieve", "fuse", "rerank", "context"]
    for entry in trace:
        assert {"stage", "name", "ms", "in", "out"} <= set(entry) and "error" not in entry
        assert entry["ms"] >= 0
    assert trace[0]["name"] == "multi_query" and trace[0]["out"] == 2
    assert trace[3]["name"] == "rrf" and trace[4]["name"] == "keep" and trace[-1]["out"] == 2


def test_empty_or_blank_query_calls_nothing(counting):
    llm = FakeLLM("x")
    pipeline = make(llm=llm, embeddings={"provider": "counting-test"}, retrieval={"pattern": "multi_query"})
    pipeline.ingest_sync(CORPUS)
    for q in ["", "   ", "\n\t"]:
        result = pipeline.query_sync(q)
        assert result.hits == [] and result.trace == [] and result.context == ""
    assert counting.query_calls == 0 and llm.calls == []


@pytest.mark.parametrize("k", [0, -1, 1.5, 2.0, "3", True])
def test_k_must_be_a_positive_integer(k):
    pipeline = make()
    with pytest.raises(ValueError, match="positive integer"):
        pipeline.query_sync("question", k=k)


# ------------------------------------------------------------ top_k/candidates
@pytest.mark.parametrize("pattern", ["naive", "hybrid"])
def test_top_k_is_the_default_and_explicit_k_grows_candidates(pattern):
    pipeline = make(retrieval={"pattern": pattern, "top_k": 3})
    pipeline.ingest_sync(MANY)
    assert len(pipeline.query_sync("common words document").hits) == 3
    big = pipeline.query_sync("common words document", k=12)
    assert len(big.hits) == 12
    assert big.trace[0]["out"] == 24  # candidates grew to 2 * k
    assert len(pipeline.query_sync("common words document", k=100).hits) == 30  # all the index has


def test_candidates_default_to_twice_top_k_and_can_be_set():
    pipeline = make(retrieval={"top_k": 4})
    pipeline.ingest_sync(MANY)
    assert pipeline.query_sync("common words").trace[0]["out"] == 8
    pipeline = make(retrieval={"top_k": 4, "candidates": 5})
    pipeline.ingest_sync(MANY)
    result = pipeline.query_sync("common words")
    assert result.trace[0]["out"] == 5 and len(result.hits) == 4
    assert len(pipeline.query_sync("common words", k=9).hits) == 9  # explicit candidates grow with k too


def test_similarity_threshold_drops_vector_hits_only():
    pipeline = make(retrieval={"pattern": "hybrid", "similarity_threshold": 0.999})
    pipeline.ingest_sync(CORPUS)
    result = pipeline.query_sync("coolant radiator")
    vector, bm25 = result.trace[0], result.trace[1]
    assert vector["name"] == "vector" and vector["out"] == 0  # too high: visible in the trace
    assert bm25["name"] == "bm25" and bm25["out"] > 0
    assert result.hits and all(h.source == "bm25" for h in result.hits)


def test_similarity_threshold_uses_the_index_cosine():
    loose = make(retrieval={"similarity_threshold": -1.0})
    loose.ingest_sync(CORPUS)
    scores = [h.score for h in loose.query_sync("coolant radiator", k=4).hits]
    cut = (scores[0] + scores[1]) / 2
    strict = make(retrieval={"similarity_threshold": cut})
    strict.ingest_sync(CORPUS)
    assert [h.score for h in strict.query_sync("coolant radiator", k=4).hits] == pytest.approx([scores[0]])


# --------------------------------------------------------------------- fusion
def test_hybrid_rrf_scores():
    pipeline = make(retrieval={"pattern": "hybrid"})
    pipeline.ingest_sync(CORPUS)
    result = pipeline.query_sync("coolant radiator cap", k=4)
    top = result.hits[0]
    assert top.chunk.id == "coolant#0" and top.source == "bm25+vector"
    assert top.score == pytest.approx(2 / (RRF_K + 1)) == top.details["rrf"]
    assert {"vector", "bm25", "rrf"} <= set(top.details)
    assert result.trace[2] == {**result.trace[2], "stage": "fuse", "name": "rrf"}


@pytest.mark.parametrize(
    "retrieval",
    [
        {"pattern": "hybrid", "fusion": "weighted"},
        {"pattern": "hybrid", "hybrid": {"fusion": "weighted"}},
        {"pattern": "hybrid", "fusion": "weighted", "hybrid": {"fusion": "rrf"}},  # retrieval.fusion wins
    ],
)
def test_weighted_fusion_spellings(retrieval):
    pipeline = make(retrieval=retrieval)
    assert pipeline.pattern.fusion == "weighted" and pipeline.pattern.weights == (0.5, 0.5)
    pipeline.ingest_sync(CORPUS)
    result = pipeline.query_sync("coolant radiator cap")
    assert result.trace[2]["name"] == "weighted" and "fused" in result.hits[0].details
    assert result.hits[0].score == pytest.approx(1.0)  # best of both lists: 0.5 * 1 + 0.5 * 1


def test_rrf_wins_when_flat_key_says_so():
    pipeline = make(retrieval={"pattern": "hybrid", "fusion": "rrf", "hybrid": {"fusion": "weighted"}})
    assert pipeline.pattern.fusion == "rrf"


def test_weights_favour_one_retriever():
    only_vector = make(retrieval={"pattern": "hybrid", "hybrid": {"fusion": "weighted", "weights": [1.0, 0.0]}})
    naive = make()
    for p in (only_vector, naive):
        p.ingest_sync(MANY)
    q = "document number 7 topic1"
    fused_ids = [h.chunk.id for h in only_vector.query_sync(q, k=5).hits]
    vector_ids = [h.chunk.id for h in naive.query_sync(q, k=5).hits]
    assert fused_ids[0] == vector_ids[0]
    only_bm25 = make(retrieval={"pattern": "hybrid", "hybrid": {"fusion": "weighted", "weights": [0, 1]}})
    only_bm25.ingest_sync(MANY)
    assert only_bm25.query_sync(q, k=1).hits[0].chunk.id == "d07#0"


# ----------------------------------------------------------- llm patterns
def test_multi_query_variants_default_and_both_spellings():
    assert make(llm=FakeLLM(), retrieval={"pattern": "multi_query"}).pattern.variants == 3
    assert make(llm=FakeLLM(), retrieval={"pattern": "multi_query", "variants": 2}).pattern.variants == 2
    nested = make(llm=FakeLLM(), retrieval={"pattern": "multi_query", "variants": 2, "multi_query": {"variants": 4}})
    assert nested.pattern.variants == 4
    with pytest.raises(Exception):
        make(llm=FakeLLM(), retrieval={"pattern": "multi_query", "multi_query": {"variants": 0}})


def test_multi_query_runs_every_variant_and_fuses_by_rrf():
    llm = FakeLLM("1. radiator cap when hot\n2. coolant change interval\n3. tyre rotation distance\n4. extra line")
    pipeline = make(llm=llm, retrieval={"pattern": "multi_query", "top_k": 4})
    pipeline.ingest_sync(CORPUS)
    result = pipeline.query_sync("engine care")
    assert "3" in llm.calls[0][-1]["content"] and "engine care" in llm.calls[0][-1]["content"]
    assert result.trace[0] == {**result.trace[0], "stage": "transform", "out": 4}
    retrieves = [e for e in result.trace if e["stage"] == "retrieve"]
    assert len(retrieves) == 4 and all(e["name"] == "vector" for e in retrieves)
    assert [e for e in result.trace if e["stage"] == "fuse"][0]["name"] == "rrf"
    ids = {h.chunk.id for h in result.hits}
    assert {"coolant#0", "tyres#0"} <= ids
    assert all("rrf" in h.details for h in result.hits)


def test_hyde_searches_with_a_hypothetical_passage():
    passage = "Rotate the tyres every 8000 km and check tyre pressure monthly."
    llm = FakeLLM(passage)
    pipeline = make(llm=llm, retrieval={"pattern": "hyde", "top_k": 2})
    pipeline.ingest_sync(CORPUS)
    result = pipeline.query_sync("zzz unrelated words")
    tyres = [h for h in result.hits if h.chunk.id == "tyres#0"]
    assert tyres and tyres[0].details["rrf"] >= 1 / (RRF_K + 1)  # first in the passage's list
    assert passage in llm.calls[0][-1]["content"] or "zzz unrelated words" in llm.calls[0][-1]["content"]
    assert result.trace[0]["name"] == "hyde" and result.trace[0]["out"] == 2
    assert [e["stage"] for e in result.trace] == ["transform", "retrieve", "retrieve", "fuse", "context"]


def test_llm_may_be_a_model_string_or_async():
    pipeline = make(llm="extractive", retrieval={"pattern": "hyde"})
    assert hasattr(pipeline.llm, "generate")


# ---------------------------------------------------------------- failures
def test_failing_transform_raises_stage_error():
    pipeline = make(llm=FakeLLM(error=RuntimeError("llm down")), retrieval={"pattern": "multi_query"})
    pipeline.ingest_sync(CORPUS)
    with pytest.raises(StageError) as info:
        pipeline.query_sync("question")
    assert info.value.stage == "transform" and info.value.name == "multi_query"
    assert isinstance(info.value.cause, RuntimeError)


def test_failing_reranker_raises_stage_error():
    class Broken:
        name = "broken"

        def rerank(self, query, hits, top_k):
            raise ValueError("bad ordering")

    registry.register("reranker", "broken-test", lambda c, ctx: Broken(), replace=True)
    try:
        pipeline = make(reranking={"enabled": True, "provider": "broken-test"})
        pipeline.ingest_sync(CORPUS)
        with pytest.raises(StageError) as info:
            pipeline.query_sync("coolant")
    finally:
        registry.unregister("reranker", "broken-test")
    assert info.value.stage == "rerank" and info.value.name == "broken"


def test_failing_retriever_is_recorded_and_others_carry_on(monkeypatch):
    pipeline = make(retrieval={"pattern": "hybrid"})
    pipeline.ingest_sync(CORPUS)

    def broken_bm25(query, k, filters=None):
        raise OSError("bm25 file vanished")

    monkeypatch.setattr(pipeline.index, "bm25_search", broken_bm25)
    result = pipeline.query_sync("coolant radiator")
    bm25 = [e for e in result.trace if e["name"] == "bm25"][0]
    assert bm25["out"] == 0 and "bm25 file vanished" in bm25["error"]
    assert result.hits and all(h.source == "vector" for h in result.hits)


def test_every_retriever_failing_raises(counting, monkeypatch):
    pipeline = make(embeddings={"provider": "counting-test"}, retrieval={"pattern": "hybrid"})
    pipeline.ingest_sync(CORPUS)

    def boom(text):
        raise ConnectionError("embedding server down")

    def broken_bm25(query, k, filters=None):
        raise OSError("bm25 broken")

    pipeline.embedder.embed_query = boom
    monkeypatch.setattr(pipeline.index, "bm25_search", broken_bm25)
    with pytest.raises(StageError) as info:
        pipeline.query_sync("coolant")
    assert info.value.stage == "retrieve" and info.value.name == "vector+bm25"


# ---------------------------------------------- persistence: the index's cache
def test_bm25_path_is_a_json_file_of_the_bm25_index(tmp_path):
    path = tmp_path / "idx.bm25.json"
    spec = dict(retrieval={"pattern": "hybrid", "bm25_path": str(path)})
    first = make(**spec)
    first.ingest_sync(CORPUS[:2])
    first.ingest_sync(CORPUS[2:])
    assert path.is_file() and not (tmp_path / "idx.bm25.index").exists()
    first.close()

    restarted = make(**spec)  # a new process, same file: BM25 answers without re-ingesting
    result = restarted.query_sync("radiator cap")
    bm25 = [e for e in result.trace if e["name"] == "bm25"][0]
    assert bm25["out"] >= 1 and result.hits[0].chunk.id == "coolant#0"
    assert restarted.ingest_sync(CORPUS) == 4


def test_build_cache_dir_keeps_the_index_across_restarts(tmp_path, counting):
    spec = dict(retrieval={"pattern": "hybrid"}, embeddings={"provider": "counting-test"})
    first = build(load_spec(body(**spec)), cache_dir=tmp_path / "cache")
    first.ingest_sync(CORPUS)
    embedded = counting.calls
    first.close()
    again = build(load_spec(body(**spec)), cache_dir=tmp_path / "cache")
    assert again.ingest_sync(CORPUS) == 4
    assert counting.calls == embedded  # a restart embeds nothing
    assert again.query_sync("radiator cap", k=1).hits[0].chunk.id == "coolant#0"


def test_bm25_path_that_is_not_a_path_fails_at_build():
    with pytest.raises(Exception, match="bm25_path"):
        make(retrieval={"pattern": "hybrid", "bm25_path": 7})


def test_reingest_replaces_bm25_entries_too():
    pipeline = make(retrieval={"pattern": "hybrid"})
    pipeline.ingest_sync([{"id": "x", "text": "zebra giraffe"}])
    pipeline.ingest_sync([{"id": "x", "text": "penguin walrus"}])
    result = pipeline.query_sync("zebra")
    assert [e["out"] for e in result.trace if e["name"] == "bm25"] == [0]
    assert pipeline.query_sync("walrus", k=1).hits[0].source == "bm25+vector"


def test_a_failed_ingest_keeps_the_previous_state_and_the_retry_ingests(counting):
    pipeline = make(retrieval={"pattern": "hybrid"}, embeddings={"provider": "counting-test"})
    pipeline.ingest_sync(CORPUS[:2])
    real = counting.embed_documents

    def down(texts):
        raise ConnectionError("embedding server down")

    counting.embed_documents = down
    with pytest.raises(StageError) as info:
        pipeline.ingest_sync(CORPUS[2:])
    assert info.value.stage == "index" and isinstance(info.value.cause, ConnectionError)
    assert {h.chunk.doc_id for h in pipeline.query_sync("coolant tyre warranty filter", k=10).hits} == {
        "filters", "warranty"}
    counting.embed_documents = real
    assert pipeline.ingest_sync(CORPUS[2:]) == 2  # the retry really ingests
    assert pipeline.query_sync("radiator cap", k=1).hits[0].chunk.id == "coolant#0"


# ---------------------------------------------------------------- filters
def test_query_filters_apply_to_both_retrievers():
    pipeline = make(retrieval={"pattern": "hybrid"})
    pipeline.ingest_sync(CORPUS)
    hits = pipeline.query_sync("warranty defects", k=4, filters={"topic": "maintenance"}).hits
    assert hits and all(h.chunk.metadata["topic"] == "maintenance" for h in hits)
    assert [h.chunk.id for h in pipeline.query_sync("anything", filters={"doc_id": "tyres"}).hits] == ["tyres#0"]


def test_delete_and_sync_twins_inside_a_running_loop():
    pipeline = make(retrieval={"pattern": "hybrid"})

    async def inside():
        # the sync twins work even where an event loop is already running (notebooks)
        assert pipeline.ingest_sync(CORPUS) == 4
        assert pipeline.delete_sync(["coolant"]) == 1
        return pipeline.query_sync("coolant radiator", k=4)

    result = asyncio.run(inside())
    assert "coolant#0" not in [h.chunk.id for h in result.hits]
    assert pipeline.search("warranty", k=1)[0].chunk.id == "warranty#0"
    pipeline.close()


def test_weighted_fusion_all_equal_list_normalises_to_one():
    pipeline = make(retrieval={"pattern": "hybrid", "fusion": "weighted", "hybrid": {"weights": [0.25, 0.75]}})
    pipeline.ingest_sync(CORPUS)
    result = pipeline.query_sync("radiator", k=4)  # BM25 matches one chunk only: an all-equal list
    assert [e["out"] for e in result.trace if e["name"] == "bm25"] == [1]
    coolant = [h for h in result.hits if h.chunk.id == "coolant#0"][0]
    vector_scores = [h.details["vector"] for h in result.hits if "vector" in h.details]
    lo, hi = min(vector_scores), max(vector_scores)
    vector_share = 0.25 * (coolant.details["vector"] - lo) / (hi - lo)
    assert coolant.details["fused"] == pytest.approx(0.75 * 1.0 + vector_share)


def test_ingest_accepts_a_single_document_and_concurrent_reingests_leave_one_version():
    pipeline = make(retrieval={"pattern": "hybrid"}, chunking={"strategy": "fixed", "chunk_size": 20, "overlap": 0})
    assert pipeline.ingest_sync("just one string of text") == 2

    async def race():
        versions = [{"id": "doc", "text": f"version {i} " + "word " * (i + 3)} for i in range(5)]
        await asyncio.gather(*(pipeline.ingest([v]) for v in versions))
        return pipeline.store.count(), len(pipeline.index)

    count, indexed = asyncio.run(race())
    hits = pipeline.query_sync("version", k=50, filters={"doc_id": "doc"}).hits
    texts = {h.chunk.text.split()[1] for h in hits if h.chunk.metadata["chunk_index"] == 0}
    assert len(texts) == 1  # exactly one version of the document survives
    assert count == indexed == 2 + len(hits)


def test_a_restart_over_a_persistent_store_keeps_earlier_documents(tmp_path):
    pytest.importorskip("chromadb")
    store = {"backend": "chroma", "collection": "restart", "persist_directory": str(tmp_path / "chroma")}
    first = make(retrieval={"pattern": "hybrid"}, vector_store=store)
    first.ingest_sync(CORPUS[:2])
    first.close()
    again = make(retrieval={"pattern": "hybrid"}, vector_store=store)  # a new process: memory cache, same store
    assert {h.chunk.doc_id for h in again.query_sync("air filter warranty", k=4).hits} == {"filters", "warranty"}
    assert again.embedder.calls == 0
    again.ingest_sync(CORPUS[2:])
    ids = {h.chunk.doc_id for h in again.query_sync("air filter warranty coolant tyre", k=10).hits}
    assert ids == {"filters", "warranty", "coolant", "tyres"}
