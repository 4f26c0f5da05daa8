"""RAGPipeline 'reranking' table: cross_encoder (tiny local model), cohere (loopback v2 API), top_k rules."""

from __future__ import annotations

import pytest

import akasha.registry as registry
from akasha.errors import MissingAPIKeyError
from akasha.spec import build, load_spec
from tests.spec_fixtures import CORPUS, body, json_server

MANY = [{"id": f"d{i:02d}", "text": f"common words document number {i}"} for i in range(30)]


class ReverseReranker:
    """Scores candidates by reversed position so the effect of reranking is visible; records calls."""

    name = "reverse"

    def __init__(self, score: float = 0.0):
        self.seen: list[int] = []
        self.base = score

    def rerank(self, query, hits, top_k):
        from akasha.rerank.cross_encoder import rescore

        self.seen.append(len(hits))
        return rescore(hits, [self.base + i for i in range(len(hits))], top_k)


@pytest.fixture
def reverse():
    reranker = ReverseReranker(score=-100.0)
    registry.register("reranker", "reverse-test", lambda c, ctx: reranker, replace=True)
    yield reranker
    registry.unregister("reranker", "reverse-test")


def make(**sections):
    return build(load_spec(body(**sections)))


# ----------------------------------------------------------------- top_k rules
def test_reranking_is_off_by_default():
    assert make().reranker is None
    assert make(reranking={"provider": "reverse-test"}).reranker is None


def test_reranker_sees_every_candidate_and_top_k_caps_it(reverse):
    pipeline = make(reranking={"enabled": True, "provider": "reverse-test", "top_k": 3}, retrieval={"top_k": 5})
    pipeline.ingest_sync(MANY)
    result = pipeline.query_sync("common words document", k=5)
    assert reverse.seen == [10]  # candidates = top_k * 2, all given to the reranker
    assert len(result.hits) == 3  # reranking.top_k: 3 and k=5 -> 3 hits
    assert result.trace[-2] == {**result.trace[-2], "stage": "rerank", "in": 10, "out": 3}
    assert len(pipeline.query_sync("common words document", k=2).hits) == 2  # then the first k of those


def test_reranking_top_k_defaults_to_retrieval_top_k(reverse):
    """Issue 32: reranking.top_k unset means retrieval.top_k, and a larger query k does not grow it."""
    pipeline = make(reranking={"enabled": True, "provider": "reverse-test"}, retrieval={"top_k": 3})
    pipeline.ingest_sync(MANY)
    assert len(pipeline.query_sync("common words").hits) == 3
    assert len(pipeline.query_sync("common words", k=6).hits) == 3
    assert len(pipeline.query_sync("common words", k=2).hits) == 2


def test_the_reranker_pool_is_retrieval_candidates_whatever_k(reverse):
    """Issue 32: the pool is retrieval.candidates (default top_k * 2), not grown by the query's k."""
    pipeline = make(reranking={"enabled": True, "provider": "reverse-test"}, retrieval={"top_k": 3})
    pipeline.ingest_sync(MANY)
    pipeline.query_sync("common words document", k=5)
    assert reverse.seen == [6]
    explicit = make(reranking={"enabled": True, "provider": "reverse-test"}, retrieval={"top_k": 3, "candidates": 4})
    explicit.ingest_sync(MANY)
    reverse.seen.clear()
    result = explicit.query_sync("common words document", k=8)
    assert reverse.seen == [4] and len(result.hits) == 3


def test_rerank_score_replaces_score_and_retrieval_score_stays(reverse):
    pipeline = make(reranking={"enabled": True, "provider": "reverse-test"}, retrieval={"pattern": "hybrid"})
    pipeline.ingest_sync(CORPUS)
    plain = make(retrieval={"pattern": "hybrid"})
    plain.ingest_sync(CORPUS)
    before = {h.chunk.id: h for h in plain.query_sync("coolant radiator", k=4).hits}
    hits = pipeline.query_sync("coolant radiator", k=4).hits
    for hit in hits:
        assert hit.score == hit.details["rerank"]
        assert hit.details["retrieval"] == pytest.approx(before[hit.chunk.id].score)
        assert hit.details["rrf"] == pytest.approx(before[hit.chunk.id].details["rrf"])
    assert [h.chunk.id for h in hits] == list(reversed(list(before)))


