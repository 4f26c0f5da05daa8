"""Fresh query workers on a shared index: ``python -m bench.server_worker [--chunks 20000,100000]``.

For each corpus size (``bench.corpus``: one ~900-character chunk per paragraph, 384-d
precomputed vectors from ``bench.server_index.PrecomputedEmbedder``), the corpus is
indexed once into PostgreSQL + pgvector (pgserver, started here) and into akasha's local
cache. Then, for each backend, a NEW Python process (a query worker: no corpus files, an
in-memory cache for the server, the indexed cache folder for the local store) runs
``rag.search(None, question, k=10)`` and reports:

* first result: seconds from the worker's start (before ``import akasha``) to its first hits;
* peak RSS of the worker (``VmHWM``: ``ru_maxrss`` would count the parent's peak before the fork);
* p50 / p95 of a full ``rag.search`` call (``auto``: hybrid, question embedding included);
* the vector side's recall@10 against exact cosine over all chunks (computed here, in numpy);
* whether a unique-token question (a word in exactly one chunk) and a dense question (a
  chunk's own text) rank their chunk first.

``--vectors real`` swaps the synthetic corpus for real text with real MiniLM vectors
(``bench.real_vectors``: paragraphs of the installed packages' text files, one chunk each with
``chunk_size=420``); the synthetic vectors crowd together and are a hard case for HNSW.

Run the worker alone with ``python -m bench.server_worker --worker URL_OR_CACHE --job FILE``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

STARTED = time.perf_counter()

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: A file added to the corpus for the run: its error code occurs in no other chunk.
NEEDLE_FILE = "needle-akasha.txt"
NEEDLE_WORD = "e4711x9"
NEEDLE_TEXT = f"Error code {NEEDLE_WORD.upper()} means the pressure relief valve stuck open during the test run."


def run_worker(target: str, queries_file: str) -> dict[str, object]:
    """The worker process: answer every question from the store as it is, and measure itself."""
    import akasha

    job = json.loads(Path(queries_file).read_text(encoding="utf-8"))
    embedder = _embedder(job["vectors"], job["size"])
    options = _options(job["vectors"])
    if target.startswith("postgresql://"):
        rag = akasha.RAG(embeddings=embedder, model="extractive", cache_dir=":memory:", vector_store=target, **options)
    else:
        rag = akasha.RAG(embeddings=embedder, model="extractive", cache_dir=target, **options)
    questions: list[str] = job["questions"]
    first = rag.search(None, questions[0], k=10)
    first_s = time.perf_counter() - STARTED
    times = []
    for question in questions:
        t0 = time.perf_counter()
        rag.search(None, question, k=10)
        times.append((time.perf_counter() - t0) * 1000)
    knn = {q: [h.chunk.id for h in rag.search(None, q, k=10, search_type="knn")] for q in job["recall_questions"]}
    unique = rag.search(None, job["unique_word"], k=10)
    dense = rag.search(None, job["dense_text"], k=10)
    return {
        "first_s": first_s, "first_hits": len(first),
        "rss_mib": _peak_rss_mib(),
        "p50_ms": statistics.median(times), "p95_ms": float(np.percentile(times, 95)),
        "knn": knn,
        "unique_first": bool(unique) and unique[0].chunk.id == job["unique_id"],
        "dense_first": bool(dense) and dense[0].chunk.id == job["dense_id"],
    }


def _embedder(vectors: str, size: int) -> object:
    """The embedder of a run: synthetic sums of word vectors, or the cached real MiniLM vectors."""
    if vectors == "real":
        from bench.real_vectors import LookupEmbedder

        return LookupEmbedder(size)
    from bench.server_index import PrecomputedEmbedder

    return PrecomputedEmbedder()


def _options(vectors: str) -> dict[str, object]:
    """RAG options of a run: a real corpus's paragraphs (210-400 characters) are one chunk each at 420."""
    return {"chunk_size": 420} if vectors == "real" else {}


