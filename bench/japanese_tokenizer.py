"""Japanese words for BM25: a morphological analyzer against character pairs, on the Japanese quality sets.

    pip install fugashi unidic-lite            # MeCab with UniDic
    pip install sudachipy sudachidict-core     # optional: Sudachi, for comparison
    python -m bench.japanese_tokenizer [--sets debian-faq-ja,debian-reference-ja]

Ranks every question of each set by BM25 alone over the set's chunks (the chunks of
:mod:`bench.eval_quality`'s cache, so run that benchmark once first) with each way of cutting a
run of Japanese text (a run of CJK characters holding kana) into terms, and prints recall@5 and
MRR@10. Chinese runs (no kana) are cut as akasha cuts them in every row. The rows:

* ``jieba + pairs``: what akasha did before the ``ja`` extra (rjieba's words, which split kana to
  single characters, and every character pair);
* ``pairs``: character bigrams alone;
* ``fugashi``: MeCab's words (UniDic, unidic-lite), punctuation dropped;
* ``fugashi + pairs``: MeCab's words and every character pair;
* ``sudachi A`` / ``sudachi A + pairs``: Sudachi's shortest units (sudachidict-core).

Measured (docs/quality.md, "Japanese words"): neither analyzer beat akasha's cut on either set,
so akasha ships none (installed, unidic-lite takes 249 MB and sudachidict-core 193 MB).
"""

from __future__ import annotations

import argparse
import functools
import logging
import re
import sys
from collections.abc import Callable

log = logging.getLogger("bench.japanese_tokenizer")


def _pairs(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


_KANA = re.compile(r"[\u3040-\u30ff]")


@functools.lru_cache(maxsize=1)
def _mecab() -> Callable[[str], list[str]]:
    import fugashi

    tagger = fugashi.Tagger()
    return lambda run: [w.surface for w in tagger(run) if w.feature.pos1 != "補助記号" and w.surface.strip()]


@functools.lru_cache(maxsize=1)
def _sudachi() -> Callable[[str], list[str]]:
    from sudachipy import Dictionary, SplitMode

    tokenizer = Dictionary(dict="core").create(SplitMode.A)  # create() warns in sudachipy 0.7; same tokens
    return lambda run: [m.surface() for m in tokenizer.tokenize(run)]


def cutters() -> dict[str, Callable[[str], list[str]] | None]:
    """name -> a function cutting one Japanese run into terms (None: akasha's own cut)."""
    from akasha.retrieval import tokenize as tk

    def fugashi(run: str) -> list[str]:
        return _mecab()(run)

    def with_pairs(words: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
        def cut(run: str) -> list[str]:
            found = words(run)
            return found + [p for p in _pairs(run) if p not in found]
        return cut

    real = tk._cjk_tokens  # bound now: measure() patches the module's name

    def jieba_pairs(run: str) -> list[str]:
        return real(run, True)

    out: dict[str, Callable[[str], list[str]] | None] = {
        "jieba + pairs": jieba_pairs, "pairs": _pairs, "fugashi": fugashi, "fugashi + pairs": with_pairs(fugashi)}
    try:
        _sudachi()
        out["sudachi A"] = lambda run: _sudachi()(run)
        out["sudachi A + pairs"] = with_pairs(lambda run: _sudachi()(run))
    except ImportError:
        log.info("sudachipy or sudachidict-core not installed: no Sudachi rows")
    return out


def measure(name: str, cut: Callable[[str], list[str]]) -> dict[str, float]:
    """BM25 recall@5 and MRR@10 on one set with Japanese runs cut by ``cut``."""
    from akasha.embeddings import resolve_embedder
    from akasha.evaluation.relevance import load_questions
    from akasha.evaluation.runner import evaluate_search
    from akasha.index import CorpusIndex
    from akasha.retrieval import tokenize as tk
    from akasha.retrieval.bm25 import BM25Index
    from bench.eval_quality import _Hit, _set_paths

    folder, questions_file, cache = _set_paths(name)
    with CorpusIndex(resolve_embedder("hf:all-MiniLM-L6-v2"), chunk_size=1000, cache_dir=cache) as index:
        index.sync(folder, progress=False, lexical=True)
        chunks = {c.id: c for c in index.chunks}
    real = tk._cjk_tokens

    def patched(run: str, use_jieba: bool) -> list[str]:
        return cut(run) if _KANA.search(run) else real(run, use_jieba)

    tk._cjk_tokens = patched
    try:
        bm25 = BM25Index(tokenizer="jieba")
        bm25.add(list(chunks), [c.text for c in chunks.values()])

        def search(question, _type, _reranker, k):
            return [_Hit(chunks[i]) for i, _ in bm25.search(question, k)]

        row = evaluate_search(search, load_questions(questions_file), search_types=["bm25"], folder=folder).rows[0]
    finally:
        tk._cjk_tokens = real
    return {"recall@5": row["recall@5"], "mrr@10": row["mrr@10"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="debian-faq-ja,debian-reference-ja")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    sets = args.sets.split(",")
    rows = {label: [measure(name, cut) for name in sets] for label, cut in cutters().items()}
    print("| Japanese runs cut into | " + " | ".join(f"{s} R@5 / MRR@10" for s in sets) + " |")
    print("|---|" + "---|" * len(sets))
    for label, figures in rows.items():
        print(f"| {label} | " + " | ".join(f"{f['recall@5']:.4f} / {f['mrr@10']:.4f}" for f in figures) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
