"""Query-side retrieval study: pseudo-relevance feedback, document priors, neighbour smoothing, fusion settings.

    python -m bench.retrieval_study                       # every set, every variant
    python -m bench.retrieval_study --sets debian-faq-en --variants auto,dprf-a0.5-m5

For every question set it opens the index ``bench.eval_quality`` builds (vectors cached in
bench/.data/eval-cache/<set>, so nothing is embedded twice; question vectors are cached in
bench/.data/retrieval-study/), scores every question once against every chunk with MiniLM
and with BM25, and then ranks the chunks by each variant of :func:`variants` from those
scores alone: nothing in the index changes, so each variant costs milliseconds per
question and every variant is scored on all four sets at once (recall@1/5, MRR@10, nDCG@10
with the relevance rule of ``akasha eval``). This is how the query-side changes of
docs/quality.md were chosen.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / ".data"
RESULTS = Path(__file__).resolve().parent / "results"
log = logging.getLogger("bench.retrieval_study")
DEPTH = 50


@dataclass
class Context:
    """One set's chunks, vectors, BM25 index and question vectors."""

    name: str
    ids: list[str]
    chunks: dict
    matrix: np.ndarray  # (n, d), normalised, aligned with ids
    bm25: object
    questions: list
    qvecs: np.ndarray  # (q, d)
    folder: Path
    prev: np.ndarray  # row of the previous chunk of the same document, or -1
    next: np.ndarray
    doc_of: np.ndarray  # document number of each row
    doc_matrix: np.ndarray  # (documents, d) normalised mean of each document's chunk vectors
    row: dict  # chunk id -> row
    embedder: object = None  # the MiniLM that embedded the questions (for variants that embed other query texts)

    def rewritten_vectors(self, rewrite: Callable[[str], str], tag: str) -> np.ndarray:
        """Normalised vectors of every question after ``rewrite``, embedded once per ``tag``."""
        key = f"_rewritten_{tag}"
        cached = self.__dict__.get(key)
        if cached is None:
            vectors = np.stack([np.asarray(self.embedder.embed_query(rewrite(q.question)), dtype=np.float32)
                                for q in self.questions])
            cached = self.__dict__[key] = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return cached

    def passages(self, size: int, overlap: int) -> tuple:
        """(BM25 over windows of every chunk, window id -> chunk row), built once per (size, overlap)."""
        key = f"_passages_{size}_{overlap}"
        cached = self.__dict__.get(key)
        if cached is None:
            from akasha.chunking import split_text
            from akasha.retrieval.bm25 import BM25Index

            ids, texts, owner = [], [], {}
            for row, cid in enumerate(self.ids):
                text = self.chunks[cid].text
                for n, window in enumerate(split_text(text, size, overlap) if len(text) > size else [text]):
                    wid = f"{cid}@{n}"
                    ids.append(wid)
                    texts.append(window)
                    owner[wid] = row
            bm25 = BM25Index(tokenizer="auto")
            bm25.add(ids, texts)
            cached = self.__dict__[key] = (bm25, owner)
        return cached

    def stemmed(self) -> Context:
        """The same set with a BM25 index that stems English words (``BM25Index(stem=True)``), built once."""
        cached = self.__dict__.get("_stemmed")
        if cached is None:
            from dataclasses import replace

            from akasha.retrieval.bm25 import BM25Index

            bm25 = BM25Index(tokenizer="auto", stem=True)
            bm25.add(self.ids, [self.chunks[i].text for i in self.ids])
            cached = self.__dict__["_stemmed"] = replace(self, bm25=bm25)
        return cached


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def open_set(name: str, embedder) -> Context:
    from akasha.evaluation.relevance import load_questions
    from akasha.index import CorpusIndex
    from bench.eval_quality import _set_paths

    folder, questions_file, cache = _set_paths(name)
    index = CorpusIndex(embedder, chunk_size=1000, cache_dir=cache)
    index.sync(folder, progress=False)
    dense, bm25 = index._dense, index._bm25
    ids = dense.ids
    matrix = np.array(dense.matrix(), dtype=np.float32)
    chunks = {c.id: c for c in index.chunks}
    index.close()
    questions = load_questions(questions_file)
    qcache = DATA / "retrieval-study" / f"{name}-queries.npz"
    qcache.parent.mkdir(parents=True, exist_ok=True)
    have = dict(np.load(qcache)) if qcache.exists() else {}
    keys = [_sha(embedder.name + "\0" + q.question) for q in questions]
    missing = [(k, q.question) for k, q in zip(keys, questions, strict=True) if k not in have]
    if missing:
        log.info("%s: embedding %d questions", name, len(missing))
        for k, text in missing:
            have[k] = np.asarray(embedder.embed_query(text), dtype=np.float32)
        np.savez(qcache, **have)
    qvecs = np.stack([have[k] for k in keys])
    qvecs /= np.maximum(np.linalg.norm(qvecs, axis=1, keepdims=True), 1e-12)
    row = {cid: i for i, cid in enumerate(ids)}
    doc_names = [cid.rsplit("#", 1)[0] for cid in ids]
    numbers = {d: i for i, d in enumerate(dict.fromkeys(doc_names))}
    doc_of = np.asarray([numbers[d] for d in doc_names])
    prev = np.full(len(ids), -1)
    nxt = np.full(len(ids), -1)
    for i, cid in enumerate(ids):
        doc, n = cid.rsplit("#", 1)
        p, q = f"{doc}#{int(n) - 1}", f"{doc}#{int(n) + 1}"
        prev[i] = row.get(p, -1)
        nxt[i] = row.get(q, -1)
    doc_matrix = np.zeros((len(numbers), matrix.shape[1]), dtype=np.float32)
    np.add.at(doc_matrix, doc_of, matrix)
    doc_matrix /= np.maximum(np.linalg.norm(doc_matrix, axis=1, keepdims=True), 1e-12)
    return Context(name, ids, chunks, matrix, bm25, questions, qvecs, folder, prev, nxt, doc_of, doc_matrix, row,
                   embedder)


