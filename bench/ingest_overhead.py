"""Ingest overhead of akasha excluding the embedding model: target <= 10 % of ingest wall time with MiniLM.

    python -m bench.ingest_overhead [--folders tutorial,howto]

Indexes real text (manuals from the python3.11-doc evaluation set, built by
bench/build_eval_set.py) into a fresh persistent cache with the packaged
MiniLM, timing the model's own embed_documents calls separately. Overhead =
(sync wall time - time inside the model) / sync wall time: loading, chunking,
hashing, BM25, vector storage and bookkeeping.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.build_eval_set import OUT, build

TARGET = 0.10


class TimedEmbedder:
    """Delegates to a real embedder and adds up the seconds spent inside it."""

    def __init__(self, inner) -> None:
        self.inner, self.seconds, self.texts = inner, 0.0, 0
        self.name, self.batch_size = inner.name, inner.batch_size

    @property
    def dimension(self):
        return self.inner.dimension

    def embed_documents(self, texts):
        start = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            self.seconds += time.perf_counter() - start
            self.texts += len(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folders", default="tutorial,howto", help="manuals of the eval set to index")
    parser.add_argument("--embeddings", default="hf:all-MiniLM-L6-v2")
    args = parser.parse_args(argv)
    if not (OUT / "corpus").exists():
        build()
    from akasha.embeddings import resolve_embedder
    from akasha.index import CorpusIndex

    embedder = TimedEmbedder(resolve_embedder(args.embeddings))
    embedder.inner.embed_documents(["warm up the model"])  # model load is not ingest
    sources = [OUT / "corpus" / f for f in args.folders.split(",")]
    cache = Path(tempfile.mkdtemp(prefix="akasha-ingest-"))
    try:
        index = CorpusIndex(embedder, chunk_size=1000, cache_dir=cache)
        start = time.perf_counter()
        index.sync([str(s) for s in sources])
        wall = time.perf_counter() - start
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    overhead = (wall - embedder.seconds) / wall
    print(f"ingest of {len(index):,} chunks ({embedder.texts:,} embedded) with {args.embeddings}: wall {wall:.1f} s, "
          f"inside the model {embedder.seconds:.1f} s, akasha overhead {wall - embedder.seconds:.2f} s = {overhead:.1%} "
          f"(target <= {TARGET:.0%}: {'MET' if overhead <= TARGET else 'MISSED'})")
    return 0 if overhead <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