def _peak_rss_mib() -> float:
    """This process's own peak RSS: VmHWM (``ru_maxrss`` would include the parent's peak before the fork)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _job(chunks: list[tuple[str, str]], questions: list[str], work: Path, vectors: str,
         size: int) -> tuple[Path, dict]:
    """The questions file a worker reads, and the exact knn answers to score its recall with."""
    from akasha.retrieval.tokenize import tokenize

    embedder = _embedder(vectors, size)
    ids = [cid for cid, _ in chunks]
    matrix = embedder.embed_documents([text for _, text in chunks])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    recall_questions = questions[:50]
    exact = {}
    for q in recall_questions:
        v = embedder.embed_query(q)
        v = v / np.linalg.norm(v)
        top = np.argsort(-(matrix @ v))[:10]
        exact[q] = [ids[i] for i in top]
    counts = Counter(t for _, text in chunks for t in set(tokenize(text)))
    unique_id = f"{NEEDLE_FILE}#0"
    unique_word = NEEDLE_WORD
    assert counts[unique_word] == 1, "the needle's word must occur in exactly one chunk"
    dense_id, dense_text = chunks[len(chunks) // 3]
    job = {"vectors": vectors, "size": size, "questions": questions, "recall_questions": recall_questions, "unique_word": unique_word,
           "unique_id": unique_id, "dense_text": dense_text, "dense_id": dense_id}
    path = work / "job.json"
    path.write_text(json.dumps(job), encoding="utf-8")
    return path, exact


def _worker(target: str, job: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run([sys.executable, "-m", "bench.server_worker", "--worker", target, "--job", str(job)],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=3600, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"worker failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="20000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--backends", default="pgvector,local")
    parser.add_argument("--vectors", choices=("synthetic", "real"), default="synthetic",
                        help="synthetic sums of word vectors (default) or real text with MiniLM vectors")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--job", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(run_worker(args.worker, args.job)))
        return 0
    logging.basicConfig(level=logging.WARNING)
    sys.path.insert(0, str(ROOT / "tests"))
    import akasha
    from bench.corpus import make_corpus
    from bench.real_vectors import load as load_real
    from servers_fixtures import PostgresServer

    work = Path(tempfile.mkdtemp(prefix="akworker", dir="/tmp"))
    work.chmod(0o755)
    server = None
    rows = []
    table_sizes: dict[int, dict[str, float]] = {}
    try:
        if "pgvector" in args.backends:
            server = PostgresServer(work / "pgdata").init().start()
        for size in [int(s) for s in args.chunks.split(",")]:
            if args.vectors == "real":
                real = load_real(size)
                root, questions = real.root, (real.questions * (args.queries // len(real.questions) + 1))[:args.queries]
            else:
                corpus = make_corpus(size, n_queries=args.queries)
                root, questions = corpus.root, corpus.queries
            needle = root / NEEDLE_FILE
            needle.write_text(NEEDLE_TEXT, encoding="utf-8")
            for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
                cache = work / f"{backend}-{size}"
                url = server.dsn(table=f"bench{size}") if backend == "pgvector" else None
                print(f"[{backend} {size}] indexing ...", file=sys.stderr, flush=True)
                started = time.perf_counter()
                rag = akasha.RAG(embeddings=_embedder(args.vectors, size), model="extractive", cache_dir=str(cache),
                                 vector_store=url, **_options(args.vectors))
                rag.index(str(root))
                index = rag.components.index(rag.options)
                chunks = [(c.id, c.text) for c in index.chunks]
                if args.vectors == "real" and len(chunks) != size + 1:  # each paragraph one chunk, plus the needle
                    raise SystemExit(f"expected {size + 1} chunks, got {len(chunks)}: paragraphs were split or merged")
                if backend == "pgvector":
                    index._link.store.ensure_ann_index()  # noqa: SLF001 - built once, as the first query would
                ingest_s = time.perf_counter() - started
                rag.close()
                sizes = _table_sizes(index._link.store) if backend == "pgvector" else {}  # noqa: SLF001
                job, exact = _job(chunks, questions, work, args.vectors, size)
                print(f"[{backend} {size}] fresh worker ...", file=sys.stderr, flush=True)
                result = _worker(url or str(cache), job)
                recall = float(np.mean([len(set(result["knn"][q]) & set(exact[q])) / 10 for q in exact]))
                rows.append((backend, size, ingest_s, result, recall))
                if sizes:
                    print(f"[pgvector {size}] bytes per chunk: " + ", ".join(
                        f"{k} {v / len(chunks):,.0f}" for k, v in sizes.items()), file=sys.stderr, flush=True)
                    table_sizes[size] = {k: v / len(chunks) for k, v in sizes.items()}
            needle.unlink()
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("\n| backend | chunks | indexing (s) | worker: first result (s) | worker peak RSS (MiB) "
          "| p50 / p95 rag.search (ms) | knn recall@10 vs exact | unique token first | dense first |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    for backend, size, ingest_s, r, recall in rows:
        print(f"| {backend} | {size:,} | {ingest_s:.0f} | {r['first_s']:.2f} | {r['rss_mib']:.0f} "
              f"| {r['p50_ms']:.1f} / {r['p95_ms']:.1f} | {recall:.3f} | {r['unique_first']} | {r['dense_first']} |")
    by = {(b, s): r for b, s, _i, r, _rc in rows}
    sizes = sorted({s for _b, s, *_ in rows})
    if ("pgvector", sizes[0]) in by and ("pgvector", sizes[-1]) in by and len(sizes) > 1:
        ratio = by[("pgvector", sizes[-1])]["rss_mib"] / by[("pgvector", sizes[0])]["rss_mib"]
        print(f"\npgvector worker peak RSS at {sizes[-1]:,} / at {sizes[0]:,}: {ratio:.2f}")
    for size, parts in table_sizes.items():
        print(f"pgvector bytes per chunk at {size:,}: " + ", ".join(f"{k} {v:,.0f}" for k, v in parts.items()))
    return 0


def _table_sizes(store: object) -> dict[str, int]:
    """Bytes of the chunk table (heap + TOAST), its HNSW index, its GIN index and its other indexes."""
    table = store.table  # type: ignore[attr-defined]

    def read(conn: object) -> dict[str, int]:
        run = conn.execute  # type: ignore[attr-defined]
        heap = run(f"SELECT pg_table_size('{table}')").fetchone()[0]
        found = dict(run("SELECT indexname, pg_relation_size(quote_ident(indexname)) FROM pg_indexes "
                         "WHERE tablename = %s", (table,)).fetchall())
        hnsw = sum(v for k, v in found.items() if k.endswith("_hnsw"))
        gin = sum(v for k, v in found.items() if k.endswith("_lexical_idx"))
        return {"table": heap, "hnsw": hnsw, "gin": gin, "other indexes": sum(found.values()) - hnsw - gin}

    return store._run("measuring", read)  # type: ignore[attr-defined]  # noqa: SLF001


if __name__ == "__main__":
    raise SystemExit(main())