# ------------------------------------------------------------------ building blocks

def top(scores: np.ndarray, ids: list[str], depth: int = DEPTH) -> list[tuple[str, float]]:
    order = np.argsort(-scores, kind="stable")[:depth]
    return [(ids[i], float(scores[i])) for i in order]


def bm25_full(ctx: Context, tids: np.ndarray, qtf: np.ndarray) -> np.ndarray:
    """BM25 score of every row (aligned with ctx.ids) for weighted query terms."""
    bm = ctx.bm25
    slots, scores = bm._score_terms(tids, qtf)
    out = np.zeros(len(ctx.ids), dtype=np.float32)
    if len(slots):
        slot_ids = bm.slot_ids(slots.tolist())
        row = ctx.row
        for cid, s in zip(slot_ids, scores.tolist(), strict=True):
            out[row[cid]] = s
    return out


def bm25_list(ctx: Context, tids: np.ndarray, qtf: np.ndarray) -> list[tuple[str, float]]:
    scores = bm25_full(ctx, tids, qtf)
    order = np.argsort(-scores, kind="stable")[:DEPTH]
    return [(ctx.ids[i], float(scores[i])) for i in order if scores[i] > 0]


def rm3_terms(ctx: Context, feedback: list[str], tids: np.ndarray, n_terms: int) -> tuple[np.ndarray, np.ndarray]:
    """Expansion terms from the feedback chunks: relative term frequency x idf, summed, best ``n_terms``."""
    bm = ctx.bm25
    weights: dict[int, float] = {}
    n = len(ctx.ids)
    own = set(tids.tolist())
    for cid in feedback:
        toks = bm.tokenize(ctx.chunks[cid].text)
        if not toks:
            continue
        counts: dict[int, int] = {}
        for t in toks:
            if t in bm._vocab:
                tid = bm._vocab[t]
                counts[tid] = counts.get(tid, 0) + 1
        for tid, c in counts.items():
            if tid in own:
                continue
            df = float(bm._df[tid])
            if df < 2:
                continue
            idf = np.log1p((n - df + 0.5) / (df + 0.5))
            weights[tid] = weights.get(tid, 0.0) + c / len(toks) * idf
    best = sorted(weights.items(), key=lambda p: -p[1])[:n_terms]
    if not best:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    high = best[0][1]
    return (np.asarray([t for t, _ in best], dtype=np.int64),
            np.asarray([w / high for _, w in best], dtype=np.float32))


# ------------------------------------------------------------------ variants

#: A short English stopword list (articles, pronouns, auxiliaries, question words, prepositions).
STOPWORDS = frozenset("""a an the is are was were be been being do does did doing i you he she it we they me my
your our their this that these those what which who whom whose when where why how can could should would will
shall may might must of in on at to for from by with about as into like through over after before between out
up down off than too very s t just so and or but if not no nor there here any some such own same other more most
each all both few only then once again further also have has had having am get""".split())
#: The opening of an English question ("How do I", "What is", "Why doesn't", "Is there", ...).
QUESTION_OPENING = re.compile(
    r"^(how (do|can|should|does|would) (i|you|one|we)|what (is|are|does|do)|why (is|are|does|do|doesn't|don't|"
    r"can't|isn't|was)|is there|are there|can i|can you|do i|is it possible to)\s+", re.IGNORECASE)

Ranker = Callable[[Context, int], list[str]]


