"""BM25Index: exact Okapi scores, incremental updates, CJK matching, serialisation."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from akasha.errors import IndexMismatchError
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.tokenize import jieba_available, resolve_tokenizer


def naive_bm25(docs: dict[str, str], query: str, k: int, k1: float = 1.5, b: float = 0.75) -> list[tuple[str, float]]:
    toks = {i: t.split() for i, t in docs.items()}
    n = len(toks)
    avgdl = sum(map(len, toks.values())) / n
    df = Counter(w for t in toks.values() for w in set(t))
    out = {}
    for i, t in toks.items():
        counts = Counter(t)
        score = 0.0
        for w in query.split():
            if w in counts:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                tf = counts[w]
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(t) / avgdl))
        if score > 0:
            out[i] = score
    return sorted(out.items(), key=lambda x: (-x[1], int(x[0][1:])))[:k]


@pytest.fixture
def corpus() -> dict[str, str]:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(150)]
    return {f"d{i}": " ".join(rng.choices(words, k=rng.randint(3, 30))) for i in range(1500)}


def assert_same(got, want):
    assert [i for i, _ in got] == [i for i, _ in want]
    np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-4)


def test_scores_match_okapi_formula_after_adds_and_removes(corpus):
    index = BM25Index(tokenizer="bigram")
    ids = list(corpus)
    index.add(ids[:1000], [corpus[i] for i in ids[:1000]])
    index.add(ids[1000:], [corpus[i] for i in ids[1000:]])
    removed = set(ids[100:300])
    index.remove(removed)
    live = {i: t for i, t in corpus.items() if i not in removed}
    assert len(index) == len(live)
    for query in ["w1 w5", "w7 w7 w100", "nothing w3", "w149"]:
        assert_same(index.search(query, 10), naive_bm25(live, query, 10))


def test_replacing_an_id_replaces_its_text():
    index = BM25Index(tokenizer="bigram")
    index.add(["a", "b"], ["apple pie", "banana bread"])
    index.add(["a"], ["cherry tart"])
    assert len(index) == 2
    assert index.search("apple", 5) == []
    assert [i for i, _ in index.search("cherry", 5)] == ["a"]


def test_delta_merges_and_compaction_keep_results_exact(corpus, monkeypatch):
    index = BM25Index(tokenizer="bigram")
    ids = list(corpus)
    for start in range(0, len(ids), 100):  # many small adds -> several merges
        index.add(ids[start : start + 100], [corpus[i] for i in ids[start : start + 100]])
        index._merge()
    index.remove(ids[:1200])  # more dead than live -> compaction
    live = {i: corpus[i] for i in ids[1200:]}
    assert len(index._ids) < len(corpus)  # dead slots were dropped
    assert_same(index.search("w3 w9", 5), naive_bm25(live, "w3 w9", 5))
    index.add(["new"], ["w3 w3 w3"])
    assert index.search("w3", 1)[0][0] == "new"


def test_accents_and_case_are_folded():
    index = BM25Index(tokenizer="bigram")
    index.add(["fr", "en"], ["Le Café de la Résumé", "plain english text"])
    assert index.search("cafe resume", 1)[0][0] == "fr"
    assert index.search("CAFÉ", 1)[0][0] == "fr"


@pytest.mark.parametrize("tokenizer", ["bigram", pytest.param("jieba", marks=pytest.mark.skipif(
    not jieba_available(), reason="jieba not installed"))])
def test_chinese_query_matches_chinese_text(tokenizer):
    index = BM25Index(tokenizer=tokenizer)
    index.add(
        ["zh1", "zh2", "en"],
        ["我们在北京大学学习自然语言处理。", "上海的天气今天很好，适合散步。", "Natural language processing in Beijing"],
    )
    assert index.search("北京", 1)[0][0] == "zh1"
    assert index.search("天气怎么样", 1)[0][0] == "zh2"
    assert index.tokenizer_id.endswith(tokenizer)


def test_parts_roundtrip_keeps_settings_and_results(corpus):
    index = BM25Index(tokenizer="bigram", k1=1.2, b=0.6)
    index.add(list(corpus), list(corpus.values()))
    index.remove(["d1", "d2"])
    again = BM25Index.from_parts(index.to_parts())
    assert (again.k1, again.b, len(again)) == (1.2, 0.6, len(index))
    for query in ["w1 w2", "w42"]:
        assert_same(again.search(query, 8), index.search(query, 8))
    again.remove(["d3"])  # a loaded index stays updatable
    assert "d3" not in again and len(again) == len(index) - 1


def test_parts_roundtrip_and_removal_after_load(corpus):
    index = BM25Index(tokenizer="bigram")
    index.add(list(corpus), list(corpus.values()))
    again = BM25Index.from_parts(index.to_parts())
    assert_same(again.search("w5 w6", 10), index.search("w5 w6", 10))
    gone = [i for i, _ in index.search("w5", 3)]
    again.remove(gone)
    index.remove(gone)
    assert_same(again.search("w5", 10), index.search("w5", 10))


def test_unknown_tokenizer_in_saved_state_is_refused():
    index = BM25Index(tokenizer="bigram")
    index.add(["a"], ["text"])
    parts = index.to_parts()
    parts["bm25_meta"][2] = "words-v0+mystery"
    with pytest.raises(IndexMismatchError, match="mystery"):
        BM25Index.from_parts(parts)


def test_auto_tokenizer_records_its_choice():
    tid, _ = resolve_tokenizer("auto")
    assert tid == BM25Index().tokenizer_id
    assert tid.endswith("jieba" if jieba_available() else "bigram")


def test_search_edge_cases():
    index = BM25Index(tokenizer="bigram")
    assert index.search("anything", 5) == []
    index.add(["a"], ["hello world"])
    assert index.search("", 5) == []
    assert index.search("hello", 0) == []
    with pytest.raises(ValueError):
        index.add(["x", "y"], ["one"])


def test_parts_keep_an_unmerged_delta_and_deletions(corpus):
    """Snapshots save the delta segment and the deletion mask as they are; reloading changes no score."""
    index = BM25Index(tokenizer="bigram")
    ids = list(corpus)
    index.add(ids[: len(ids) // 2], [corpus[i] for i in ids[: len(ids) // 2]])
    index._merge()
    index.add(ids[len(ids) // 2 :], [corpus[i] for i in ids[len(ids) // 2 :]])  # stays in the delta
    index.remove(ids[:2] + ids[-1:])
    assert index._delta_size and not index._alive.all()
    again = BM25Index.from_parts(index.to_parts())
    assert again._delta_size == index._delta_size and len(again) == len(index)
    for query in ("w5 w6", "w1", "w9 w2 w3"):
        assert_same(again.search(query, 10), index.search(query, 10))
    for target in (index, again):
        target.remove(ids[3:5])
        target.add(["new"], ["w5 w5 w7 fresh words"])
        target._merge()
    assert_same(again.search("w5 w7", 10), index.search("w5 w7", 10))


def test_stemming_matches_inflections_and_is_recorded_in_the_tokenizer_id():
    texts = {"mod": "Installing modules on Windows", "cat": "The cat sat on the mat"}
    plain, stemmed = BM25Index(tokenizer="bigram"), BM25Index(tokenizer="bigram", stem=True)
    for index in (plain, stemmed):
        index.add(list(texts), list(texts.values()))
    assert plain.search("install module", 2) == []  # no token in common without stemming
    assert stemmed.search("install module", 2)[0][0] == "mod"
    assert stemmed.tokenizer_id == plain.tokenizer_id.replace("+", "+en-stem1+", 1)
    assert stemmed.tokenizer_id.endswith("bigram")
    again = BM25Index.from_parts(stemmed.to_parts())  # a saved stemmed index stems its queries too
    assert again.tokenizer_id == stemmed.tokenizer_id and again.search("installed modules", 1)[0][0] == "mod"


def test_score_tokens_scores_pretokenised_queries_like_score_slots():
    """The extractive answerer's path: its own (stemmed) tokens in, the same BM25 as a text query."""
    index = BM25Index(k1=1.2)
    index.add_tokens(["a", "b", "c"], [["seal", "failure", "pump"], ["pump", "pump", "valve"], ["report"]])
    slots, scores = index.score_slots("pump valve")
    assert index.score_tokens(["pump", "valve"]) == pytest.approx(dict(zip(index.slot_ids(slots), scores.tolist())))
    assert set(index.score_tokens(["seal", "unknown"])) == {"a"}
    assert index.score_tokens(["unknown"]) == {}
