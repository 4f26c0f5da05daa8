"""Offline token counting: bpe-openai encodings picked by model name, truncation, fallback estimate."""

from __future__ import annotations

import bpe_openai
import pytest

from akasha import tokens
from akasha.tokens import TokenCounter, count_tokens, encoding_name_for, estimate_tokens


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("openai:gpt-3.5-turbo", "cl100k_base"),
        ("openai:gpt-4", "cl100k_base"),
        ("openai:gpt-4o-mini", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("openai:o3-mini", "o200k_base"),
        ("gemini:gemini-2.5-flash", "cl100k_base"),
        ("extractive", "cl100k_base"),
        (None, "cl100k_base"),
        (len, "cl100k_base"),
    ],
)
def test_encoding_is_chosen_by_model_name(model, encoding):
    assert encoding_name_for(model) == encoding


def test_counts_match_the_packaged_bpe():
    text = "Retrieval-augmented generation packs documents into a prompt. 检索增强生成"
    for name in ("cl100k_base", "o200k_base"):
        expected = len(bpe_openai.get_encoding(name).encode(text))
        assert TokenCounter(name).count(text) == expected
    assert count_tokens(text, "openai:gpt-4o") == len(bpe_openai.get_encoding("o200k_base").encode(text))
    assert TokenCounter().exact


def test_special_token_lookalikes_are_plain_text():
    assert TokenCounter().count("<|endoftext|> hello") > 2


def test_empty_text_has_no_tokens():
    assert TokenCounter().count("") == 0
    assert estimate_tokens("") == 0


def test_truncate_returns_a_prefix_within_the_limit():
    counter = TokenCounter()
    text = "The air filter should be replaced every twelve months. " * 20
    cut = counter.truncate(text, 17)
    assert text.startswith(cut)
    assert 0 < counter.count(cut) <= 17
    assert counter.truncate(text, 10_000) == text
    assert counter.truncate(text, 0) == ""


def test_truncate_never_splits_a_multibyte_character():
    counter = TokenCounter()
    text = "維護風險" * 50
    for limit in range(1, 12):
        cut = counter.truncate(text, limit)
        assert "\ufffd" not in cut
        assert counter.count(cut) <= limit


def test_fallback_estimate_when_bpe_openai_is_missing(monkeypatch):
    monkeypatch.setattr(tokens, "_encoding", lambda name: None)
    counter = TokenCounter()
    assert not counter.exact
    assert counter.count("abcd" * 10) == 10  # four characters per token
    assert counter.count("a b c d e") == 5  # never fewer tokens than words
    cut = counter.truncate("word " * 100, 10)
    assert counter.count(cut) <= 10
