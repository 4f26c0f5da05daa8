"""What Chroma's lexical fallback costs: ``python -m bench.chroma_lexical [--chunks 2000,20000]``.

The installed chromadb answers only the dense side natively (its sparse and hybrid search
is Chroma Cloud only), so akasha's lexical side on Chroma looks each question term up with
Chroma's full-text filter (``akasha.stores.chroma.ChromaStore._lexical``). For each corpus
size (``bench.corpus``, 384-d precomputed vectors), in one run on one Chroma folder: p50 of a
dense-only query, of a lexical-only query and of a hybrid query through ``store.query``, and
the Chroma requests each one makes.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="2000,20000")
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args(argv)
    import numpy as np

    import akasha
    from akasha.stores.chroma import ChromaStore
    from akasha.stores.query import SearchRequest, lexical_tokenizer
    from bench.corpus import make_corpus
    from bench.server_index import PrecomputedEmbedder

    print("| chunks | dense p50 (ms) | lexical p50 (ms) | hybrid p50 (ms) | Chroma requests per hybrid query |")
    print("|---:|---:|---:|---:|---:|")
    for size in [int(s) for s in args.chunks.split(",")]:
        corpus = make_corpus(size, n_queries=args.queries)
        work = Path(tempfile.mkdtemp(prefix="akchroma"))
        try:
            store = ChromaStore("bench-lexical", path=work / "chroma")
            embedder = PrecomputedEmbedder()
            rag = akasha.RAG(embeddings=embedder, model="extractive", cache_dir=str(work / "cache"),
                             vector_store=store)
            rag.index(str(corpus.root))
            tokenize = lexical_tokenizer(store.lexical_tokenizer)
            calls = {"n": 0}
            original = store._call  # noqa: SLF001 - counting the store's own requests

            def counting(what, fn, _original=original):  # noqa: ANN001, ANN202
                calls["n"] += 1
                return _original(what, fn)

            store._call = counting  # type: ignore[method-assign]  # noqa: SLF001
            timings: dict[str, list[float]] = {"dense": [], "lexical": [], "hybrid": []}
            requests = []
            for question in corpus.queries:
                vector = embedder.embed_query(question)
                vector = vector / np.linalg.norm(vector)
                tokens = tuple(tokenize(question))
                for mode, request in (("dense", SearchRequest(vector=vector, k=10, pool=50)),
                                      ("lexical", SearchRequest(tokens=tokens, k=10, pool=50)),
                                      ("hybrid", SearchRequest(vector=vector, tokens=tokens, k=10, pool=50))):
                    before = calls["n"]
                    started = time.perf_counter()
                    store.query(request)
                    timings[mode].append((time.perf_counter() - started) * 1000)
                    if mode == "hybrid":
                        requests.append(calls["n"] - before)
            print(f"| {size:,} | {statistics.median(timings['dense']):.1f} | {statistics.median(timings['lexical']):.1f} "
                  f"| {statistics.median(timings['hybrid']):.1f} | {statistics.mean(requests):.1f} |", flush=True)
            rag.close()
            store.close()
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
