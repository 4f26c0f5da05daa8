"""Traditional Chinese with jieba's words (rjieba): exact substrings stay matchable (jieba's dictionary is
simplified)."""

from __future__ import annotations

import pytest

from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.tokenize import resolve_tokenizer, tokenize

pytest.importorskip("rjieba")


def test_traditional_phrase_tokens_include_character_pairs():
    tokens = tokenize("每五百小時潤滑軸承", use_jieba=True)
    assert "潤滑" in tokens and "軸承" in tokens


@pytest.mark.parametrize("query", ["潤滑軸承", "軸承", "潤滑"])
def test_traditional_query_finds_its_passage(query):
    index = BM25Index(tokenizer="jieba")
    index.add(
        ["grease", "noise", "filter"],
        ["每五百小時潤滑軸承一次，驅動端加十二克。", "噪音超過八十五分貝必須佩戴耳塞。", "空氣濾網每十二個月更換。"],
    )
    assert index.search(query, 3)[0][0] == "grease"


def test_tokenizer_id_records_the_rules_version():
    name, _ = resolve_tokenizer("jieba")
    assert name == "words-v3+jieba"
