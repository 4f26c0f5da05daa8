"""Passage-vector study: which windows of the encoder's hidden states help ``auto`` rank, on every question set.

    python -m bench.passage_study                                   # every set, every variant
    python -m bench.passage_study --sets debian-faq-en --variants "auto,16/8 int8 fetch 200"

For every set it opens the index ``bench.eval_quality`` builds (bench/.data/eval-cache/<set>),
runs every chunk once more through the packaged MiniLM's onnxruntime encoder to get its last
hidden states, and pools them into passage vectors for each window shape (cached in
bench/.data/passage-study/<set>.npz). Each variant then ranks every question the way ``auto``
does (dense candidates, hub discount 0.5, adaptive RRF, neighbour smoothing 0.1) with the dense
candidates re-scored by ``max(chunk cosine, best passage cosine)``, and is scored with the
relevance rule of ``akasha eval`` (recall@1/5, MRR@10, nDCG@10). This is how
:mod:`akasha.retrieval.passages` chose 16-token windows every 8 tokens, int8 storage and 200
re-scored candidates (docs/quality.md, "Passage vectors").
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
from pathlib import Path

import numpy as np

from bench.retrieval_study import DATA, RESULTS, Context, bm25_list, open_set, score

log = logging.getLogger("bench.passage_study")
#: Window shapes (tokens, stride) pooled from each chunk's hidden states; "sentences" cuts at sentence ends.
SHAPES: tuple[tuple[int, int] | str, ...] = ((8, 4), (12, 6), (16, 8), (16, 16), (20, 10), (24, 12), (32, 16),
                                             (48, 24), (64, 32), (128, 64), "sentences")
_SENTENCE_END = re.compile(r"(?<=[.!?:;。！？])\s*|\n\s*\n")


def _shape_name(shape: tuple[int, int] | str) -> str:
    return shape if isinstance(shape, str) else f"{shape[0]}/{shape[1]}"


def _sentence_bounds(text: str, offsets: list[tuple[int, int]], n: int) -> list[tuple[int, int]]:
    """Token ranges of ``text``'s sentences among its ``n`` tokens (special tokens join their neighbours)."""
    ends = {m.end() for m in _SENTENCE_END.finditer(text) if 0 < m.end() < len(text)}
    cuts = [0]
    for position in range(1, n - 1):
        start = offsets[position][0]
        if offsets[position] != (0, 0) and any(offsets[position - 1][1] <= e <= start for e in ends):
            cuts.append(position)
    cuts.append(n)
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def passage_matrices(ctx: Context) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per window shape: (unit passage vectors stacked, owning row of each), cached per set."""
    from akasha.embeddings.bert_onnx import OnnxBertEncoder
    from akasha.embeddings.local import packaged_model_dir
    from akasha.retrieval.passages import window_vectors

    path = DATA / "passage-study" / f"{ctx.name}.npz"
    names = [_shape_name(s) for s in SHAPES]
    if path.exists():
        stored = dict(np.load(path))
        if all(f"{n}:vectors" in stored for n in names):
            return {n: (stored[f"{n}:vectors"], stored[f"{n}:owner"]) for n in names}
    log.info("%s: pooling passages of %d chunks", ctx.name, len(ctx.ids))
    encoder = OnnxBertEncoder(packaged_model_dir())
    texts = [ctx.chunks[c].text for c in ctx.ids]
    encodings = encoder.folder.tokenizer.encode_batch(texts)
    parts: dict[str, list[np.ndarray]] = {n: [] for n in names}
    owners: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for rows, ids, types, mask in encoder.folder.batches(texts, 32):
        hidden = encoder._forward(ids, types, mask)
        for position, row in enumerate(rows):
            n = int(mask[position].sum())
            states = hidden[position, :n]
            for shape, name in zip(SHAPES, names, strict=True):
                if isinstance(shape, str):
                    bounds = _sentence_bounds(texts[row], encodings[row].offsets, n)
                    pooled = np.stack([states[a:b].mean(axis=0) for a, b in bounds])
                    vectors = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
                else:
                    vectors = window_vectors(states, *shape)
                parts[name].append(vectors)
                owners[name].append(np.full(len(vectors), row))
    out = {n: (np.concatenate(parts[n]).astype(np.float32), np.concatenate(owners[n])) for n in names}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **{f"{n}:{k}": v for n, (vec, own) in out.items() for k, v in (("vectors", vec), ("owner", own))})
    return out


def _int8(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` after akasha's int8 storage (:func:`akasha.retrieval.passages.pack`), as float32."""
    from akasha.retrieval.passages import pack, unpack

    codes, scales = unpack(pack(vectors), vectors.shape[1])
    return codes.astype(np.float32) * scales[:, None]


