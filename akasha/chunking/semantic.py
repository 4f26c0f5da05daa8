"""Semantic chunking: start a new chunk where the topic shifts or the chunk is full.

Every sentence is embedded with the pipeline's embedder; consecutive sentences stay in one chunk
while their cosine is at least ``chunking.similarity_threshold`` (0.5). ``overlap`` is ignored.
When the index sets ``embed``, sentences go through its embeddings cache, so a one-sentence chunk
is not embedded twice and re-chunking reuses every sentence's vector.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from akasha.chunking.fixed import PieceSplitter, size_only, split_fixed
from akasha.chunking.sentence import joined, split_sentences
from akasha.embeddings.base import Embedder, as_matrix, normalize_rows
from akasha.errors import SpecError


class SemanticSplitter(PieceSplitter):
    """Groups consecutive sentences whose embeddings stay similar, up to ``chunk_size``."""

    def __init__(self, embedder: Embedder, chunk_size: int = 500, similarity_threshold: float = 0.5) -> None:
        super().__init__("semantic", self.split_text)
        self.embedder = embedder
        self.chunk_size = chunk_size
        self.similarity_threshold = similarity_threshold
        #: texts -> vectors through the index's embeddings cache (set by the index); else the embedder's own.
        self.embed: Callable[[list[str]], np.ndarray] | None = None

    def split_text(self, text: str) -> list[str]:
        sentences: list[str] = []
        for sentence in split_sentences(text):
            # A sentence longer than a chunk is cut first, so every piece fits.
            too_long = len(sentence) > self.chunk_size
            sentences.extend(split_fixed(sentence, self.chunk_size, 0) if too_long else [sentence])
        if not sentences:
            return []
        raw = self.embed(sentences) if self.embed is not None else self.embedder.embed_documents(sentences)
        vectors = normalize_rows(as_matrix(raw, len(sentences), self.embedder.name))
        pieces: list[str] = []
        current = sentences[0]
        for i in range(1, len(sentences)):
            cosine = float(np.dot(vectors[i - 1], vectors[i]))
            candidate = joined(current, sentences[i])
            if cosine >= self.similarity_threshold and len(candidate) <= self.chunk_size:
                current = candidate
            else:
                pieces.append(current)
                current = sentences[i]
        pieces.append(current)
        return pieces


def make_semantic_splitter(config: dict[str, Any], context: Any) -> SemanticSplitter:
    """Registry factory for ``strategy: semantic``; uses the pipeline's embedder."""
    chunk_size = size_only(config)
    threshold = config.get("similarity_threshold", 0.5)
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not -1.0 <= threshold <= 1.0:
        raise SpecError(f"chunking.similarity_threshold must be a number between -1 and 1, got {threshold!r}")
    return SemanticSplitter(context.embedder, chunk_size, float(threshold))


__all__ = ["SemanticSplitter", "make_semantic_splitter"]
