"""The semantic chunker's sentence vectors are the index's vectors too: no text is embedded twice."""

from __future__ import annotations

import collections

import pytest

from akasha.spec import build, load_spec
from akasha.testing import HashEmbedder
from tests.spec_fixtures import CORPUS, body


class RecordingEmbedder(HashEmbedder):
    """HashEmbedder that records every text it is asked to embed."""

    def __init__(self) -> None:
        super().__init__(64)
        self.texts: list[str] = []

    def embed_documents(self, texts):
        self.texts.extend(texts)
        return super().embed_documents(texts)


@pytest.fixture
def recording(register_embedder):
    return register_embedder("recording-test", RecordingEmbedder())


def semantic(threshold):
    return build(load_spec(body(embeddings={"provider": "recording-test"},
                                chunking={"strategy": "semantic", "similarity_threshold": threshold})))


def test_one_sentence_chunks_are_embedded_once(recording):
    pipeline = semantic(0.99)  # hash vectors of different sentences are far apart: one sentence per chunk
    pipeline.ingest_sync(CORPUS)
    repeated = [text for text, n in collections.Counter(recording.texts).items() if n > 1]
    assert repeated == []
    chunks = pipeline.index.chunks
    assert len(chunks) == 7 and {c.text for c in chunks} <= set(recording.texts)
    hit = pipeline.query_sync("radiator cap", k=1).hits[0]
    assert hit.chunk.text == "Never open the radiator cap while hot."


def test_joined_sentences_are_embedded_as_chunks_once_and_sentences_once(recording):
    pipeline = semantic(-1.0)  # every sentence joins its neighbour: two-sentence chunks
    pipeline.ingest_sync(CORPUS)
    counts = collections.Counter(recording.texts)
    assert max(counts.values()) == 1
    chunk_texts = {c.text for c in pipeline.index.chunks}
    assert chunk_texts <= set(counts)
    before = len(recording.texts)
    pipeline.ingest_sync(CORPUS)  # unchanged documents: nothing is chunked or embedded again
    assert len(recording.texts) == before


class PassageEmbedder(RecordingEmbedder):
    """An embedder that also gives passage vectors (as the local models do): the index asks for them."""

    def embed_documents_with_passages(self, texts):
        return self.embed_documents(texts), [None] * len(texts)


def test_an_embedder_with_passages_embeds_each_text_once_too(register_embedder):
    embedder = register_embedder("passages-test", PassageEmbedder())
    pipeline = build(load_spec(body(embeddings={"provider": "passages-test"},
                                    chunking={"strategy": "semantic", "similarity_threshold": 0.99})))
    pipeline.ingest_sync(CORPUS)
    assert max(collections.Counter(embedder.texts).values()) == 1


def test_chunking_again_reuses_the_sentence_vectors(recording, tmp_path):
    first = build(load_spec(body(embeddings={"provider": "recording-test"},
                                 chunking={"strategy": "semantic", "similarity_threshold": 0.99})),
                  cache_dir=tmp_path / "cache")
    first.ingest_sync(CORPUS)
    first.close()
    sentences = set(recording.texts)
    recording.texts.clear()
    again = build(load_spec(body(embeddings={"provider": "recording-test"},  # other settings: chunked again
                                 chunking={"strategy": "semantic", "similarity_threshold": 0.99, "chunk_size": 400})),
                  cache_dir=tmp_path / "cache")
    again.ingest_sync(CORPUS)
    assert not sentences & set(recording.texts)  # no sentence embedded a second time
