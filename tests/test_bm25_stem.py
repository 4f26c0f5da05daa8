"""The light English stemmer BM25 can use (akasha.retrieval.stem)."""

from __future__ import annotations

import pytest

from akasha.retrieval.stem import stem_english


@pytest.mark.parametrize("words", [
    ("module", "modules"), ("install", "installing", "installed", "installs"), ("class", "classes"),
    ("process", "processes"), ("library", "libraries"), ("run", "running", "runs"), ("box", "boxes"),
    ("match", "matches"), ("quick", "quickly"), ("configure", "configured", "configuring"),
])
def test_inflections_share_a_stem(words):
    assert len({stem_english(w) for w in words}) == 1


@pytest.mark.parametrize("word", ["is", "this", "status", "using", "string", "utf8", "python3", "北京", "café"])
def test_short_words_identifiers_and_non_ascii_are_left_alone(word):
    assert stem_english(word) == word


def test_different_words_stay_apart():
    assert stem_english("generic") != stem_english("generate")
    assert stem_english("strings") == stem_english("string") == "string"
