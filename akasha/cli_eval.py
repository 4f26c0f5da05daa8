"""The akasha eval subcommand: retrieval quality of a folder against a JSONL of questions.

``akasha eval DOCS QUESTIONS.jsonl --search-types auto,bm25,knn --embeddings hf:all-MiniLM-L6-v2 --report eval.html``
prints recall@1, recall@5, MRR@10 and nDCG@10 per search type and reranker, and, for
questions with a reference ``answer``, answer@80 (share of replies of ``--model``, default
the offline ``extractive`` answerer, that quote 80 characters of the reference) and the
replies' mean length (answer_chars); ``--no-answers`` skips them.
:func:`add_parser` registers it on the main CLI's subparsers; :func:`main`
runs it standalone (``python -m akasha.cli_eval``).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from akasha.errors import AkashaError


def _names(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def configure(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the eval arguments to ``parser`` and set its handler to :func:`run`."""
    parser.add_argument("data_source", help="folder (or file) of documents to index")
    parser.add_argument("questions", help='JSONL: {"question": ..., "relevant_sources": [...]} and/or "answer"')
    parser.add_argument("--search-types", type=_names, default=["auto", "bm25", "knn"],
                        help="comma-separated (default auto,bm25,knn)")
    parser.add_argument("--rerankers", type=_names, default=["none"],
                        help="comma-separated reranker names; 'none' = no reranking")
    parser.add_argument("--reranker-model", default=None,
                        help="chat model of the 'llm' reranker (e.g. openai:gpt-4o-mini)")
    parser.add_argument(
        "--embeddings", default=None,
        help="embedding model string (default: hf:all-MiniLM-L6-v2 when the packaged model is installed, else hash)",
    )
    parser.add_argument("-k", type=int, default=10, help="results per question (>= 10)")
    parser.add_argument("--chunk-size", type=int, default=1000, help="chunk size in characters (default 1000)")
    parser.add_argument("--cache-dir", default=":memory:", help="index cache folder (default: in memory)")
    parser.add_argument("--model", default="extractive",
                        help="answer model for answer@80 and answer_chars (default extractive, offline)")
    parser.add_argument("--no-answers", action="store_true", help="retrieval metrics only: do not answer the questions")
    parser.add_argument("--report", help="write an HTML report with a plot to this path")
    parser.add_argument("--metric", default="mrr@10", help="metric highlighted in the report")
    parser.add_argument(
        "--format", choices=["text", "markdown", "json"], default="text",
        help="how the table is printed: text, markdown or json (default text)",
    )
    parser.set_defaults(handler=run)
    return parser


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``eval`` on the main CLI's subparsers."""
    parser = subparsers.add_parser("eval", help="measure retrieval quality (recall, MRR, nDCG)",
                                   description=__doc__.splitlines()[0])
    return configure(parser)


def run(args: argparse.Namespace) -> int:
    """Run the evaluation described by parsed ``args``; print the table; return the exit code."""
    from akasha.cli import offline_embeddings
    from akasha.evaluation.runner import evaluate

    try:
        table = evaluate(
            args.data_source,
            args.questions,
            search_types=args.search_types,
            rerankers=[None if r == "none" else r for r in args.rerankers],
            embeddings=args.embeddings or offline_embeddings(),
            k=args.k,
            chunk_size=args.chunk_size,
            cache_dir=args.cache_dir,
            reranker_model=args.reranker_model,
            report=args.report,
            metric=args.metric,
            model=args.model,
            answers=not args.no_answers,
        )
    except (AkashaError, ValueError, FileNotFoundError, KeyError) as error:
        print(f"akasha eval: error: {error}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(table.to_json())
    elif args.format == "markdown":
        print(table.to_markdown())
    else:
        print(table)
    if args.report:
        print(f"report written to {args.report}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = configure(argparse.ArgumentParser(prog="akasha eval", description=__doc__.splitlines()[0]))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
