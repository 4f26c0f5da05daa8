"""Shared-index benchmark: ``python -m bench.server_index [--chunks 100000] [--queries 200]``.

Measures, in one run and on the same synthetic corpus (``bench.corpus``: 20
paragraphs of ~900 characters per file, one chunk each) and the same
precomputed 384-dimensional vectors (sums of fixed per-word vectors, ~30 us per chunk, so the figures are the
index's own cost):

* ingest: a first ``CorpusIndex.sync`` into an empty index (chunks/s, seconds);
* second machine: a fresh CorpusIndex (new local cache folder) on the same
  server, ``sync`` again (seconds, texts embedded: must be 0);
* query p50/p95 for ``"auto"`` (hybrid) and ``"knn"``, k=10, excluding the
  question's embedding: the local cache searches exactly in memory, a server in its
  own engine (pgvector's HNSW index), so each server's knn recall@10 is given against
  the local cache's exact search (run ``local`` first, as the default order does);

for the local cache (SQLite + in-memory search), a Chroma server (``chroma run``)
and PostgreSQL + pgvector (pgserver). The servers are started by the benchmark in a temp folder,
with the same launchers the tests use (tests/servers_fixtures.py).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.corpus import make_corpus

DIM = 384


class PrecomputedEmbedder:
    """Cheap, deterministic 384-d "precomputed" vectors with real structure.

    Each word gets a fixed random vector (seeded by its hash, computed once);
    a text's vector is the sum of its words' vectors, so texts sharing words are
    close, like real embeddings (pure random vectors are a worst case for HNSW
    that no real corpus looks like). Costs ~30 us per chunk.
    """

    def __init__(self, dimension: int = DIM) -> None:
        self.name = f"bench-precomputed:{dimension}"
        self.dimension = dimension
        self.batch_size = 512
        self.texts_embedded = 0
        self._words: dict[str, np.ndarray] = {}

    def _word(self, word: str) -> np.ndarray:
        vec = self._words.get(word)
        if vec is None:
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            vec = self._words[word] = np.random.default_rng(seed).standard_normal(self.dimension, dtype=np.float32)
        return vec

    def _one(self, text: str) -> np.ndarray:
        words = [w.strip(".,;:!?").lower() for w in text.split()] or [""]
        return np.sum([self._word(w) for w in words], axis=0, dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.texts_embedded += len(texts)
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dimension), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) if values else float("nan")


def measure(name: str, url: str | None, docs: Path, queries: list[str], work: Path,
            exact: dict[str, list[str]]) -> dict[str, float | str]:
    from akasha.index import CorpusIndex

    def open_index(cache: Path, embedder: PrecomputedEmbedder) -> CorpusIndex:
        if url is None:
            return CorpusIndex(embedder, cache_dir=cache)
        return CorpusIndex(embedder, cache_dir=cache, vector_store=url)

    row: dict[str, float | str] = {"backend": name}
    embedder = PrecomputedEmbedder()
    started = time.perf_counter()
    index = open_index(work / f"{name}-a", embedder)
    report = index.sync(docs)
    row["ingest_s"] = time.perf_counter() - started
    row["chunks"] = report.chunks
    row["chunks_per_s"] = report.chunks / row["ingest_s"]
    vectors = {q: embedder.embed_query(q) for q in queries}
    original = index.embedder.embed_query
    index.embedder.embed_query = vectors.__getitem__  # type: ignore[method-assign]  # exclude the embedding
    try:
        for search_type in ("auto", "knn"):
            for q in queries[:5]:
                index.search(q, k=10, search_type=search_type)
            times = []
            found: dict[str, list[str]] = {}
            for q in queries:
                t0 = time.perf_counter()
                hits = index.search(q, k=10, search_type=search_type)
                times.append((time.perf_counter() - t0) * 1000)
                found[q] = [h.chunk.id for h in hits]
            row[search_type] = f"{_percentile(times, 50):.1f} / {_percentile(times, 95):.1f}"
            if search_type == "knn" and name == "local":
                exact.update(found)  # exact cosine: the reference for the servers' engines
            elif search_type == "knn" and exact:
                row["recall"] = "{:.3f}".format(float(np.mean(
                    [len(set(found[q]) & set(exact[q])) / max(1, len(exact[q])) for q in queries])))
    finally:
        index.embedder.embed_query = original  # type: ignore[method-assign]
    index.close()
    second = PrecomputedEmbedder()
    started = time.perf_counter()
    other = open_index(work / f"{name}-b", second)
    other.sync(docs)
    row["second_machine_s"] = time.perf_counter() - started
    row["second_machine_embedded"] = second.texts_embedded
    other.close()
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--backends", default="local,chroma,pgvector")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from servers_fixtures import ChromaServer, PostgresServer

    corpus = make_corpus(args.chunks, n_queries=args.queries)
    work = Path(tempfile.mkdtemp(prefix="akbench", dir="/tmp"))
    work.chmod(0o755)
    wanted = [b.strip() for b in args.backends.split(",") if b.strip()]
    rows = []
    exact: dict[str, list[str]] = {}
    servers: list[object] = []
    try:
        for name in wanted:
            url = None
            if name == "chroma":
                server = ChromaServer(work / "chroma").start()
                servers.append(server)
                url = server.url("bench-docs")
            elif name == "pgvector":
                server = PostgresServer(work / "pgdata").init().start()
                servers.append(server)
                url = server.dsn(table="bench")
            elif name != "local":
                parser.error(f"unknown backend {name!r}; known: local, chroma, pgvector")
            print(f"[{name}] indexing {args.chunks} chunks ...", file=sys.stderr, flush=True)
            rows.append(measure(name, url, corpus.root, corpus.queries, work, exact))
    finally:
        for server in servers:
            server.stop()  # type: ignore[attr-defined]
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nShared-index benchmark: {args.chunks:,} chunks, {DIM}-d precomputed vectors, "
          f"{len(corpus.queries)} queries, k=10\n")
    print("| backend | ingest (chunks/s) | ingest (s) | second machine sync (s) | embedded there "
          "| auto p50 / p95 (ms) | knn p50 / p95 (ms) | knn recall@10 vs local exact |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['backend']} | {r['chunks_per_s']:,.0f} | {r['ingest_s']:.1f} | {r['second_machine_s']:.1f} "
              f"| {r['second_machine_embedded']} | {r['auto']} | {r['knn']} | {r.get('recall', '-')} |")
    print("\nThe local cache searches in memory (exact cosine, BM25 in akasha); a server searches in its own engine.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