def variants() -> dict[str, dict]:
    """Variant name -> settings: window shape (None: no passages), candidates re-scored, int8, hub weight."""
    out: dict[str, dict] = {"auto": {"shape": None}}
    for shape in SHAPES:
        out[f"{_shape_name(shape)} fetch all"] = {"shape": _shape_name(shape), "fetch": None}
    for fetch in (50, 100, 200):
        out[f"16/8 int8 fetch {fetch}"] = {"shape": "16/8", "fetch": fetch, "int8": True}
    for hub in (0.0, 0.3, 0.7):
        out[f"16/8 int8 fetch 200 hub {hub}"] = {"shape": "16/8", "fetch": 200, "int8": True, "hub": hub}
    return out


def ranker(ctx: Context, passages: dict[str, tuple[np.ndarray, np.ndarray]], shape: str | None = None,
           fetch: int | None = 200, int8: bool = False, hub: float = 0.5):
    from akasha.retrieval import fusion
    from akasha.retrieval.hubness import hub_scores

    hubs = ctx.__dict__.get("_hubs5")
    if hubs is None:
        hubs = ctx.__dict__["_hubs5"] = hub_scores(ctx.matrix, 5)
    if shape is not None:
        vectors, owner = passages[shape]
        vectors = _int8(vectors) if int8 else vectors

    def run(_ctx, qi):
        question, qvec = ctx.questions[qi].question, ctx.qvecs[qi]
        dense = ctx.matrix @ qvec
        if shape is not None:
            best = np.full(len(ctx.ids), -np.inf, dtype=np.float32)
            np.maximum.at(best, owner, vectors @ qvec)
            merged = np.maximum(dense, best)
            if fetch is not None:  # only the best chunk cosines are re-scored
                keep = np.argsort(-dense, kind="stable")[:fetch]
                limited = np.full_like(dense, -np.inf)
                limited[keep] = merged[keep]
                merged = limited
            dense = merged
        order = np.argsort(-dense, kind="stable")[:50]
        discounted = sorted(((ctx.ids[i], float(dense[i] - hub * hubs[i])) for i in order), key=lambda p: -p[1])
        tids, qtf = ctx.bm25._query_terms(question)
        fused = fusion.adaptive(question, discounted, bm25_list(ctx, tids, qtf), len(ctx.ids))
        return [i for i, _ in fusion.smooth_neighbours(fused, 0.1)]
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="debian-faq-en,python-faq,debian-faq-zh-cn,debian-faq-ja")
    parser.add_argument("--variants", default="", help="comma-separated names (default: all)")
    parser.add_argument("--out", type=Path, default=RESULTS / "passage_study.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    from akasha.embeddings import resolve_embedder

    embedder = resolve_embedder("hf:all-MiniLM-L6-v2")
    every = variants()
    wanted = args.variants.split(",") if args.variants else list(every)
    unknown = [w for w in wanted if w not in every]
    if unknown:
        raise SystemExit(f"unknown variant(s) {unknown}; known: {', '.join(every)}")
    sets = args.sets.split(",")
    table: dict[str, dict[str, dict[str, float]]] = {}
    for name in sets:
        ctx = open_set(name, embedder)
        passages = passage_matrices(ctx)
        memo: dict = {}
        for variant in wanted:
            start = time.perf_counter()
            table.setdefault(variant, {})[name] = score(ctx, ranker(ctx, passages, **every[variant]), memo)
            log.info("%s %s: %s (%.1f s)", name, variant,
                     " ".join(f"{m} {v:.3f}" for m, v in table[variant][name].items()), time.perf_counter() - start)
    print("| variant | " + " | ".join(f"{s} R@1 / R@5 / MRR@10" for s in sets) + " |")
    print("|---|" + "---|" * len(sets))
    for variant, per_set in table.items():
        print(f"| {variant} | " + " | ".join(
            f"{per_set[s]['recall@1']:.3f} / {per_set[s]['recall@5']:.3f} / {per_set[s]['mrr@10']:.3f}"
            for s in sets) + " |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(table, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
