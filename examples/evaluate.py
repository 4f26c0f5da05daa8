"""Measure how well each search type finds the answers: recall, MRR and nDCG.

Run it from the repository root:

    python examples/evaluate.py

It indexes examples/docs once and runs the questions in examples/questions.jsonl
(one JSON object per line: ``question``, plus ``relevant_sources`` and/or a
reference ``answer``) through each search type, then prints recall@1, recall@5,
MRR@10 and nDCG@10 per configuration and writes an HTML report with a chart.
The same runs from the shell:

    akasha eval examples/docs examples/questions.jsonl --embeddings hf:all-MiniLM-L6-v2 --report eval.html

Use your own folder and questions to choose ``search_type``, ``chunk_size`` and a
reranker on data that looks like yours, instead of guessing.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from akasha.evaluation import evaluate

HERE = Path(__file__).resolve().parent


def main() -> None:
    report = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "eval.html"
    table = evaluate(
        HERE / "docs",
        HERE / "questions.jsonl",
        search_types=["auto", "bm25", "knn", "mmr"],
        embeddings="hf:all-MiniLM-L6-v2",
        chunk_size=1000,
        report=report,
    )
    print(table)
    best = table.best("mrr@10")
    print(f"\nbest by MRR@10: search_type={best['search_type']!r} (mrr@10={best['mrr@10']:.3f})")
    print(f"HTML report: {report}")

    assert table.questions == 8
    assert report.is_file() and report.stat().st_size > 0
    assert table.row("auto")["recall@5"] >= 0.5, "hybrid search should find most answers in the top 5"


if __name__ == "__main__":
    main()
