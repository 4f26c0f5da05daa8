"""What passage vectors cost: ``search()`` p50 with and without them, indexing time and bytes stored.

    python -m bench.passage_cost [--sizes 2000,20000] [--queries 300] [--chunks 300] [--rounds 3]

Query side, per size: random unit chunk vectors (384 dimensions) with 27 random passage vectors
each (a full MiniLM chunk has 27 sixteen-token windows), short random texts, an index in memory
(BM25 + dense), then ``auto`` searches with the passages and without them, interleaved query by
query so both see the same load. The question vector is given: embedding the question (20-100 ms
with MiniLM) is not counted, so the ratio is of the search alone (issue target: query latency at
20k chunks within 2x).

Indexing side: ``CorpusIndex.sync`` of ``--chunks`` files of about 1,000 characters (as
``bench.cold_start``) with the packaged MiniLM into a fresh cache folder on disk, with passages
(the default) and with ``SearchSettings(passage_fetch=0)``, alternating for ``--rounds`` rounds
in one process (the model loaded once before): median seconds, their ratio (target within
1.5x), and the bytes of the cache folder (SQLite manifest + snapshot) each way.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

WINDOWS_PER_CHUNK = 27


def query_cost(n: int, queries: int) -> dict[str, float]:
    from akasha.embeddings.base import normalize_rows
    from akasha.retrieval.bm25 import BM25Index
    from akasha.retrieval.dense import DenseIndex
    from akasha.retrieval.passages import pack
    from akasha.retrieval.search import SearchSettings, search
    from akasha.types import Chunk
    from bench.hub_cost import interleaved_p50_ms

    rng = np.random.default_rng(n)
    words = [f"w{i}" for i in range(5000)]
    ids = [f"doc{i // 8}.txt#{i % 8}" for i in range(n)]
    texts = [" ".join(rng.choice(words, 60)) for _ in range(n)]
    vectors = normalize_rows(rng.normal(size=(n, 384)).astype(np.float32))
    packed = [pack(normalize_rows(rng.normal(size=(WINDOWS_PER_CHUNK, 384)).astype(np.float32))) for _ in range(n)]
    bm25 = BM25Index(tokenizer="auto")
    bm25.add(ids, texts)
    dense = DenseIndex()
    dense.add(ids, vectors, packed)
    dense.hubs()
    chunks = {i: Chunk(i, t, {"source": i.split("#")[0]}) for i, t in zip(ids, texts, strict=True)}
    settings = SearchSettings()
    on, off = interleaved_p50_ms(queries, texts, rng, lambda name, question, vector: search(
        question, vector, 10, "auto", bm25=bm25, dense=dense, chunks=chunks, settings=settings,
        passages=dense.passage_scores if name == "on" else None))
    return {"chunks": n, "on_ms": on, "off_ms": off, "ratio": on / off,
            "passage_mb": sum(len(p) for p in packed) / 1e6, "vector_mb": vectors.nbytes / 1e6}


def question_ms(questions: int = 60) -> float:
    """p50 milliseconds of embedding a question with the packaged MiniLM (each question new, so none is cached)."""
    from akasha.embeddings import resolve_embedder

    embedder = resolve_embedder("hf:all-MiniLM-L6-v2")
    embedder.embed_query("warm up the encoder once")
    times = []
    for n in range(questions):
        start = time.perf_counter()
        embedder.embed_query(f"How often must pump P-{100 + n} be serviced after a seal failure?")
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def indexing_cost(chunks: int, rounds: int) -> dict[str, float]:
    from akasha.embeddings import resolve_embedder
    from akasha.index import CorpusIndex
    from akasha.retrieval.search import SearchSettings
    from bench.cold_start import write_corpus

    embedder = resolve_embedder("hf:all-MiniLM-L6-v2")
    embedder.embed_documents(["warm up the encoder once, so neither side pays for loading it"] * 40)
    with tempfile.TemporaryDirectory() as work:
        corpus = Path(work) / "corpus"
        write_corpus(corpus, chunks)
        seconds: dict[str, list[float]] = {"on": [], "off": []}
        stored: dict[str, int] = {}
        for r in range(rounds):
            for name in (("on", "off") if r % 2 else ("off", "on")):
                cache = Path(work) / f"cache-{name}-{r}"
                settings = SearchSettings() if name == "on" else SearchSettings(passage_fetch=0)
                start = time.perf_counter()
                index = CorpusIndex(embedder, cache_dir=cache, search_settings=settings)
                report = index.sync(corpus)
                index.close()
                seconds[name].append(time.perf_counter() - start)
                assert report.embedded == chunks, report
                stored[name] = _bytes(cache)
    on, off = statistics.median(seconds["on"]), statistics.median(seconds["off"])
    return {"chunks": chunks, "on_s": on, "off_s": off, "ratio": on / off,
            "on_bytes": stored["on"], "off_bytes": stored["off"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,20000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print("| chunks | search() p50 with passages | without | ratio (target <= 2x at 20k) "
          "| passage bytes | chunk-vector bytes |")
    print("|---|---|---|---|---|---|")
    rows = [query_cost(int(size), args.queries) for size in args.sizes.split(",")]
    for r in rows:
        print(f"| {r['chunks']:,} | {r['on_ms']:.2f} ms | {r['off_ms']:.2f} ms | {r['ratio']:.2f}x "
              f"| {r['passage_mb']:.0f} MB | {r['vector_mb']:.0f} MB |")
    embed = question_ms()
    print()
    print(f"Embedding the question (MiniLM, p50): {embed:.1f} ms; a whole query (question embedded, then "
          "searched) with passages / without:")
    for r in rows:
        print(f"- {r['chunks']:,} chunks: {embed + r['on_ms']:.1f} / {embed + r['off_ms']:.1f} ms = "
              f"{(embed + r['on_ms']) / (embed + r['off_ms']):.2f}x")
    if args.chunks:
        r = indexing_cost(args.chunks, args.rounds)
        print()
        print("| chunks indexed (MiniLM) | with passages | without | ratio (target <= 1.5x) "
              "| cache folder with | without |")
        print("|---|---|---|---|---|---|")
        print(f"| {r['chunks']} | {r['on_s']:.2f} s | {r['off_s']:.2f} s | {r['ratio']:.2f}x "
              f"| {r['on_bytes'] / 1e6:.1f} MB | {r['off_bytes'] / 1e6:.1f} MB |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
