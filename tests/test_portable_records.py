"""Portable records and the one fusion of the stores (issue 31), without a server.

Document keys are relative to the data_source folder (two checkouts write the same keys);
the fusion of a store's two candidate lists never lets a chunk that alone holds a rare query
term lose to chunks only the dense side found.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import akasha
from akasha.embeddings.hash import HashEmbedder
from akasha.errors import ConfigError
from akasha.index.portable import document_key, portable_keys, source_root
from akasha.retrieval.fusion import exact_terms
from akasha.stores.query import SearchRequest, fuse_sides
from akasha.types import Chunk


def test_keys_are_relative_to_the_folder_given(tmp_path):
    docs = tmp_path / "checkout" / "docs"
    (docs / "guide").mkdir(parents=True)
    for name in ("a.md", "guide/b.md"):
        (docs / name).write_text("x")
    assert source_root(docs) == docs
    assert source_root(docs / "a.md") == docs
    assert source_root([docs / "a.md", docs / "guide"]) == docs
    keys = portable_keys([str(docs / "a.md"), str(docs / "guide" / "b.md")], docs)
    assert keys == {str(docs / "a.md"): "a.md", str(docs / "guide" / "b.md"): "guide/b.md"}
    assert document_key(docs / "guide" / "b.md", docs, "handbook") == "handbook/guide/b.md"
    outside = document_key(tmp_path / "elsewhere" / "c.md", docs)
    assert outside.startswith("_outside/") and outside.endswith("/c.md") and str(tmp_path) not in outside


def test_a_file_name_that_is_not_utf8_gets_a_key_any_store_can_hold(tmp_path):
    name = os.fsdecode(b"caf\xe9.txt")  # Latin-1 bytes: a surrogate escape in Python
    key = document_key(tmp_path / name, tmp_path)
    assert key == "caf\\xe9.txt" and key.encode("utf-8")


def test_two_checkouts_give_the_same_ids_and_sources(tmp_path):
    ids = []
    for checkout in ("one", "two"):
        docs = tmp_path / checkout / "docs"
        docs.mkdir(parents=True)
        (docs / "pump.md").write_text("The pump P-102 seal failed after dry running.\n\nRefill before restart.")
        rag = akasha.RAG(embeddings="hash", model="extractive", cache_dir=":memory:")
        hits = rag.search(str(docs), "seal failed", k=2, search_type="bm25")
        ids.append([(h.id, h.chunk.metadata["source"]) for h in hits])
        assert all(str(tmp_path) not in str(h.chunk.metadata) for h in hits)
    assert ids[0] == ids[1] and ids[0][0] == ("pump.md#0", "pump.md")


def test_a_bad_corpus_name_or_store_option_is_refused_by_name():
    with pytest.raises(ConfigError, match="corpus"):
        akasha.RAG(vector_store="postgresql://u@h/db?table=t", vector_store_options={"corpus": "a b"})
    with pytest.raises(ConfigError, match="'colour'"):
        akasha.RAG(vector_store="qdrant://localhost:6333/docs", vector_store_options={"colour": 1})
    with pytest.raises(ConfigError, match="needs a vector_store"):
        akasha.RAG(vector_store_options={"corpus": "handbook"})


def chunks(n: int) -> list[Chunk]:
    return [Chunk(f"d{i}#0", f"text {i}", {}) for i in range(n)]


def test_a_chunk_alone_holding_a_rare_term_beats_what_only_the_dense_side_found():
    pool = chunks(60)
    rng = np.random.default_rng(0)
    dense = [(c, float(s)) for c, s in zip(pool[:50], np.sort(rng.uniform(0.3, 0.5, 50))[::-1], strict=True)]
    needle = pool[55]
    for weights, rrf_k in (((0.6, 0.4), 10), ((0.5, 0.5), 60)):  # auto's and hybrid's settings
        request = SearchRequest(vector=np.ones(4), tokens=("e4711",), k=5, pool=50, rrf_k=rrf_k, weights=weights,
                                text="E4711")
        hits = fuse_sides(dense, [(needle, 11.2)], request, exact=needle.id)
        assert hits[0].chunk is needle and hits[0].source == "bm25", weights
        assert fuse_sides(dense, [(needle, 11.2)], request)[0].chunk is not needle  # rank fusion alone loses it


def test_the_exact_match_rule_leaves_sentences_to_the_fusion():
    """A plain word of a sentence that one chunk happens to hold ("solve", "Mint") does not put that chunk first.

    The store computes ``exact`` from the question's exact terms (akasha.retrieval.fusion.exact_terms):
    every term of a short question, the identifier-shaped ones of a sentence; ``fuse_sides`` puts it first.
    """
    pool = chunks(60)
    dense = [(c, 0.9 - i * 0.01) for i, c in enumerate(pool[:50])]
    needle = pool[55]
    request = SearchRequest(vector=np.ones(4), tokens=("e4711",), k=5, pool=50, rrf_k=10, weights=(0.6, 0.4))
    assert fuse_sides(dense, [(needle, 11.2)], request, exact=needle.id)[0].chunk is needle
    assert fuse_sides(dense, [(needle, 11.2)], request, exact=None)[0].chunk is not needle
    assert exact_terms("how do I solve the pump problem", ["how", "solve", "pump", "problem"]) == []
    assert exact_terms("what does E4711 mean", ["what", "does", "e4711", "mean"]) == ["e4711"]
    assert exact_terms("E4711", ["e4711"]) == exact_terms("", ["e4711"]) == ["e4711"]  # short, or no text: every term


def test_an_identifier_lookup_finds_its_chunk_through_the_facade(tmp_path):
    """Over the hash embedder (a noisy dense side), auto puts the one chunk holding the identifier first."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(40):
        (docs / f"note{i}.md").write_text(f"Maintenance note {i}: check the pump, the seal and the valve weekly.")
    (docs / "codes.md").write_text("Fault E4711 means the pump ran dry.")
    rag = akasha.RAG(embeddings=HashEmbedder(), model="extractive", cache_dir=":memory:")
    from akasha.stores.memory import MemoryStore

    store_rag = akasha.RAG(embeddings=HashEmbedder(), model="extractive", cache_dir=":memory:",
                           vector_store=MemoryStore())
    for r in (rag, store_rag):
        assert r.search(str(docs), "E4711", k=3)[0].chunk.metadata["source"] == "codes.md"
        hits = r.search(str(docs), "what does the fault E4711 mean for the pump?", k=3)
        assert hits[0].chunk.metadata["source"] == "codes.md"
    assert Path(docs / "codes.md").exists()
