"""The in-process stores' lexical side after a write: ``python -m bench.inprocess_lexical [--chunks 20000]``.

A faiss store (the memory store shares the code: akasha/stores/inprocess.py) keeps a BM25
index of its records' texts for ``query`` requests with a lexical side. This prints, in one
run: the first lexical query (which builds the index), a repeat, the first query after a
one-chunk write (which re-tokenizes the changed ids only) and the ratio of the two
first queries. Texts are ``bench.corpus.paragraphs`` (~900 characters).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from akasha.stores.faiss import FaissStore
from akasha.stores.query import SearchRequest, lexical_tokenizer
from akasha.types import Chunk
from bench.corpus import paragraphs

DIM = 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20000)
    n = parser.parse_args().chunks
    texts = paragraphs(n, seed=1)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = FaissStore(DIM)
    store.upsert([Chunk(f"d{i}#0", t, {"chunk_index": 0}) for i, t in enumerate(texts)], vectors)
    request = SearchRequest(tokens=tuple(lexical_tokenizer(store.lexical_tokenizer)(" ".join(texts[7].split()[:5]))))

    def timed() -> float:
        began = time.perf_counter()
        store.query(request)
        return (time.perf_counter() - began) * 1000

    build, repeat = timed(), timed()
    store.upsert([Chunk("new#0", "one more chunk of text", {"chunk_index": 0})], vectors[:1])
    after_write = timed()
    print(f"{n:,} chunks: first lexical query {build:.0f} ms, repeat {repeat:.1f} ms, "
          f"after a one-chunk write {after_write:.1f} ms ({build / max(after_write, 1e-3):.0f}x less than the build)")


if __name__ == "__main__":
    main()