def variants() -> dict[str, Ranker]:
    from akasha.retrieval import fusion
    from akasha.retrieval.hubness import hub_scores

    def base_lists(ctx, qi):
        q = ctx.questions[qi].question
        dense = ctx.matrix @ ctx.qvecs[qi]
        tids, qtf = ctx.bm25._query_terms(q)
        return q, dense, tids, qtf

    def auto(k=10, w=(0.6, 0.4)):
        def run(ctx, qi):
            q, dense, tids, qtf = base_lists(ctx, qi)
            v, b = top(dense, ctx.ids), bm25_list(ctx, tids, qtf)
            return [i for i, _ in fusion.adaptive(q, v, b, len(ctx.ids), k=k, weights=w)]
        return run

    def single(kind):
        def run(ctx, qi):
            q, dense, tids, qtf = base_lists(ctx, qi)
            return [i for i, _ in (top(dense, ctx.ids) if kind == "knn" else bm25_list(ctx, tids, qtf))]
        return run

    def dprf(alpha, m, source="fused", k=10, w=(0.6, 0.4), third=False):
        """Rocchio: q' = q + alpha * mean(top-m chunk vectors); weights from the first-round lists."""
        def run(ctx, qi):
            q, dense, tids, qtf = base_lists(ctx, qi)
            v, b = top(dense, ctx.ids), bm25_list(ctx, tids, qtf)
            wv, wb = fusion.adaptive_weights(q, v, b, len(ctx.ids), weights=w)
            first = fusion.rrf([v, b], k=k, weights=[wv, wb]) if source == "fused" else v
            rows = [ctx.row[i] for i, _ in first[:m]]
            qv = ctx.qvecs[qi] + alpha * ctx.matrix[rows].mean(axis=0)
            qv /= np.linalg.norm(qv)
            v2 = top(ctx.matrix @ qv, ctx.ids)
            lists, weights = ([v, v2, b], [wv / 2, wv / 2, wb]) if third else ([v2, b], [wv, wb])
            return [i for i, _ in fusion.rrf(lists, k=k, weights=weights)]
        return run

    def bprf(beta, m, n_terms, also_dense=0.0, k=10, w=(0.6, 0.4)):
        """RM3-style: the best n_terms terms of the fused top m chunks join the BM25 query at weight beta."""
        def run(ctx, qi):
            q, dense, tids, qtf = base_lists(ctx, qi)
            v, b = top(dense, ctx.ids), bm25_list(ctx, tids, qtf)
            wv, wb = fusion.adaptive_weights(q, v, b, len(ctx.ids), weights=w)
            first = fusion.rrf([v, b], k=k, weights=[wv, wb])
            fb = [i for i, _ in first[:m]]
            et, ew = rm3_terms(ctx, fb, tids, n_terms)
            if len(et):
                all_t = np.concatenate([tids, et])
                all_w = np.concatenate([qtf, beta * ew * max(1.0, float(qtf.sum())) / max(1.0, float(ew.sum()))])
                order = np.argsort(all_t)
                b2 = bm25_list(ctx, all_t[order], all_w[order].astype(np.float32))
            else:
                b2 = b
            if also_dense:
                rows = [ctx.row[i] for i in fb]
                qv = ctx.qvecs[qi] + also_dense * ctx.matrix[rows].mean(axis=0)
                qv /= np.linalg.norm(qv)
                v = top(ctx.matrix @ qv, ctx.ids)
            return [i for i, _ in fusion.rrf([v, b2], k=k, weights=[wv, wb])]
        return run

    def doc_prior(gamma, kind="mean", k=10, w=(0.6, 0.4)):
        """A chunk's fused score plus gamma * weighted-RRF credit of its document's rank."""
        def run(ctx, qi):
            q, dense, tids, qtf = base_lists(ctx, qi)
            v, b = top(dense, ctx.ids), bm25_list(ctx, tids, qtf)
            wv, wb = fusion.adaptive_weights(q, v, b, len(ctx.ids), weights=w)
            fused = fusion.rrf([v, b], k=k, weights=[wv, wb])
            if kind == "mean":
                dscore = ctx.doc_matrix @ ctx.qvecs[qi]
            else:  # max of its chunks
                dscore = np.full(ctx.doc_matrix.shape[0], -np.inf, dtype=np.float32)
                np.maximum.at(dscore, ctx.doc_of, dense)
            drank = np.empty(len(dscore), dtype=np.int64)
            drank[np.argsort(-dscore, kind="stable")] = np.arange(1, len(dscore) + 1)
            out = [(i, s + gamma * wv / (k + drank[ctx.doc_of[ctx.row[i]]])) for i, s in fused]
            return [i for i, _ in sorted(out, key=lambda p: -p[1])]
        return run

    def neighbours(gamma, where="dense", k=10, w=(0.6, 0.4)):
        """Neighbour smoothing: s' = s + gamma * max(neighbour scores), on the cosines or on the fused scores."""
        def run(ctx, qi):
            q, dense, tids, qtf = base_lists(ctx, qi)
            b = bm25_list(ctx, tids, qtf)
            v = top(dense, ctx.ids)
            wv, wb = fusion.adaptive_weights(q, v, b, len(ctx.ids), weights=w)
            if where == "dense":
                ext = np.append(dense, -1.0)
                smoothed = dense + gamma * np.maximum(np.maximum(ext[ctx.prev], ext[ctx.next]), 0.0)
                return [i for i, _ in fusion.rrf([top(smoothed, ctx.ids), b], k=k, weights=[wv, wb])]
            fused = dict(fusion.rrf([v, b], k=k, weights=[wv, wb]))
            out = []
            for cid, s in fused.items():
                r = ctx.row[cid]
                nb = max(fused.get(ctx.ids[j], 0.0) if j >= 0 else 0.0 for j in (ctx.prev[r], ctx.next[r]))
                out.append((cid, s + gamma * nb))
            return [i for i, _ in sorted(out, key=lambda p: -p[1])]
        return run

    def combo(doc=0.0, nbd=0.0, nbf=0.0, prf=None, k=10, w=(0.6, 0.4), doc_kind="mean"):
        """Document prior (doc), dense neighbour smoothing (nbd), fused neighbour smoothing (nbf) and
        BM25 feedback (prf = (beta, m, terms)) together."""
        def run(ctx, qi):
            q, dense, tids, qtf = base_lists(ctx, qi)
            v, b = top(dense, ctx.ids), bm25_list(ctx, tids, qtf)
            wv, wb = fusion.adaptive_weights(q, v, b, len(ctx.ids), weights=w)
            if prf is not None:
                beta, m, n_terms = prf
                first = fusion.rrf([v, b], k=k, weights=[wv, wb])
                et, ew = rm3_terms(ctx, [i for i, _ in first[:m]], tids, n_terms)
                if len(et):
                    all_t = np.concatenate([tids, et])
                    all_w = np.concatenate([qtf, beta * ew * max(1.0, float(qtf.sum())) / max(1.0, float(ew.sum()))])
                    order = np.argsort(all_t)
                    b = bm25_list(ctx, all_t[order], all_w[order].astype(np.float32))
            if nbd:
                ext = np.append(dense, -1.0)
                v = top(dense + nbd * np.maximum(np.maximum(ext[ctx.prev], ext[ctx.next]), 0.0), ctx.ids)
            fused = dict(fusion.rrf([v, b], k=k, weights=[wv, wb]))
            if nbf:
                smooth = {}
                for cid, s in fused.items():
                    r = ctx.row[cid]
                    nb = max(fused.get(ctx.ids[j], 0.0) if j >= 0 else 0.0 for j in (ctx.prev[r], ctx.next[r]))
                    smooth[cid] = s + nbf * nb
                fused = smooth
            if doc:
                if doc_kind == "mean":
                    dscore = ctx.doc_matrix @ ctx.qvecs[qi]
                else:
                    dscore = np.full(ctx.doc_matrix.shape[0], -np.inf, dtype=np.float32)
                    np.maximum.at(dscore, ctx.doc_of, dense)
                drank = np.empty(len(dscore), dtype=np.int64)
                drank[np.argsort(-dscore, kind="stable")] = np.arange(1, len(dscore) + 1)
                fused = {i: s + doc * wv / (k + drank[ctx.doc_of[ctx.row[i]]]) for i, s in fused.items()}
            return [i for i, _ in sorted(fused.items(), key=lambda p: -p[1])]
        return run

    def smooth(gamma, how="max", k=10, w=(0.6, 0.4), depth=DEPTH, side="both"):
        """Fused neighbour smoothing: a chunk's fused score plus gamma * its neighbours' (max, mean or sum)."""
        def run(ctx, qi):
            q, dense, tids, qtf = base_lists(ctx, qi)
            v = top(dense, ctx.ids, depth)
            scores = bm25_full(ctx, tids, qtf)
            order = np.argsort(-scores, kind="stable")[:depth]
            b = [(ctx.ids[i], float(scores[i])) for i in order if scores[i] > 0]
            wv, wb = fusion.adaptive_weights(q, v, b, len(ctx.ids), weights=w)
            fused = dict(fusion.rrf([v, b], k=k, weights=[wv, wb]))
            out = {}
            for cid, s in fused.items():
                r = ctx.row[cid]
                sides = (ctx.prev[r], ctx.next[r]) if side == "both" else ((ctx.next[r],) if side == "next"
                                                                          else (ctx.prev[r],))
                nb = [fused.get(ctx.ids[j], 0.0) if j >= 0 else 0.0 for j in sides]
                extra = max(nb) if how == "max" else (sum(nb) / len(nb) if how == "mean" else sum(nb))
                out[cid] = s + gamma * extra
            return [i for i, _ in sorted(out.items(), key=lambda p: -p[1])]
        return run

    def zsum(wb_share=0.4, bm_norm="z"):
        """Score-based: z-scores of the cosines (over every chunk) and of BM25 (over its matches), weighted sum."""
        def run(ctx, qi):
            q, dense, tids, qtf = base_lists(ctx, qi)
            v, b = top(dense, ctx.ids), bm25_list(ctx, tids, qtf)
            wv, wb = fusion.adaptive_weights(q, v, b, len(ctx.ids), weights=(1 - wb_share, wb_share))
            zd = (dense - dense.mean()) / max(float(dense.std()), 1e-6)
            scores = bm25_full(ctx, tids, qtf)
            hit = scores > 0
            if hit.sum() > 1:
                if bm_norm == "z":
                    zb = np.where(hit, (scores - scores[hit].mean()) / max(float(scores[hit].std()), 1e-6), 0.0)
                else:
                    zb = scores / max(float(scores.max()), 1e-6) * 3.0
            else:
                zb = np.zeros_like(scores)
            total = wv * zd + wb * zb
            return [ctx.ids[i] for i in np.argsort(-total, kind="stable")[:DEPTH]]
        return run

    import re as _re

    code_re = _re.compile(r"[A-Za-z0-9]_|_[A-Za-z0-9]|\w\(|\w\.\w|[A-Za-z][a-z]+[A-Z]")

    def signal(kind, shift, gamma=0.1, words=6):
        """Smoothing 0.1 plus a per-question BM25 weight shift: code-like words ("code") or a short question ("short")."""
        def run(ctx, qi):
            q, dense, tids, qtf = base_lists(ctx, qi)
            v, b = top(dense, ctx.ids), bm25_list(ctx, tids, qtf)
            fire = bool(code_re.search(q)) if kind == "code" else len(q.split()) <= words
            w = (0.6 - shift, 0.4 + shift) if fire else (0.6, 0.4)
            fused = fusion.adaptive(q, v, b, len(ctx.ids), weights=w)
            return [i for i, _ in fusion.smooth_neighbours(fused, gamma)]
        return run

    def passage_bm25(size, overlap, mix=1.0, gamma=0.1):
        """BM25 over windows of each chunk; a chunk scores mix * its best window + (1 - mix) * its own BM25."""
        def run(ctx, qi):
            q, dense, tids, qtf = base_lists(ctx, qi)
            v = top(dense, ctx.ids)
            bm, owner = ctx.passages(size, overlap)
            best = np.zeros(len(ctx.ids), dtype=np.float32)
            for wid, sc in bm.search(q, 400):
                r = owner[wid]
                best[r] = max(best[r], sc)
            if mix < 1.0:
                own = bm25_full(ctx, tids, qtf)
                best = mix * best / max(float(best.max()), 1e-9) + (1 - mix) * own / max(float(own.max()), 1e-9)
            order = np.argsort(-best, kind="stable")[:DEPTH]
            b = [(ctx.ids[i], float(best[i])) for i in order if best[i] > 0]
            fused = fusion.adaptive(q, v, b, len(ctx.ids))
            return [i for i, _ in fusion.smooth_neighbours(fused, gamma)]
        return run

    def context_vectors(beta, gamma=0.1):
        """Dense list over context vectors v_i + beta * (v_prev + v_next), normalised; then auto + smoothing."""
        def run(ctx, qi):
            q, dense, tids, qtf = base_lists(ctx, qi)
            key = f"_ctxnorm_{beta}"
            norms = ctx.__dict__.get(key)
            if norms is None:
                pad = np.vstack([ctx.matrix, np.zeros((1, ctx.matrix.shape[1]), dtype=np.float32)])
                combined = ctx.matrix + beta * (pad[ctx.prev] + pad[ctx.next])
                norms = ctx.__dict__[key] = np.linalg.norm(combined, axis=1)
            ext = np.append(dense, 0.0)
            scores = (dense + beta * (ext[ctx.prev] + ext[ctx.next])) / norms
            v, b = top(scores, ctx.ids), bm25_list(ctx, tids, qtf)
            fused = fusion.adaptive(q, v, b, len(ctx.ids))
            return [i for i, _ in fusion.smooth_neighbours(fused, gamma)]
        return run

    def question_words(stop_bm25=False, strip_mix=0.0, gamma=0.1):
        """auto + smoothing with English question words out of the BM25 query (``stop_bm25``) and/or
        the question embedded again without its opening ("How do I", "What is", ...), its cosines
        mixed in at ``strip_mix``."""
        def run(ctx, qi):
            q, dense, tids, qtf = base_lists(ctx, qi)
            if strip_mix:
                stripped = ctx.rewritten_vectors(lambda text: QUESTION_OPENING.sub("", text.strip()), "opening")
                dense = (1 - strip_mix) * dense + strip_mix * (ctx.matrix @ stripped[qi])
            if stop_bm25:
                vocab = ctx.bm25._vocab
                stop = {vocab[w] for w in STOPWORDS if w in vocab}
                keep = np.asarray([t not in stop for t in tids.tolist()], dtype=bool)
                if keep.any():
                    tids, qtf = tids[keep], qtf[keep]
            v, b = top(dense, ctx.ids), bm25_list(ctx, tids, qtf)
            return [i for i, _ in fusion.smooth_neighbours(fusion.adaptive(q, v, b, len(ctx.ids)), gamma)]
        return run

    def hub_values(ctx, kind, amount, k_hub):
        """Cached per set: ``csls``, every chunk's hub score (akasha's own ``hub_scores`` with ``k_hub``
        neighbours); ``centre``, the chunk vectors less ``amount`` times their mean, renormalised."""
        key = f"_hub_csls_{k_hub}" if kind == "csls" else f"_hub_centre_{amount}"
        cached = ctx.__dict__.get(key)
        if cached is None:
            if kind == "csls":
                cached = hub_scores(ctx.matrix, k_hub)
            else:
                shifted = ctx.matrix - amount * ctx.matrix.mean(axis=0, keepdims=True)
                cached = shifted / np.maximum(np.linalg.norm(shifted, axis=1, keepdims=True), 1e-12)
            ctx.__dict__[key] = cached
        return cached

    def hub_cosines(ctx, qi, kind, amount, k_hub):
        """The question's cosines corrected for hubs (see :func:`hubness`)."""
        values = hub_values(ctx, kind, amount, k_hub)
        if kind == "centre":
            return values @ ctx.qvecs[qi]
        return ctx.matrix @ ctx.qvecs[qi] - amount * values

    def hubness(kind, amount, k_hub=10, gamma=0.1):
        """auto + smoothing over cosines corrected for hubs: chunks close to many chunks (generic text)
        outrank focused ones for every question. ``centre``: cosines after subtracting ``amount`` times
        the corpus' mean vector from every chunk vector (renormalised); ``csls``: cosine minus
        ``amount`` times the chunk's mean cosine to its ``k_hub`` nearest chunks (as in CSLS)."""
        def run(ctx, qi):
            q, _dense, tids, qtf = base_lists(ctx, qi)
            v, b = top(hub_cosines(ctx, qi, kind, amount, k_hub), ctx.ids), bm25_list(ctx, tids, qtf)
            return [i for i, _ in fusion.smooth_neighbours(fusion.adaptive(q, v, b, len(ctx.ids)), gamma)]
        return run

    def hub_rescore(amount, k_hub, fetch, keep=DEPTH, gamma=0.1, k=10, w=(0.6, 0.4), scaled=False):
        """As ``hubness("csls", ...)``, but only the ``fetch`` best raw cosines are corrected and re-sorted
        (what a store's own nearest-neighbour search allows), the best ``keep`` of them fused.

        ``scaled``: the weight is multiplied by sd(candidates' cosines) / sd(their hub scores), so an
        embedder whose cosines all lie close together (e5) is not discounted harder than MiniLM."""
        def run(ctx, qi):
            hubs = hub_values(ctx, "csls", amount, k_hub)
            q, dense, tids, qtf = base_lists(ctx, qi)
            order = np.argsort(-dense, kind="stable")[:fetch]
            weight = amount * (float(dense[order].std()) / max(float(hubs[order].std()), 1e-9) if scaled else 1.0)
            corrected = sorted(((ctx.ids[i], float(dense[i] - weight * hubs[i])) for i in order), key=lambda p: -p[1])
            v, b = corrected[:keep], bm25_list(ctx, tids, qtf)
            fused = fusion.adaptive(q, v, b, len(ctx.ids), k=k, weights=w)
            return [i for i, _ in fusion.smooth_neighbours(fused, gamma)]
        return run

    def hub_knn(kind, amount, k_hub=10):
        def run(ctx, qi):
            return [ctx.ids[i] for i in np.argsort(-hub_cosines(ctx, qi, kind, amount, k_hub), kind="stable")[:DEPTH]]
        return run

    out: dict[str, Ranker] = {"bm25": single("bm25"), "knn": single("knn"), "auto": auto()}
    out["smooth 0.1 + stopwords out of the bm25 query"] = question_words(stop_bm25=True)
    out["smooth 0.1 + question opening stripped mix 0.5"] = question_words(strip_mix=0.5)
    out["smooth 0.1 + question opening stripped mix 1.0"] = question_words(strip_mix=1.0)
    for k in (5, 20, 30):
        out[f"auto k={k}"] = auto(k=k)
    for wv in (0.55, 0.65, 0.7):
        out[f"auto w={wv}"] = auto(w=(wv, 1 - wv))
    for m in (3, 5, 10):
        for a in (0.3, 0.6, 1.0):
            out[f"dprf a={a} m={m}"] = dprf(a, m)
    out["dprf a=0.6 m=5 knn-fb"] = dprf(0.6, 5, source="knn")
    out["dprf a=0.6 m=5 3-list"] = dprf(0.6, 5, third=True)
    for m in (3, 5):
        for beta in (0.3, 0.6):
            for t in (10, 20):
                out[f"bprf b={beta} m={m} t={t}"] = bprf(beta, m, t)
    out["bprf+dprf b=0.3 m=5 t=10 a=0.6"] = bprf(0.3, 5, 10, also_dense=0.6)
    for g in (0.1, 0.3, 0.5):
        out[f"doc prior mean g={g}"] = doc_prior(g, "mean")
        out[f"doc prior max g={g}"] = doc_prior(g, "max")
    for g in (0.05, 0.1, 0.2):
        out[f"neighbours dense g={g}"] = neighbours(g, "dense")
    for g in (0.1, 0.3):
        out[f"neighbours fused g={g}"] = neighbours(g, "fused")
    for g in (0.7, 1.0, 1.5, 2.0):
        out[f"doc prior mean g={g}"] = combo(doc=g)
    for g in (0.5, 1.0):
        out[f"doc {g} + nb dense 0.1"] = combo(doc=g, nbd=0.1)
        out[f"doc {g} + nb dense 0.2"] = combo(doc=g, nbd=0.2)
        out[f"doc {g} + nb fused 0.3"] = combo(doc=g, nbf=0.3)
        out[f"doc {g} + bprf 0.3/5/10"] = combo(doc=g, prf=(0.3, 5, 10))
        out[f"doc {g} + nb dense 0.1 + bprf"] = combo(doc=g, nbd=0.1, prf=(0.3, 5, 10))
    out["combo check doc 0.5 (= doc prior mean g=0.5)"] = combo(doc=0.5)
    for g in (0.05, 0.1, 0.15, 0.2):
        for how in ("max", "mean"):
            out[f"smooth {how} g={g}"] = smooth(g, how)
    out["smooth sum g=0.1"] = smooth(0.1, "sum")
    out["smooth max g=0.1 next only"] = smooth(0.1, "max", side="next")
    out["smooth max g=0.1 prev only"] = smooth(0.1, "max", side="prev")
    out["smooth max g=0.1 depth 100"] = smooth(0.1, "max", depth=100)
    out["auto depth 100"] = smooth(0.0, "max", depth=100)
    stem_auto, stem_smooth = auto(), smooth(0.1, "max")
    out["stemmed bm25"] = lambda ctx, qi: stem_auto(ctx.stemmed(), qi)
    out["stemmed bm25 + smooth max g=0.1"] = lambda ctx, qi: stem_smooth(ctx.stemmed(), qi)
    out["smooth max g=0.1 k=5"] = smooth(0.1, "max", k=5)
    out["smooth max g=0.1 w=0.55"] = smooth(0.1, "max", w=(0.55, 0.45))
    for kind in ("code", "short"):
        for shift in (0.1, 0.2, -0.1):
            out[f"smooth 0.1 + {kind} questions bm25 {shift:+}"] = signal(kind, shift)
    for words in (4, 5, 8, 10):
        for shift in (-0.1, -0.2):
            out[f"smooth 0.1 + questions of <= {words} words bm25 {shift:+}"] = signal("short", shift, words=words)
    out["smooth 0.1 + short questions bm25 -0.2"] = signal("short", -0.2)
    out["smooth 0.1 + short questions bm25 -0.3"] = signal("short", -0.3)
    for size, overlap in ((300, 60), (400, 80), (500, 100)):
        out[f"smooth 0.1 + passage bm25 {size}"] = passage_bm25(size, overlap)
        out[f"smooth 0.1 + passage bm25 {size} mix 0.5"] = passage_bm25(size, overlap, mix=0.5)
    for beta in (0.1, 0.2, 0.3, 0.5):
        out[f"smooth 0.1 + context vectors {beta}"] = context_vectors(beta)
        out[f"context vectors {beta} no smoothing"] = context_vectors(beta, 0.0)
    for share in (0.3, 0.4, 0.5):
        out[f"zsum bm25 {share}"] = zsum(share)
        out[f"zsum max-norm bm25 {share}"] = zsum(share, "max")
    out["smooth 0.1"] = smooth(0.1, "max")
    for amount in (0.5, 1.0):
        out[f"hub centre {amount}"] = hubness("centre", amount)
        out[f"hub centre {amount} knn"] = hub_knn("centre", amount)
    for amount in (0.3, 0.5, 1.0):
        out[f"hub csls {amount}"] = hubness("csls", amount)
        out[f"hub csls {amount} knn"] = hub_knn("csls", amount)
    for fetch in (50, 100, 200):
        out[f"hub csls 0.5 k5 rescore {fetch}"] = hub_rescore(0.5, 5, fetch)
    for amount in (0.1, 0.2, 0.3, 0.5):
        out[f"hub scaled {amount}"] = hub_rescore(amount, 5, 50, scaled=True)
    for wv in (0.55, 0.65, 0.7):
        out[f"hub 0.5 k5 + w={wv}"] = hub_rescore(0.5, 5, 50, w=(wv, 1 - wv))
    for rrf_k in (5, 20):
        out[f"hub 0.5 k5 + k={rrf_k}"] = hub_rescore(0.5, 5, 50, k=rrf_k)
    for gamma in (0.0, 0.05, 0.15):
        out[f"hub 0.5 k5 + smoothing {gamma}"] = hub_rescore(0.5, 5, 50, gamma=gamma)
    for amount in (0.4, 0.5, 0.6, 0.7):
        for k_hub in (5, 10, 20, 50):
            out[f"hub csls {amount} k{k_hub}"] = hubness("csls", amount, k_hub)
    return out


