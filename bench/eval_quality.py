"""Answer-finding quality on the Python FAQ set, per search type, plus an offline fusion study.

    apt-get update && apt-get install -y python3.11-doc    # once
    python -m bench.eval_quality                           # MiniLM embeddings (packaged, offline)

Builds the set with bench/build_eval_set.py if it is missing, indexes it once
with akasha (vectors cached under bench/.data/eval-cache, so a second run
embeds nothing), prints recall@1/5, MRR@10 and nDCG@10 per search_type, writes
bench/results/eval_quality.html, checks the issue's rule (auto >= max(bm25,
knn) - 0.005 on MRR@10) and then scores alternative fusions computed offline
from the bm25 and knn rankings the index returns (RRF with several k, weighted
RRF, min-max weighted sums), so a fusion change can be chosen on real data.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from bench.build_eval_set import OUT, build

RESULTS = Path(__file__).resolve().parent / "results"
log = logging.getLogger("bench.eval_quality")


class _Hit:
    """What the metrics need of a hit: its text and its file."""

    def __init__(self, chunk) -> None:
        self.text = chunk.text
        self.path = chunk.metadata.get("source")


def fusion_study(index, questions, folder: Path, depth: int = 50) -> list[tuple[str, float, float]]:
    """MRR@10, nDCG@10, recall@1/5 of alternative fusions of the index's bm25 and knn rankings.

    ``depth`` candidates per retriever, as the index's "auto" takes (SearchSettings.candidates),
    so "rrf k=60" here reproduces "auto" and the other rows are drop-in alternatives.
    """
    from akasha.evaluation.runner import evaluate_search
    from akasha.retrieval import fusion

    chunks = {c.id: c for c in index.chunks}
    rankings = {}
    for q in questions:
        bm25 = [(h.id, h.score) for h in index.search(q.question, k=depth, search_type="bm25")]
        knn = [(h.id, h.score) for h in index.search(q.question, k=depth, search_type="knn")]
        rankings[q.question] = (bm25, knn)

    variants = {"bm25 only": lambda b, v: b, "knn only": lambda b, v: v}
    for k in (1, 5, 10, 20, 30, 60, 100):
        variants[f"rrf k={k}"] = lambda b, v, k=k: fusion.rrf([b, v], k=k)
    for w in (0.3, 0.4, 0.6, 0.7):
        variants[f"rrf k=60 bm25 w={w}"] = lambda b, v, w=w: fusion.rrf([b, v], k=60, weights=[w, 1 - w])
        variants[f"rrf k=10 bm25 w={w}"] = lambda b, v, w=w: fusion.rrf([b, v], k=10, weights=[w, 1 - w])
    for w in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        variants[f"minmax bm25 w={w}"] = lambda b, v, w=w: fusion.weighted([b, v], [w, 1 - w])
    out = []
    for name, fuse in variants.items():
        def search(question, _type, _reranker, k, fuse=fuse):
            b, v = rankings[question]
            return [_Hit(chunks[item]) for item, _ in fuse(b, v)[:k]]

        row = evaluate_search(search, questions, search_types=[name], folder=folder).rows[0]
        out.append((name, row["mrr@10"], row["ndcg@10"], row["recall@1"], row["recall@5"]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embeddings", default="hf:all-MiniLM-L6-v2")
    parser.add_argument("--search-types", default="auto,bm25,knn,hybrid,mmr")
    parser.add_argument("--set", type=Path, default=OUT, help="evaluation set folder (built if missing)")
    parser.add_argument("--cache-dir", type=Path, default=OUT.parent / "eval-cache")
    parser.add_argument("--depth", type=int, default=50, help="candidates per retriever in the fusion study")
    parser.add_argument("--no-study", action="store_true", help="skip the offline fusion study")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    if not (args.set / "questions.jsonl").exists():
        log.info("building the evaluation set: %s", build(out=args.set))
    from akasha.embeddings import resolve_embedder
    from akasha.evaluation.relevance import load_questions
    from akasha.evaluation.report import write_html_report
    from akasha.evaluation.runner import evaluate_search
    from akasha.index import CorpusIndex

    folder = args.set / "corpus"
    questions = load_questions(args.set / "questions.jsonl")
    embedder = resolve_embedder(args.embeddings)
    index = CorpusIndex(embedder, chunk_size=1000, cache_dir=args.cache_dir)
    start = time.perf_counter()
    report = index.sync(folder, progress=False)
    log.info("indexed %s chunks in %.1f s (%s embedded)", len(index), time.perf_counter() - start, getattr(report, "embedded", "?"))

    def search(question, search_type, _reranker, k):
        return index.search(question, k=k, search_type=search_type)

    table = evaluate_search(search, questions, search_types=args.search_types.split(","), folder=folder)
    table.info = {"set": str(args.set), "embeddings": args.embeddings, "chunks": len(index), "chunk_size": 1000}
    print(f"\n### Python FAQ set: {len(questions)} questions, {len(index):,} chunks, {args.embeddings}\n")
    print(table.to_markdown())
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = write_html_report(table, RESULTS / "eval_quality.html")
    (RESULTS / "eval_quality.json").write_text(table.to_json())
    best_input = max(table.row("bm25")["mrr@10"], table.row("knn")["mrr@10"])
    auto = table.row("auto")["mrr@10"]
    verdict = "MET " if auto >= best_input - 0.005 else "MISS"
    print(f"\n{verdict} auto MRR@10 {auto:.4f} vs max(bm25, knn) {best_input:.4f} - 0.005 (margin {auto - best_input + 0.005:+.4f})")
    print(f"(report: {path})")
    if not args.no_study:
        print(f"\n### Offline fusion study (same bm25/knn rankings, top {args.depth} each)\n")
        print("| fusion | MRR@10 | nDCG@10 | recall@1 | recall@5 |\n|---|---|---|---|---|")
        study = fusion_study(index, questions, folder, args.depth)
        for name, mrr, ndcg, r1, r5 in study:
            print(f"| {name} | {mrr:.4f} | {ndcg:.4f} | {r1:.4f} | {r5:.4f} |")
        (RESULTS / "fusion_study.json").write_text(json.dumps(study, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
