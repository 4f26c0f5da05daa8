"""Ingest scaling: ``python -m bench.ingest_scaling [--docs 10000] [--batch 10] [--every 1000]``.

Builds a RAGPipeline (hash embeddings, memory backend, hybrid retrieval so BM25 is
built in the same ingestion) and ingests synthetic documents in small batches,
printing the time each block of ``--every`` documents took. Linear growth means
the per-block times stay flat; a rebuild per ingest (quadratic) would make them
climb with the index size. The last line compares the final block with the first.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from akasha.spec import build, load_spec

WORDS = (
    "pump bearing seal valve motor impeller shaft coupling vibration grease filter pressure flow "
    "temperature inspection maintenance failure report schedule operator alarm sensor calibration "
    "gasket flange corrosion leak torque alignment lubrication clearance wear noise current voltage"
).split()


def synthetic_documents(count: int, seed: int = 7) -> list[dict[str, object]]:
    """``count`` documents of ~60 words each with ids, so each is one chunk at chunk_size 500."""
    rng = random.Random(seed)
    docs = []
    for i in range(count):
        text = " ".join(rng.choice(WORDS) for _ in range(55)) + f" unit{i}."
        docs.append({"id": f"doc-{i:05d}", "text": text[:480], "metadata": {"n": i}})
    return docs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=10, help="documents per ingest() call")
    parser.add_argument("--every", type=int, default=1_000, help="report every N documents")
    args = parser.parse_args(argv)

    pipeline = build(load_spec({
        "kind": "RAGPipeline",
        "metadata": {"name": "ingest-scaling"},
        "spec": {
            "chunking": {"strategy": "recursive", "chunk_size": 500, "overlap": 50},
            "embeddings": {"provider": "hash"},
            "vector_store": {"backend": "memory"},
            "retrieval": {"pattern": "hybrid", "top_k": 5},
        },
    }))
    docs = synthetic_documents(args.docs)
    # Warm-up on a throwaway pipeline: imports (langchain splitter, numpy paths) are not ingest cost.
    warm = build(load_spec({"kind": "RAGPipeline", "metadata": {"name": "warm-up"},
                            "spec": {"embeddings": {"provider": "hash"}, "vector_store": {"backend": "memory"},
                                     "retrieval": {"pattern": "hybrid"}}}))
    warm.ingest_sync(synthetic_documents(20, seed=1))
    warm.query_sync("pump")
    warm.close()
    blocks: list[float] = []
    chunks = 0
    start = block_start = time.perf_counter()
    print(f"ingesting {args.docs} documents, {args.batch} per ingest() call, memory backend, hybrid (BM25 + vector)")
    print(f"{'documents':>10} {'block s':>9} {'ms/doc':>8} {'total s':>9}")
    for offset in range(0, len(docs), args.batch):
        chunks += pipeline.ingest_sync(docs[offset : offset + args.batch])
        done = offset + args.batch
        if done % args.every == 0 or done >= len(docs):
            now = time.perf_counter()
            block = now - block_start
            size = args.every if done % args.every == 0 else done % args.every
            blocks.append(block / size * args.every)
            print(f"{done:>10} {block:>9.3f} {1000 * block / size:>8.3f} {now - start:>9.3f}", flush=True)
            block_start = now
    total = time.perf_counter() - start
    query_start = time.perf_counter()
    result = pipeline.query_sync("pump bearing vibration alarm", k=5)
    query_ms = 1000 * (time.perf_counter() - query_start)
    ratio = blocks[-1] / blocks[0] if blocks and blocks[0] > 0 else float("nan")
    print(f"total {total:.2f} s for {args.docs} documents ({chunks} chunks); "
          f"last/first block time ratio {ratio:.2f} (1.0 = linear; quadratic would be ~{len(blocks) * 2 - 1:.0f})")
    print(f"one hybrid query over the full index: {query_ms:.1f} ms, {len(result.hits)} hits")
    pipeline.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
