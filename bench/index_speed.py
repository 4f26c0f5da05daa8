"""Index speed benchmark: ``python -m bench.index_speed [--sizes 2000,20000,100000,1000000] [--queries 200]``.

For each synthetic corpus size (Zipf-distributed English-like words, ~80
tokens per chunk, precomputed 384-dimensional float32 vectors to look like
MiniLM) it measures:

* index build time (BM25 postings + normalised dense matrix);
* p50/p95 query latency per search type, excluding the question's embedding;
* the same for a naive baseline in the same run: rank_bm25 ``BM25Okapi`` (same
  tokenizer) plus numpy brute force (``matrix @ q``) with a full ``argsort``
  (RRF-fused for "auto");

plus a BM25 query made of the most common words (the longest postings), the
process's resident memory (RSS) after each build, and at the end the
per-size query-cost curve. Corpora are generated, tokenised and indexed in
blocks of 50,000 chunks so 1,000,000 chunks fit in a few GB; above
``DenseIndex.quantize_above`` rows dense search uses binary codes + exact
rescoring (see akasha/retrieval/dense.py).

And, once, a sync of an unchanged 1,000-file corpus with the hash embedder
(same instance, and a fresh instance on the same cache as a new process would).
Files are back-dated by an hour so the stat cache trusts them, as it would
for any corpus that has been on disk for more than two seconds.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from akasha.retrieval import fusion
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex
from akasha.retrieval.search import SEARCH_TYPES, search
from akasha.retrieval.tokenize import tokenize
from akasha.types import Chunk

DIM = 384


BLOCK = 50_000


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident set size of this process in MB."""
    current = 0.0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                current = int(line.split()[1]) / 1024
    except OSError:
        pass
    return current, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_texts(n: int, seed: int = 0, vocab_size: int = 30_000, mean_len: int = 80) -> tuple[list[str], list[str]]:
    """``n`` chunk texts and the vocabulary (Zipf-distributed words)."""
    texts, _, vocab = make_corpus(n, seed, vocab_size, mean_len, vectors=False)
    return texts, vocab


