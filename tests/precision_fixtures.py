"""A cache shared by the packaged MiniLM in float32 and in another numeric format (bfloat16, int8)."""

from __future__ import annotations

from pathlib import Path

from akasha.embeddings.local import SentenceTransformerEmbedder


def embedded_float32_other_float32(tmp_path: Path, texts: list[str], other: SentenceTransformerEmbedder,
                                   ) -> tuple[int, int, int]:
    """Index ``texts`` (one file each) into one cache folder three times: with the float32 embedder, with
    ``other``, then with float32 again; how many chunks each run embedded.

    (n, n, 0) means ``other``'s vectors were kept apart from float32's and float32 reused its own.
    """
    from akasha.index import CorpusIndex

    docs = tmp_path / "docs"
    docs.mkdir()
    for i, text in enumerate(texts):
        (docs / f"d{i}.txt").write_text(text)
    cache = tmp_path / "cache"
    first = CorpusIndex(SentenceTransformerEmbedder("all-MiniLM-L6-v2"), cache_dir=cache).sync(docs)
    second = CorpusIndex(other, cache_dir=cache).sync(docs)
    again = CorpusIndex(SentenceTransformerEmbedder("all-MiniLM-L6-v2"), cache_dir=cache).sync(docs)
    return first.embedded, second.embedded, again.embedded
