"""akasha alone at scale: build time, query latency per search type and memory, up to 1,000,000 chunks.

    python -m bench.scale                         # 100,000 and 1,000,000 chunks
    python -m bench.scale --sizes 1000000 --threads 2
    python -m bench.scale --sizes 1000000 --direct   # search core only: query cost + memory, no file sync

Vectors are precomputed (random unit vectors, 384 dims like MiniLM, stored in
bench/.data/synthetic-<n>-0/vectors.npy) and served by text lookup, so the
build time is akasha's own work (loading, chunking, hashing, BM25, storing)
and not a model's. Each size runs in a fresh process (for an honest peak RSS)
limited to --threads BLAS/OpenMP threads (2 = this machine's cores). Query
latency excludes nothing: the question is "embedded" by the same lookup.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.corpus import DATA, make_corpus

log = logging.getLogger("bench.scale")
RESULTS = Path(__file__).resolve().parent / "results"
DIM = 384


class PrecomputedEmbedder:
    """Serves stored vectors by chunk text; a text it has never seen gets a deterministic random vector."""

    batch_size = 4096

    def __init__(self, rows: dict[str, int], vectors: np.ndarray, name: str) -> None:
        self.rows, self.vectors, self.name, self.dimension = rows, vectors, name, vectors.shape[1]
        self.calls = self.texts = 0

    @staticmethod
    def _random(text: str) -> np.ndarray:
        v = np.random.default_rng(zlib.crc32(text.encode("utf-8"))).standard_normal(DIM).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_documents(self, texts):
        self.calls += 1
        self.texts += len(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            row = self.rows.get(text.strip())
            out[i] = self.vectors[row] if row is not None else self._random(text)
        return out

    def embed_query(self, text):
        return self._random(text)


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def latency(run: Callable[[str], object], queries: list[str]) -> dict[str, float]:
    """p50 / p95 milliseconds of ``run`` over ``queries``, after one warm-up call."""
    run(queries[0])
    times = []
    for query in queries:
        t0 = time.perf_counter()
        run(query)
        times.append(1000 * (time.perf_counter() - t0))
    times.sort()
    return {"p50_ms": times[len(times) // 2], "p95_ms": times[int(len(times) * 0.95) - 1], "queries": len(times)}


def child(job_path: str) -> None:
    """Runs in a fresh process: build the index for one size, time queries, report memory."""
    job = json.loads(Path(job_path).read_text())
    from akasha.index import CorpusIndex

    root = Path(job["corpus_root"])
    vectors = np.load(root / "vectors.npy", mmap_mode="r")
    rows = {}
    for path in sorted((root / "docs").rglob("*.txt")):
        base = int(path.stem.removeprefix("doc")) * 20
        for j, para in enumerate(path.read_text(encoding="utf-8").split("\n\n")):
            rows[para.strip()] = base + j
    embedder = PrecomputedEmbedder(rows, vectors, "bench-precomputed-384")
    rss_before = _rss_mb()
    start = time.perf_counter()
    index = CorpusIndex(embedder, chunk_size=1000, cache_dir=job["work"])
    report = index.sync(root / "docs")
    build_s = time.perf_counter() - start
    rows.clear()
    result = {"size": job["size"], "chunks": len(index), "build_s": build_s, "embedded": embedder.texts,
              "rss_after_build_mb": _rss_mb(), "rss_before_build_mb": rss_before, "latency": {}}
    for search_type in job["search_types"]:
        result["latency"][search_type] = latency(
            lambda q, t=search_type, find=index.search: find(q, k=10, search_type=t), job["queries"])
    del index
    start = time.perf_counter()
    again = CorpusIndex(embedder, chunk_size=1000, cache_dir=job["work"])
    embedded_before = embedder.texts
    again.sync(root / "docs")
    result["rerun_s"] = time.perf_counter() - start
    result["rerun_embedded"] = embedder.texts - embedded_before
    result["sync"] = {f: getattr(report, f) for f in ("indexed", "unchanged", "embedded") if hasattr(report, f)}
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(job["result"]).write_text(json.dumps(result))


def child_direct(job_path: str) -> None:
    """The search core alone (BM25Index + DenseIndex + search()) on the corpus's texts and stored vectors.

    Skips file loading, chunking and the on-disk store, so it measures what a
    query costs at this size and what the in-memory index weighs, in minutes
    rather than the hour a full sync of 1,000,000 chunks takes on 2 cores.
    """
    job = json.loads(Path(job_path).read_text())
    from akasha.retrieval.bm25 import BM25Index
    from akasha.retrieval.dense import DenseIndex
    from akasha.retrieval.search import search
    from akasha.types import Chunk

    root = Path(job["corpus_root"])
    texts: list[str] = []
    for path in sorted((root / "docs").rglob("*.txt")):
        texts.extend(p.strip() for p in path.read_text(encoding="utf-8").split("\n\n"))
    ids = [f"c{i}" for i in range(len(texts))]
    vectors = np.load(root / "vectors.npy")
    rss_before = _rss_mb()
    start = time.perf_counter()
    bm25 = BM25Index()
    for at in range(0, len(ids), 50_000):
        bm25.add(ids[at : at + 50_000], texts[at : at + 50_000])
    dense = DenseIndex.from_matrix(ids, vectors, normalized=True)
    chunks = {i: Chunk(i, t, {}) for i, t in zip(ids, texts, strict=True)}
    build_s = time.perf_counter() - start
    del vectors
    embedder = PrecomputedEmbedder({}, np.zeros((1, DIM), dtype=np.float32), "query-only")
    result = {"size": job["size"], "chunks": len(ids), "build_s": build_s, "embedded": 0, "mode": "direct",
              "rss_after_build_mb": _rss_mb(), "rss_before_build_mb": rss_before, "latency": {},
              "rerun_s": float("nan"), "rerun_embedded": 0}
    for search_type in job["search_types"]:
        result["latency"][search_type] = latency(
            lambda q, t=search_type: search(q, embedder.embed_query(q), 10, t, bm25=bm25, dense=dense, chunks=chunks),
            job["queries"])
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(job["result"]).write_text(json.dumps(result))


def ensure_vectors(size: int) -> Path:
    """Write the precomputed vectors for the size's corpus (row i = paragraph i) if missing."""
    corpus = make_corpus(size)
    root = corpus.root.parent
    path = root / "vectors.npy"
    if not path.exists():
        rng = np.random.default_rng(size)
        vectors = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(size, DIM))
        for start in range(0, size, 100_000):
            block = rng.standard_normal((min(100_000, size - start), DIM)).astype(np.float32)
            vectors[start : start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
        vectors.flush()
        del vectors
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--search-types", default="auto,bm25,knn")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2, help="BLAS/OpenMP threads for the index process")
    parser.add_argument("--direct", action="store_true",
                        help="search core only (BM25Index + DenseIndex), no file sync: query cost and memory at size")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-direct", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    if args.child_direct:
        child_direct(args.child_direct)
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    results = []
    RESULTS.mkdir(parents=True, exist_ok=True)
    for size in [int(s) for s in args.sizes.split(",")]:
        t0 = time.perf_counter()
        root = ensure_vectors(size)
        corpus = make_corpus(size)
        log.info("corpus + vectors for %s chunks ready in %.0f s", f"{size:,}", time.perf_counter() - t0)
        work = DATA / "work" / f"scale-{size}"
        shutil.rmtree(work, ignore_errors=True)
        with tempfile.TemporaryDirectory() as tmp:
            job = {"size": size, "corpus_root": str(root), "work": str(work), "queries": corpus.queries[: args.queries],
                   "search_types": args.search_types.split(","), "result": str(Path(tmp) / "result.json")}
            (Path(tmp) / "job.json").write_text(json.dumps(job))
            threads = str(args.threads)
            env = dict(os.environ, OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
            flag = "--child-direct" if args.direct else "--child"
            code = subprocess.call([sys.executable, "-m", "bench.scale", flag, str(Path(tmp) / "job.json")], env=env)
            if code != 0 or not Path(job["result"]).exists():
                log.error("size %s failed (exit %s)", size, code)
                continue
            result = json.loads(Path(job["result"]).read_text())
        results.append(result)
        (RESULTS / "scale.json").write_text(json.dumps(results, indent=2))
    types = args.search_types.split(",")
    print(f"\n### akasha at scale (precomputed 384-dim vectors, {args.threads} threads)\n")
    head = ["chunks", "build s", "re-run s (embedded)", *(f"{t} p50/p95 ms" for t in types), "RSS after build MB", "peak RSS MB"]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for r in results:
        rerun = "- (direct: no sync)" if r.get("mode") == "direct" else f"{r['rerun_s']:.2f} ({r['rerun_embedded']})"
        cells = [f"{r['chunks']:,}", f"{r['build_s']:.1f}", rerun]
        cells += [f"{r['latency'][t]['p50_ms']:.2f} / {r['latency'][t]['p95_ms']:.2f}" for t in types]
        cells += [f"{r['rss_after_build_mb']:.0f}", f"{r['peak_rss_mb']:.0f}"]
        print("| " + " | ".join(cells) + " |")
    for r in results:
        if r["size"] >= 1_000_000 and "auto" in r["latency"]:
            p50 = r["latency"]["auto"]["p50_ms"]
            print(f"\n{'MET ' if p50 <= 50 else 'MISS'} auto p50 at {r['chunks']:,} chunks = {p50:.1f} ms (target <= 50 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
