"""What the hub discount costs: ``search()`` p50 with and without it, and the one-off pass that scores the hubs.

    python -m bench.hub_cost [--sizes 2000,20000] [--queries 300]

For each size: random unit vectors (384 dimensions) and short random texts, an index
built in memory (BM25 + dense), then ``auto`` searches with ``hub_weight=0.5`` (the
default) and ``hub_weight=0`` interleaved query by query, so both see the same load (the
question vectors are given: embedding the question, 20-100 ms with MiniLM, is not
counted). Prints both p50s and their ratio (issue target: query latency at 20k chunks
within 2x), the wall time of :func:`akasha.retrieval.hubness.hub_scores` over the whole
corpus (the first sync's snapshot pays it once), and of bringing the scores up to date after
one file's 8 chunks are replaced (what every later edit pays).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np


def _corpus(n: int, rng: np.random.Generator) -> tuple[list[str], list[str], np.ndarray]:
    words = [f"w{i}" for i in range(5000)]
    ids = [f"doc{i // 8}.txt#{i % 8}" for i in range(n)]
    texts = [" ".join(rng.choice(words, 60)) for _ in range(n)]
    vectors = rng.normal(size=(n, 384)).astype(np.float32)
    return ids, texts, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def interleaved_p50_ms(queries: int, texts: list[str], rng: np.random.Generator,
                       run: Callable[[str, str, np.ndarray], object]) -> tuple[float, float]:
    """p50 milliseconds of ``run("on", question, vector)`` and ``run("off", ...)``, alternated query by query.

    Each query is six words of a corpus text and a random vector; the two sides swap order every
    query, so both see the same load on a shared machine.
    """
    times: dict[str, list[float]] = {"on": [], "off": []}
    for q in range(queries):
        question = " ".join(texts[q % len(texts)].split()[:6])
        vector = rng.normal(size=384).astype(np.float32)
        for name in (("on", "off") if q % 2 else ("off", "on")):
            start = time.perf_counter()
            run(name, question, vector)
            times[name].append(time.perf_counter() - start)
    return statistics.median(times["on"]) * 1000, statistics.median(times["off"]) * 1000


def measure(n: int, queries: int) -> dict[str, float]:
    from akasha.retrieval.bm25 import BM25Index
    from akasha.retrieval.dense import DenseIndex
    from akasha.retrieval.hubness import hub_scores
    from akasha.retrieval.search import SearchSettings, search
    from akasha.types import Chunk

    rng = np.random.default_rng(n)
    ids, texts, vectors = _corpus(n, rng)
    start = time.perf_counter()
    hub_scores(vectors)
    hub_pass = time.perf_counter() - start
    bm25 = BM25Index(tokenizer="auto")
    bm25.add(ids, texts)
    dense = DenseIndex()
    dense.add(ids, vectors)
    dense.hubs()  # computed once, as a snapshot or the first search would
    chunks = {i: Chunk(i, t, {"source": i.split("#")[0]}) for i, t in zip(ids, texts, strict=True)}
    settings = {"on": SearchSettings(), "off": SearchSettings(hub_weight=0.0)}
    on, off = interleaved_p50_ms(queries, texts, rng, lambda name, question, vector: search(
        question, vector, 10, "auto", bm25=bm25, dense=dense, chunks=chunks, settings=settings[name]))
    start = time.perf_counter()  # an edit: one file's 8 chunks replaced, hub scores brought up to date
    dense.remove(ids[:8])
    dense.add([f"edited#{i}" for i in range(8)], rng.normal(size=(8, 384)).astype(np.float32))
    dense.hubs()
    edit = time.perf_counter() - start
    return {"chunks": n, "p50_on_ms": on, "p50_off_ms": off, "ratio": on / off, "hub_pass_s": hub_pass,
            "edit_s": edit}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,20000")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    print("| chunks | search() p50, hub discount on | off | ratio (target <= 2x at 20k) "
          "| first hub pass | an edit of 8 chunks after it |")
    print("|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        r = measure(size, args.queries)
        print(f"| {r['chunks']:,} | {r['p50_on_ms']:.2f} ms | {r['p50_off_ms']:.2f} ms | {r['ratio']:.2f}x "
              f"| {r['hub_pass_s']:.2f} s | {r['edit_s'] * 1000:.0f} ms |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
