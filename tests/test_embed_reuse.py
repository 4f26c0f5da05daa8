"""Embed only what is needed with the embedder the user configured: the extractive answerer reuses a
callable embedder instead of loading the packaged MiniLM beside it."""

from __future__ import annotations

import zlib

import numpy as np

import akasha
import akasha.embeddings as embeddings


class CountingCallable:
    """A user's embedding function: word-hash vectors, every text it was given recorded."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        rows = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in zip(rows, texts):
            for word in text.lower().split():
                row[zlib.crc32(word.strip(".,?").encode()) % 64] += 1.0
        return rows.tolist()


def test_the_extractive_answerer_reuses_a_callable_embedder_and_loads_no_minilm(tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pump.md").write_text("The seal failed on P-102 because the suction valve was closed. "
                                  "Bearings are greased every 2000 hours.", encoding="utf-8")
    asked: list[object] = []
    real = embeddings.resolve_embedder
    monkeypatch.setattr(embeddings, "resolve_embedder", lambda spec, **kw: (asked.append(spec), real(spec, **kw))[1])
    embed = CountingCallable()
    rag = akasha.RAG(model="extractive", embeddings=embed, cache_dir=":memory:")
    answer = rag(docs, "Why did the seal fail on P-102?")
    assert "suction valve" in answer
    assert "hf:all-MiniLM-L6-v2" not in asked  # no second model loaded for the answer
    # the answerer ranked its sentences with the user's embedder (sentences, not only whole chunks)
    assert any(text.startswith("The seal failed on P-102") and not text.endswith("hours.") for text in embed.texts)
