"""Identifier lookups: ``python -m bench.identifier_lookup [--sets docs,python-faq] [--queries 40]``.

Users search for error codes, option names and function names. For each corpus this takes
identifier-shaped strings (``snake_case``, ``CamelCase`` inside a word, ``dotted.names``)
that occur in exactly one chunk, asks each one alone as the question, and counts how often
that chunk comes first, per search type. The question's terms occur nowhere else, so a
lexical engine finds the chunk; a fusion that lets chunks only the dense side liked out-rank
it loses an exact match.

Corpora: ``docs`` (akasha's own docs/ folder) and ``python-faq`` (the Python FAQ among the
manuals, the set of ``bench.eval_quality``; its vectors are read from that benchmark's cache,
so run ``python -m bench.eval_quality --sets python-faq`` once first). Both are indexed with
the packaged MiniLM (offline). Prints a table; ``--json`` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / ".data"
SEARCH_TYPES = ("bm25", "knn", "hybrid", "auto")
#: snake_case, an inner capital (CamelCase, camelCase) or a dotted name; at least 6 characters.
IDENTIFIER = re.compile(r"(?<![\w.])(?=[\w.]{6,})(?:[A-Za-z]\w*_\w+|[A-Za-z]*[a-z][A-Z]\w*|[A-Z]{2,}[a-z]\w*"
                        r"|[A-Za-z_]\w*\.[A-Za-z_][\w.]*\w)(?!\w)(?!\.\w)")


def corpora() -> dict[str, tuple[Path, Path]]:
    """name -> (folder to index, cache folder)."""
    return {"docs": (ROOT / "docs", Path(tempfile.gettempdir()) / "akasha-identifier-docs"),
            "python-faq": (DATA / "python-faq" / "corpus", DATA / "eval-cache" / "python-faq")}


def questions(chunks: list, n: int, seed: int = 11) -> list[tuple[str, str]]:
    """Up to ``n`` (identifier, chunk id) pairs whose identifier occurs in exactly one chunk."""
    where: dict[str, set[str]] = defaultdict(set)
    for chunk in chunks:
        for word in IDENTIFIER.findall(chunk.text):
            where[word].add(chunk.id)
    texts = [c.text for c in chunks]
    unique = sorted(w for w, ids in where.items() if len(ids) == 1 and sum(w in t for t in texts) == 1)
    picked = random.Random(seed).sample(unique, min(n, len(unique)))
    return [(word, next(iter(where[word]))) for word in picked]


def measure(name: str, folder: Path, cache: Path, n: int, embeddings: str) -> dict[str, object]:
    import akasha

    rag = akasha.RAG(model="extractive", embeddings=embeddings, chunk_size=1000, cache_dir=cache)
    rag.index(folder)
    chunks = list(rag.components.index(rag.options).chunks)
    asked = questions(chunks, n)
    firsts = {}
    for search_type in SEARCH_TYPES:
        right = 0
        for word, chunk_id in asked:
            hits = rag.search(folder, word, k=5, search_type=search_type)
            right += bool(hits) and hits[0].chunk.id == chunk_id
        firsts[search_type] = right
    rag.close()
    return {"set": name, "chunks": len(chunks), "questions": len(asked), "first": firsts,
            "examples": [w for w, _ in asked[:8]]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="docs,python-faq")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--embeddings", default="hf:all-MiniLM-L6-v2")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    known = corpora()
    rows = [measure(name, *known[name], args.queries, args.embeddings) for name in args.sets.split(",")]
    print("| set | chunks | questions | " + " | ".join(f"{t} first" for t in SEARCH_TYPES) + " |")
    print("|---|---:|---:|" + "---:|" * len(SEARCH_TYPES))
    for row in rows:
        firsts = row["first"]
        print(f"| {row['set']} | {row['chunks']:,} | {row['questions']} | "
              + " | ".join(str(firsts[t]) for t in SEARCH_TYPES) + " |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
