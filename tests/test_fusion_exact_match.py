"""Fusion must not lose exact matches (issue 34): a chunk that alone holds a rare query term.

Synthetic corpus whose dense side is noise (vectors from a hash of the text, unrelated to
meaning): every query is one token that occurs in exactly one chunk. BM25 puts that chunk
first every time; ``auto`` must too (its exact-match rule for short questions,
akasha.retrieval.fusion.exact_match_first: plain RRF found 3 of 20).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import akasha

WORDS = ["river", "stone", "garden", "window", "paper", "silver", "market", "candle", "forest", "engine"]


def noise_embedder(texts: list[str]) -> np.ndarray:
    """Unit vectors seeded by each text's hash: the dense side carries no meaning."""
    rows = []
    for text in texts:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(64)
        rows.append(v / np.linalg.norm(v))
    return np.asarray(rows, dtype=np.float32)


def _corpus(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    rng = np.random.default_rng(7)
    tokens = [f"zq{i:03d}x" for i in range(20)]
    for i in range(60):
        filler = " ".join(rng.choice(WORDS, size=40))
        extra = f" {tokens[i]}" if i < len(tokens) else ""
        (docs / f"note{i:02d}.txt").write_text(f"Note {i}. {filler}{extra}.\n", encoding="utf-8")
    return docs, tokens


def _firsts(tmp_path, search_type: str) -> int:
    docs, tokens = _corpus(tmp_path)
    rag = akasha.RAG(model="extractive", embeddings=noise_embedder, cache_dir=tmp_path / "cache")
    rag.index(docs)
    right = 0
    for token in tokens:
        hits = rag.search(docs, token, k=5, search_type=search_type)
        right += bool(hits) and token in hits[0].chunk.text
    return right


def test_bm25_finds_every_unique_token(tmp_path):
    assert _firsts(tmp_path, "bm25") == 20


def test_auto_finds_every_unique_token(tmp_path):
    assert _firsts(tmp_path, "auto") == 20


IDENTIFIERS = ["retry_max_delay", "rag.last_sync", "setup.md", "chunk_overlap_ratio"]


def _identifier_corpus(tmp_path):
    """Notes full of the identifiers' parts; each identifier whole in exactly one note."""
    docs = tmp_path / "ids"
    docs.mkdir()
    rng = np.random.default_rng(3)
    parts = [p for name in IDENTIFIERS for p in name.replace(".", "_").split("_")]
    for i in range(40):
        words = " ".join(rng.choice(parts + WORDS, size=60))
        extra = f" Set {IDENTIFIERS[i]} here." if i < len(IDENTIFIERS) else ""
        (docs / f"page{i:02d}.txt").write_text(f"Page {i}. {words}.{extra}\n", encoding="utf-8")
    return docs


@pytest.mark.parametrize("search_type", ["bm25", "auto"])
def test_an_identifier_question_finds_the_one_chunk_holding_it_whole(tmp_path, search_type):
    """Its parts are everywhere; the compound term and the exact-match rule find the one holder."""
    docs = _identifier_corpus(tmp_path)
    rag = akasha.RAG(model="extractive", embeddings=noise_embedder, cache_dir=tmp_path / "cache")
    for i, name in enumerate(IDENTIFIERS):
        hits = rag.search(docs, name, k=3, search_type=search_type)
        assert hits and hits[0].chunk.id.split("#")[0].endswith(f"page{i:02d}.txt"), (name, [h.chunk.id for h in hits])


def test_the_lexical_tokenizer_keeps_compound_words_and_reads_earlier_indexes():
    from akasha.retrieval.tokenize import resolve_tokenizer, tokenizer_from_id

    tokenizer_id, split = resolve_tokenizer("bigram")
    assert tokenizer_id == "words-v3+bigram"
    assert split("Set retry_max_delay in setup.md") == ["set", "retry", "max", "delay", "in", "setup", "md",
                                                      "retry_max_delay", "setup.md"]
    assert tokenizer_from_id("words-v2+bigram")("retry_max_delay") == ["retry", "max", "delay"]


def test_an_identifier_inside_a_sentence_still_finds_its_one_chunk(tmp_path):
    """A question of plain words around an identifier: the identifier names the chunk, whatever the dense side says.

    Without the identifier-shaped test (akasha.retrieval.fusion.identifier_shaped) the rule held for
    questions of at most three words only, and plain RRF over a noise dense side lost these.
    """
    docs = _identifier_corpus(tmp_path)
    rag = akasha.RAG(model="extractive", embeddings=noise_embedder, cache_dir=tmp_path / "cache")
    rag.index(docs)
    for name in IDENTIFIERS:
        hits = rag.search(docs, f"what does the {name} setting change for my notes?", k=5, search_type="auto")
        assert hits and name in hits[0].chunk.text, name
