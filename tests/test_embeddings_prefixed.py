"""Role prefixes (e5's "query: "/"passage: ", bge's query instruction) reach the model, and name the cache.

A model trained with prefixes must see the question with its query prefix and every chunk with
its passage prefix; vectors made with other prefixes (or none) must never come from the cache.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import akasha
from akasha.embeddings import resolve_embedder, validate_embeddings
from akasha.embeddings.prefixed import ROLE_PREFIXES, PrefixedEmbedder
from akasha.errors import ConfigError
from akasha.index import CorpusIndex


class Recorder:
    """An embeddings object that remembers the texts each role received."""

    model = "recorder"

    def __init__(self) -> None:
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed_documents(self, texts):
        self.documents.extend(texts)
        return [[1.0, float(len(t))] for t in texts]

    def embed_query(self, text):
        self.queries.append(text)
        return [1.0, float(len(text))]


@pytest.fixture
def docs(tmp_path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for topic in ("astronomy", "botany", "cooking"):
        (folder / f"{topic}.txt").write_text(f"Notes on {topic}. " * 20, encoding="utf-8")
    return folder


def test_each_role_gets_its_own_prefix():
    recorder = Recorder()
    embedder = PrefixedEmbedder(recorder, query_prefix="query: ", document_prefix="passage: ")
    embedder.embed_documents(["Pumps need oil.", "Valves leak."])
    embedder.embed_query("How often are pumps oiled?")
    assert recorder.documents == ["passage: Pumps need oil.", "passage: Valves leak."]
    assert recorder.queries == ["query: How often are pumps oiled?"]


def test_the_string_form_uses_the_family_prefixes_over_any_embeddings_string():
    embedder = resolve_embedder("prefixed:e5:hash:32")
    plain = resolve_embedder("hash:32")
    assert np.allclose(embedder.embed_query("where is the manual"), plain.embed_query("query: where is the manual"))
    assert np.allclose(embedder.embed_documents(["the manual"]), plain.embed_documents(["passage: the manual"]))
    assert not np.allclose(embedder.embed_query("where is the manual"), plain.embed_query("where is the manual"))
    bge = resolve_embedder("prefixed:BGE:hash:32")  # family names are not case-sensitive
    assert (bge.query_prefix, bge.document_prefix) == ROLE_PREFIXES["bge"]
    assert np.allclose(bge.embed_documents(["the manual"]), plain.embed_documents(["the manual"]))


def test_prefixes_are_part_of_the_name():
    plain = resolve_embedder("hash:32")
    e5 = resolve_embedder("prefixed:e5:hash:32")
    assert e5.name == 'hash:32;query_prefix="query: ";document_prefix="passage: "'
    assert e5.name != plain.name != resolve_embedder("prefixed:bge:hash:32").name
    # the same prefixes given by hand name the same vectors
    assert PrefixedEmbedder("hash:32", "query: ", "passage: ").name == e5.name
    assert PrefixedEmbedder("hash:32", "query: ", "").name != e5.name


def test_a_served_model_keeps_its_endpoint_in_the_name():
    embedder = resolve_embedder("prefixed:e5:openai:multilingual-e5-small@http://127.0.0.1:8002/v1")
    assert embedder.inner.name == "openai:multilingual-e5-small@http://127.0.0.1:8002/v1"
    assert embedder.name.startswith(embedder.inner.name + ";query_prefix=")
    validate_embeddings("prefixed:e5:openai:multilingual-e5-small@http://127.0.0.1:8002/v1")


@pytest.mark.parametrize("spec, words", [
    ("prefixed:nope:hash", ["bge", "e5", "PrefixedEmbedder"]),   # unknown family: the known ones are listed
    ("prefixed:e5", ["prefixed:<family>:<embeddings>"]),        # no inner embeddings
    ("prefixed:e5:bogus:model", ["unknown embeddings", "hash"]),  # the inner string is checked too
    ("prefixed:e5:hf:all-MiniLM-L6-v2@http://127.0.0.1:9/v1", ["only for models served over HTTP"]),
])
def test_bad_strings_are_refused_at_construction(spec, words):
    with pytest.raises(ConfigError) as caught:
        validate_embeddings(spec)
    assert all(word in str(caught.value) for word in words), caught.value
    with pytest.raises(ConfigError):
        akasha.RAG(embeddings=spec, model="extractive", cache_dir=":memory:")


def test_an_embedder_needs_a_prefix():
    with pytest.raises(ConfigError):
        PrefixedEmbedder("hash")


def test_vectors_with_and_without_prefixes_never_share_the_cache(docs, tmp_path):
    cache = tmp_path / "cache"

    def sync(spec):
        return CorpusIndex(resolve_embedder(spec), chunk_size=200, chunk_overlap=0, cache_dir=cache).sync(docs)

    first = sync("hash:32")
    assert first.embedded > 0
    assert sync("prefixed:e5:hash:32").embedded == first.embedded  # embedded again, with prefixes
    assert sync("prefixed:e5:hash:32").embedded == 0                # then reused
    assert sync("hash:32").embedded == 0                           # and the plain vectors are still there


def test_the_facade_answers_through_a_prefixed_embedder(docs):
    rag = akasha.RAG(embeddings="prefixed:e5:hash", model="extractive", cache_dir=":memory:")
    rag(str(docs), "Notes on botany?")
    assert rag.docs