def score(ctx: Context, ranker: Ranker, memo: dict) -> dict[str, float]:
    from akasha.evaluation.metrics import ndcg_at_k, reciprocal_rank, recall_at_k
    from akasha.evaluation.relevance import matcher_for

    sums = {"recall@1": 0.0, "recall@5": 0.0, "mrr@10": 0.0, "ndcg@10": 0.0}
    for qi, question in enumerate(ctx.questions):
        ranked = ranker(ctx, qi)[:10]
        matcher = memo.get(("m", qi))
        if matcher is None:
            matcher = memo[("m", qi)] = matcher_for(question, ctx.folder)
        matches = []
        for cid in ranked:
            key = (qi, cid)
            if key not in memo:
                chunk = ctx.chunks[cid]
                memo[key] = matcher(chunk.text, chunk.metadata.get("source"))
            matches.append(memo[key])
        n = question.n_units
        sums["recall@1"] += recall_at_k(matches, n, 1)
        sums["recall@5"] += recall_at_k(matches, n, 5)
        sums["mrr@10"] += reciprocal_rank(matches, 10)
        sums["ndcg@10"] += ndcg_at_k(matches, n, 10)
    return {m: v / len(ctx.questions) for m, v in sums.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="debian-faq-en,python-faq,debian-faq-zh-cn,debian-faq-ja")
    parser.add_argument("--variants", default="", help="comma-separated names (default: all)")
    parser.add_argument("--embeddings", default="hf:all-MiniLM-L6-v2")
    parser.add_argument("--out", type=Path, default=RESULTS / "retrieval_study.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    from akasha.embeddings import resolve_embedder

    embedder = resolve_embedder(args.embeddings)
    every = variants()
    wanted = args.variants.split(",") if args.variants else list(every)
    unknown = [w for w in wanted if w not in every]
    if unknown:
        raise SystemExit(f"unknown variant(s) {unknown}; known: {', '.join(every)}")
    table: dict[str, dict[str, dict[str, float]]] = {}
    for name in args.sets.split(","):
        ctx = open_set(name, embedder)
        memo: dict = {}
        for variant in wanted:
            start = time.perf_counter()
            table.setdefault(variant, {})[name] = score(ctx, every[variant], memo)
            log.info("%s %s: %s (%.1f s)", name, variant,
                     " ".join(f"{m} {v:.3f}" for m, v in table[variant][name].items()), time.perf_counter() - start)
    sets = args.sets.split(",")
    print("| variant | " + " | ".join(f"{s} R@5 / MRR" for s in sets) + " |")
    print("|---|" + "---|" * len(sets))
    for variant, per_set in table.items():
        print(f"| {variant} | " + " | ".join(
            f"{per_set[s]['recall@5']:.3f} / {per_set[s]['mrr@10']:.3f}" for s in sets) + " |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(table, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