def make_corpus(n: int, seed: int = 0, vocab_size: int = 30_000, mean_len: int = 80, *,
                vectors: bool = True) -> tuple[list[str], np.ndarray, list[str]]:
    """``n`` chunk texts, their (random, unnormalised) vectors and the vocabulary."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(vocab_size)])
    ranks = np.arange(1, vocab_size + 1)
    prob = 1.0 / ranks**1.05
    prob /= prob.sum()
    texts: list[str] = []
    for start in range(0, n, 10_000):  # in blocks, so 1,000,000 chunks do not need a 2 GB word array
        lengths = rng.integers(mean_len // 2, mean_len * 3 // 2, size=min(10_000, n - start))
        words = vocab[rng.choice(vocab_size, size=int(lengths.sum()), p=prob)].tolist()
        bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
        texts.extend(" ".join(words[bounds[i] : bounds[i + 1]]) for i in range(len(lengths)))
    if not vectors:
        return texts, np.zeros((0, DIM), dtype=np.float32), vocab.tolist()
    return texts, rng.standard_normal((n, DIM), dtype=np.float32), vocab.tolist()


def vector_blocks(n: int, seed: int = 0):
    """The corpus vectors in blocks of :data:`BLOCK` rows (never the whole matrix twice in memory)."""
    rng = np.random.default_rng(seed + 1000)
    for start in range(0, n, BLOCK):
        yield rng.standard_normal((min(BLOCK, n - start), DIM), dtype=np.float32)


def make_queries(vocab: list[str], count: int, seed: int = 1, common: bool = False) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    # mid-frequency words, 2-4 per question, like real keyword questions; ``common``: the 20 most frequent words
    pool = vocab[:20] if common else vocab[50:5000]
    queries = [" ".join(rng.choice(pool, size=rng.integers(2, 5))) for _ in range(count)]
    return queries, rng.standard_normal((count, DIM), dtype=np.float32)


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return statistics.median(ordered) * 1000, p95 * 1000


def time_queries(fn: Callable[[str, np.ndarray], object], queries: list[str], vectors: np.ndarray) -> tuple[float, float]:
    fn(queries[0], vectors[0])  # warm-up
    samples = []
    for query, vector in zip(queries, vectors, strict=True):
        started = time.perf_counter()
        fn(query, vector)
        samples.append(time.perf_counter() - started)
    return percentiles(samples)


def bench_size(n: int, n_queries: int, baseline_queries: int) -> list[tuple[str, ...]]:
    """Build + query timings at ``n`` chunks; ``baseline_queries=0`` skips the naive baseline."""
    rows: list[tuple[str, ...]] = []
    texts, vocab = make_texts(n)
    ids = [f"chunk{i}" for i in range(n)]
    chunks = {i: Chunk(i, t, {"source": f"file{j // 10}.txt"}) for j, (i, t) in enumerate(zip(ids, texts, strict=True))}
    queries, qvectors = make_queries(vocab, n_queries)
    common, common_vectors = make_queries(vocab, n_queries, seed=2, common=True)

    gc.collect()
    started = time.perf_counter()
    bm25 = BM25Index(tokenizer="bigram")
    for start in range(0, n, BLOCK):  # tokens of one block at a time: 80M token strings would not fit
        bm25.add(ids[start : start + BLOCK], texts[start : start + BLOCK])
    t_bm25 = time.perf_counter() - started
    dense = DenseIndex()
    t_dense = 0.0
    for start, block in zip(range(0, n, BLOCK), vector_blocks(n), strict=True):
        began = time.perf_counter()
        dense.add(ids[start : start + len(block)], block)
        t_dense += time.perf_counter() - began
    vectors = dense.matrix() if baseline_queries else np.zeros((0, DIM), dtype=np.float32)
    rss, peak = rss_mb()
    mode = "exact" if dense._codes is None else f"binary codes {dense._codes.nbytes / 2**20:.0f} MB + rescore"
    rows.append((f"{n:,}", "memory", f"RSS {rss:,.0f} MB", f"peak {peak:,.0f} MB", f"dense: {mode}", ""))

    naive_bm25: Any = None
    naive_matrix = vectors
    if baseline_queries:
        from rank_bm25 import BM25Okapi

        started = time.perf_counter()
        naive_bm25 = BM25Okapi([tokenize(t) for t in texts])  # same tokenizer: compare the index, not the regex
        naive_matrix = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        t_naive = time.perf_counter() - started
        rows.append((f"{n:,}", "build", f"{(t_bm25 + t_dense) * 1000:.0f} ms", f"bm25 {t_bm25 * 1000:.0f} ms",
                     f"{t_naive * 1000:.0f} ms", f"{t_naive / (t_bm25 + t_dense):.1f}x"))
    else:
        rows.append((f"{n:,}", "build", f"{(t_bm25 + t_dense) * 1000:.0f} ms", f"bm25 {t_bm25 * 1000:.0f} ms", "", ""))

    def naive(kind: str) -> Callable[[str, np.ndarray], object]:
        def vec(q: str, v: np.ndarray) -> list[tuple[str, float]]:
            scores = naive_matrix @ (v / np.linalg.norm(v))
            order = np.argsort(-scores)[:50]
            return [(ids[i], float(scores[i])) for i in order]

        def lex(q: str, v: np.ndarray) -> list[tuple[str, float]]:
            scores = naive_bm25.get_scores(tokenize(q))
            order = np.argsort(-scores)[:50]
            return [(ids[i], float(scores[i])) for i in order]

        if kind == "knn":
            return vec
        if kind == "bm25":
            return lex
        return lambda q, v: fusion.rrf([vec(q, v), lex(q, v)])

    bq, bv = queries[:baseline_queries], qvectors[:baseline_queries]
    for kind in SEARCH_TYPES:
        p50, p95 = time_queries(
            lambda q, v, kind=kind: search(q, v, 10, kind, bm25=bm25, dense=dense, chunks=chunks), queries, qvectors)
        if kind in ("auto", "knn", "bm25") and baseline_queries:
            b50, _ = time_queries(naive(kind), bq, bv)
            rows.append((f"{n:,}", kind, f"{p50:.2f} ms", f"{p95:.2f} ms", f"{b50:.2f} ms", f"{b50 / p50:.1f}x"))
        else:
            rows.append((f"{n:,}", kind, f"{p50:.2f} ms", f"{p95:.2f} ms", "", ""))
    for kind in ("bm25", "auto"):
        p50, p95 = time_queries(lambda q, v, kind=kind: search(q, v, 10, kind, bm25=bm25, dense=dense, chunks=chunks),
                                common, common_vectors)
        rows.append((f"{n:,}", f"{kind} (common words)", f"{p50:.2f} ms", f"{p95:.2f} ms", "", ""))
    return rows


def print_curve(rows: list[tuple[str, ...]]) -> None:
    """Query cost per size: p50 per search type, and ms per 100,000 chunks for "auto"."""
    table: dict[str, dict[str, str]] = {}
    for size, measure, p50, *_ in rows:
        if measure in ("auto", "knn", "bm25", "auto (common words)") and p50.endswith(" ms"):
            table.setdefault(size, {})[measure] = p50
    curve = []
    for size, cells in table.items():
        n = int(size.replace(",", ""))
        auto = float(cells.get("auto", "0 ms").split()[0])
        curve.append((size, cells.get("auto", ""), cells.get("knn", ""), cells.get("bm25", ""),
                      cells.get("auto (common words)", ""), f"{auto / n * 100_000:.2f} ms"))
    head = ("chunks", "auto p50", "knn p50", "bm25 p50", "auto p50 (common words)", "auto per 100k chunks")
    sys.stdout.write("\nQuery-cost curve\n")
    print_table(curve, head)


def bench_rerun(n_files: int = 1000) -> list[tuple[str, ...]]:
    from akasha.embeddings.hash import HashEmbedder
    from akasha.index import CorpusIndex

    texts, _, _ = make_corpus(n_files * 3, seed=3, mean_len=60)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(tmp) / "docs"
        docs.mkdir()
        old = time.time() - 3600
        for i in range(n_files):
            path = docs / f"doc{i:04d}.txt"
            path.write_text("\n\n".join(texts[3 * i : 3 * i + 3]))
            os.utime(path, (old, old))
        cache = Path(tmp) / "cache"
        embedder = HashEmbedder(DIM)
        index = CorpusIndex(embedder, chunk_size=1000, cache_dir=cache)
        started = time.perf_counter()
        first = index.sync(docs)
        rows.append((f"{n_files} files", "first sync", f"{(time.perf_counter() - started) * 1000:.0f} ms",
                     f"{first.chunks} chunks", f"{embedder.calls} calls", ""))
        calls = embedder.calls
        started = time.perf_counter()
        index.sync(docs)
        rows.append((f"{n_files} files", "unchanged re-run", f"{(time.perf_counter() - started) * 1000:.0f} ms",
                     "same instance", f"{embedder.calls - calls} calls", ""))
        fresh = HashEmbedder(DIM)
        started = time.perf_counter()
        CorpusIndex(fresh, chunk_size=1000, cache_dir=cache).sync(docs)
        rows.append((f"{n_files} files", "unchanged re-run", f"{(time.perf_counter() - started) * 1000:.0f} ms",
                     "fresh instance", f"{fresh.calls} calls", ""))
    return rows


def print_table(rows: list[tuple[str, ...]], head: tuple[str, ...] = ("chunks", "measure", "akasha p50/time",
                                                                    "akasha p95", "naive p50/time", "speed-up")) -> None:
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    line = " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))
    sys.stdout.write(line + "\n" + "-+-".join("-" * w for w in widths) + "\n")
    for row in rows:
        sys.stdout.write(" | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,100000", help="comma-separated chunk counts (e.g. 2000,100000,1000000)")
    parser.add_argument("--queries", type=int, default=200, help="questions timed per search type")
    parser.add_argument("--baseline-queries", type=int, default=20,
                        help="questions timed for the naive baseline (0 skips it, e.g. at 1,000,000 chunks)")
    parser.add_argument("--files", type=int, default=1000, help="files in the unchanged re-run corpus (0 skips it)")
    args = parser.parse_args(argv)
    rows: list[tuple[str, ...]] = []
    for size in [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]:
        sized = bench_size(size, args.queries, args.baseline_queries if size <= 200_000 else 0)
        rows.extend(sized)
        print_table(sized)
        gc.collect()
    if args.files:
        rows.extend(bench_rerun(args.files))
    sys.stdout.write("\n")
    print_table(rows)
    print_curve(rows)


if __name__ == "__main__":
    main()