def test_similarity_threshold_never_touches_rerank_scores(reverse):
    pipeline = make(reranking={"enabled": True, "provider": "reverse-test"},
                    retrieval={"similarity_threshold": 0.1})
    pipeline.ingest_sync(CORPUS)
    hits = pipeline.query_sync("coolant radiator cap").hits
    assert hits and all(h.score < -90 for h in hits)  # logit-like scores far below the threshold survive


# --------------------------------------------------------------------- cohere
def cohere_handler(path, payload, headers):
    if path != "/v2/rerank":
        return 404, {"message": "not found"}
    # scores: longer documents rank higher, deterministic
    order = sorted(range(len(payload["documents"])), key=lambda i: -len(payload["documents"][i]))
    results = [{"index": i, "relevance_score": round(1.0 - rank * 0.1, 3)} for rank, i in enumerate(order)]
    return 200, {"id": "x", "results": results[: payload.get("top_n") or len(results)], "meta": {}}


def test_cohere_v2_rerank_over_http():
    with json_server(cohere_handler) as (url, requests):
        pipeline = make(reranking={"enabled": True, "provider": "cohere", "api_key": "co-secret",
                                   "endpoint": url, "top_k": 2})
        pipeline.ingest_sync(CORPUS)
        result = pipeline.query_sync("maintenance", k=5)
    path, payload, headers = requests[0]
    assert path == "/v2/rerank" and headers["authorization"] == "Bearer co-secret"
    # every candidate is sent and ranked (a complete ordering, validated), then reranking.top_k keeps 2
    assert payload["model"] == "rerank-english-v3.0" and payload["top_n"] == 4
    assert payload["query"] == "maintenance" and len(payload["documents"]) == 4
    longest = sorted(CORPUS, key=lambda d: -len(d["text"]))[:2]
    assert [h.chunk.id for h in result.hits] == [f"{d['id']}#0" for d in longest]
    assert [h.score for h in result.hits] == [1.0, 0.9]
    assert "co-secret" not in repr(pipeline.reranker.__dict__.get("name"))


def test_cohere_needs_a_key_at_build(monkeypatch):
    for var in ("CO_API_KEY", "COHERE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(MissingAPIKeyError, match="CO_API_KEY"):
        make(reranking={"enabled": True, "provider": "cohere"})
    monkeypatch.setenv("CO_API_KEY", "from-env")
    assert make(reranking={"enabled": True, "provider": "cohere"}).reranker.model == "rerank-english-v3.0"


def test_cohere_answer_missing_a_candidate_is_an_ordering_error():
    from akasha.errors import OrderingError, StageError

    def omits_one(path, payload, headers):
        return 200, {"results": [{"index": i, "relevance_score": 1.0 - i / 10} for i in range(len(payload["documents"]) - 1)]}

    with json_server(omits_one) as (url, _):
        pipeline = make(reranking={"enabled": True, "provider": "cohere", "api_key": "k", "endpoint": url})
        pipeline.ingest_sync(CORPUS)
        with pytest.raises(StageError, match="omitted") as caught:  # ragpipeline-yaml.md: StageError(stage, ...)
            pipeline.query_sync("maintenance")
        assert isinstance(caught.value.cause, OrderingError) and isinstance(caught.value, ValueError)


def test_legacy_reranker_dropping_candidates_fails_validation_before_trimming():
    class DropsOne:
        name = "drops-one"

        def rerank(self, query, hits, top_k):
            return list(hits)[1:]  # the older contract let a plugin drop candidates silently

    registry.register("reranker", "drops-test", lambda c, ctx: DropsOne(), replace=True)
    try:
        pipeline = make(reranking={"enabled": True, "provider": "drops-test", "top_k": 1})
        pipeline.ingest_sync(CORPUS)
        with pytest.raises(ValueError, match="omitted"):
            pipeline.query_sync("maintenance")
    finally:
        registry.unregister("reranker", "drops-test")


def test_cohere_http_error_is_a_stage_error():
    from akasha.errors import ProviderError, StageError

    with json_server(lambda p, b, h: (429, {"message": "rate limited"})) as (url, _):
        pipeline = make(reranking={"enabled": True, "provider": "cohere", "api_key": "k", "endpoint": url})
        pipeline.ingest_sync(CORPUS)
        with pytest.raises(StageError) as info:
            pipeline.query_sync("maintenance")
    assert info.value.stage == "rerank" and isinstance(info.value.cause, ProviderError)
    assert info.value.cause.status == 429
