"""Index-side retrieval study: chunking, heading context, multi-window vectors and BM25 text, scored offline.

    python -m bench.chunk_study --sets debian-faq-en,python-faq --variants base,headings

Each variant builds its own chunks of a set's corpus (the akasha loaders and splitter),
embeds what it must with MiniLM (vectors cached by text hash under
bench/.data/study-cache/, seeded from bench/.data/eval-cache/, so a variant that embeds the
same texts as the index costs nothing), ranks every question with BM25 and with MiniLM,
fuses the two as ``auto`` does (:func:`akasha.retrieval.fusion.adaptive`) and scores
recall@1/5, MRR@10 and nDCG@10 of the *chunks* (each hit is a chunk's own text, so the
relevance rule is the same as in ``bench.eval_quality``). This is how the index-side
changes of docs/quality.md ("What was tried") were chosen before they were built in.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / ".data"
RESULTS = Path(__file__).resolve().parent / "results"
log = logging.getLogger("bench.chunk_study")


@dataclass
class Unit:
    """A retrievable chunk: the text returned (and judged), the texts it is found by."""

    id: str
    text: str
    path: str
    bm25_text: str
    embed_texts: list[str] = field(default_factory=list)


@dataclass
class Variant:
    name: str
    chunk_size: int = 1000
    overlap: int | None = None
    headings: bool = False  # heading path in front of the embedded text
    bm25_headings: bool = False  # ... and of the BM25 text
    windows: int = 0  # also embed windows of this many characters; a chunk scores its best vector
    whole: bool = True  # with windows: the whole chunk's vector counts too
    window_overlap: int | None = None  # default: a fifth of the window
    window_pick: str = "all"  # with windows: "all"; "last" (only the chunk's last window: one extra vector);
    # "unread": one extra vector only for a chunk longer than MiniLM reads (256 word pieces): its last
    # ``windows`` characters, starting no later than 100 characters before the point where MiniLM stops;
    # "head" / "middle" / "tail": one extra vector per chunk longer than ``windows``: its first, middle or
    # last ``windows`` characters
    pool: str = "max"  # a chunk's dense score: its best vector ("max"), or the cosine of their mean ("mean")
    file_title: bool = False  # the file name as a title when the text has none
    stem: str = ""  # BM25 tokens stemmed: "porter" (nltk, study only) or "light" (akasha's)
    k1: float = 1.5
    b: float = 0.75


VARIANTS = {
    "base": Variant("base"),
    "headings": Variant("headings", headings=True, bm25_headings=True),
    "headings-dense": Variant("headings-dense", headings=True),
    "headings-bm25": Variant("headings-bm25", bm25_headings=True),
    "headings+file": Variant("headings+file", headings=True, bm25_headings=True, file_title=True),
    "win400": Variant("win400", windows=400),
    "win300": Variant("win300", windows=300),
    "win400-only": Variant("win400-only", windows=400, whole=False),
    "headings+win400": Variant("headings+win400", headings=True, bm25_headings=True, windows=400),
    "headings+win300": Variant("headings+win300", headings=True, bm25_headings=True, windows=300),
    "porter": Variant("porter", stem="porter"),
    "light": Variant("light", stem="light"),
    "b0.5": Variant("b0.5", b=0.5),
    "k1.2": Variant("k1.2", k1=1.2),
    "headings-bm25+light": Variant("headings-bm25+light", bm25_headings=True, stem="light"),
    "halves": Variant("halves", windows=500, whole=False, window_overlap=0),
    "headings+halves": Variant("headings+halves", headings=True, bm25_headings=True, windows=500, whole=False,
                               window_overlap=0),
    "headings-bm25+halves": Variant("headings-bm25+halves", bm25_headings=True, windows=500, whole=False,
                                    window_overlap=0),
    "halves-mean": Variant("halves-mean", windows=500, whole=False, window_overlap=0, pool="mean"),
    "win400-mean": Variant("win400-mean", windows=400, whole=False, pool="mean"),
    "headings+halves-mean": Variant("headings+halves-mean", headings=True, bm25_headings=True, windows=500,
                                    whole=False, window_overlap=0, pool="mean"),
    "whole+halves": Variant("whole+halves", windows=500, window_overlap=0),
    "whole+last500": Variant("whole+last500", windows=500, window_overlap=0, window_pick="last"),
    "whole+last400": Variant("whole+last400", windows=400, window_pick="last"),
    "head400": Variant("head400", windows=400, window_pick="head"),
    "middle400": Variant("middle400", windows=400, window_pick="middle"),
    "tail400": Variant("tail400", windows=400, window_pick="tail"),
    "unread400": Variant("unread400", windows=400, window_pick="unread"),
    "unread600": Variant("unread600", windows=600, window_pick="unread"),
    "size500": Variant("size500", chunk_size=500),
    "size600": Variant("size600", chunk_size=600),
    "size700": Variant("size700", chunk_size=700),
    "size800": Variant("size800", chunk_size=800),
    "size1200": Variant("size1200", chunk_size=1200),
    "headings+size800": Variant("headings+size800", chunk_size=800, headings=True, bm25_headings=True),
}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def load_documents(folder: Path) -> list:
    from akasha.loaders import load_file

    documents = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        for document in load_file(path):
            document.metadata["source"] = str(path.resolve())
            documents.append(document)
    return documents


_TOKENIZER: list = []


def _unread_start(text: str, limit: int = 256) -> int | None:
    """The character offset where the packaged MiniLM stops reading ``text`` (``limit`` word pieces), or None."""
    if not _TOKENIZER:
        from tokenizers import Tokenizer

        from akasha.embeddings.local import packaged_model_dir

        tokenizer = Tokenizer.from_file(str(packaged_model_dir() / "tokenizer.json"))
        tokenizer.no_truncation()
        _TOKENIZER.append(tokenizer)
    encoding = _TOKENIZER[0].encode(text)
    if len(encoding.ids) <= limit:
        return None
    return int(encoding.offsets[limit - 1][0])  # the last position is [SEP]


def build_units(documents: list, variant: Variant) -> list[Unit]:
    from akasha.chunking import split_text
    from bench.headings import heading_paths, piece_offsets

    units = []
    for number, document in enumerate(documents):
        pieces = split_text(document.text, variant.chunk_size, variant.overlap)
        title = Path(document.metadata["source"]).stem.replace("_", " ") if variant.file_title else None
        paths = heading_paths(document.text, piece_offsets(document.text, pieces), title) if (
            variant.headings or variant.bm25_headings) else [""] * len(pieces)
        for index, (piece, path) in enumerate(zip(pieces, paths, strict=True)):
            context = f"{path}\n\n{piece}" if path else piece
            embed = [context if variant.headings else piece] if variant.whole or not variant.windows else []
            if variant.window_pick == "unread":
                stop = _unread_start(piece)
                if stop is not None:
                    tail = piece[max(0, min(stop - 100, len(piece) - variant.windows)):]
                    embed.append(f"{path}\n\n{tail}" if variant.headings and path else tail)
            elif variant.window_pick in ("head", "middle", "tail"):
                if len(piece) > variant.windows:
                    start = {"head": 0, "middle": (len(piece) - variant.windows) // 2,
                             "tail": len(piece) - variant.windows}[variant.window_pick]
                    window = piece[start:start + variant.windows]
                    embed.append(f"{path}\n\n{window}" if variant.headings and path else window)
            elif variant.windows and len(piece) > variant.windows:
                windows = split_text(piece, variant.windows, variant.windows // 5 if variant.window_overlap is None
                                     else variant.window_overlap)
                for window in (windows[-1:] if variant.window_pick == "last" else windows):
                    embed.append(f"{path}\n\n{window}" if variant.headings and path else window)
            elif variant.windows and not embed:
                embed = [context if variant.headings else piece]
            units.append(Unit(f"{number}#{index}", piece, document.metadata["source"],
                              context if variant.bm25_headings else piece, embed))
    return units


class VectorCache:
    """MiniLM vectors by text sha256, in a manifest under bench/.data/study-cache (seeded from the eval cache)."""

    def __init__(self, embedder, set_name: str) -> None:
        from akasha.index.manifest import Manifest

        (DATA / "study-cache").mkdir(parents=True, exist_ok=True)
        self.embedder = embedder
        self.model = embedder.name
        self.db = Manifest(str(DATA / "study-cache" / "vectors.sqlite3"))
        seed = DATA / "eval-cache" / set_name / "index.sqlite3"
        self.seed = Manifest(str(seed)) if seed.exists() else None

    def vectors(self, texts: list[str]) -> np.ndarray:
        hashes = [_sha(t) for t in texts]
        have = self.db.load_vectors(self.model, hashes)
        missing = [h for h in dict.fromkeys(hashes) if h not in have]
        if missing and self.seed is not None:
            seeded = self.seed.load_vectors(self.model, missing)
            if seeded:
                keys = list(seeded)
                self.db.store_vectors(self.model, keys, np.stack([seeded[k] for k in keys]))
                have.update(seeded)
                missing = [h for h in missing if h not in seeded]
        if missing:
            by_hash = dict(zip(hashes, texts, strict=True))
            log.info("embedding %d texts", len(missing))
            for start in range(0, len(missing), 64):
                part = missing[start:start + 64]
                matrix = np.asarray(self.embedder.embed_documents([by_hash[h] for h in part]), dtype=np.float32)
                self.db.store_vectors(self.model, part, matrix)
                have.update(zip(part, matrix, strict=True))
        matrix = np.stack([np.asarray(have[h], dtype=np.float32) for h in hashes])
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)

    def query(self, question: str) -> np.ndarray:
        key = _sha("query\0" + question)
        found = self.db.load_vectors(self.model, [key])
        if key not in found:
            vector = np.asarray(self.embedder.embed_query(question), dtype=np.float32)
            self.db.store_vectors(self.model, [key], vector[None, :])
            found[key] = vector
        vector = np.asarray(found[key], dtype=np.float32)
        return vector / max(float(np.linalg.norm(vector)), 1e-12)


def _stemmed(tokenize: Callable[[str], list[str]], kind: str) -> Callable[[str], list[str]]:
    """``tokenize`` with every token stemmed (CJK tokens pass through unchanged)."""
    if kind == "porter":
        from nltk.stem.porter import PorterStemmer

        stem = PorterStemmer().stem
    else:
        from akasha.retrieval.stem import stem_english as stem
    cache: dict[str, str] = {}

    def run(text: str) -> list[str]:
        out = []
        for token in tokenize(text):
            hit = cache.get(token)
            if hit is None:
                hit = cache[token] = stem(token) if token.isascii() else token
            out.append(hit)
        return out

    return run


class _Hit:
    def __init__(self, unit: Unit) -> None:
        self.text, self.path = unit.text, unit.path


def run_variant(set_name: str, documents: list, questions: list, folder: Path, variant: Variant,
                cache: VectorCache, depth: int = 50, fusions: dict[str, Callable] | None = None) -> list[dict]:
    from akasha.evaluation.runner import evaluate_search
    from akasha.retrieval import fusion
    from akasha.retrieval.bm25 import BM25Index

    started = time.perf_counter()
    units = build_units(documents, variant)
    owners = [i for i, u in enumerate(units) for _ in u.embed_texts]
    matrix = cache.vectors([t for u in units for t in u.embed_texts])
    owner = np.asarray(owners)
    if variant.pool == "mean":
        pooled = np.zeros((len(units), matrix.shape[1]), dtype=np.float32)
        np.add.at(pooled, owner, matrix)
        matrix = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        owner = np.arange(len(units))
    bm25 = BM25Index(tokenizer="auto", k1=variant.k1, b=variant.b)
    if variant.stem:
        bm25._tokenize = _stemmed(bm25._tokenize, variant.stem)
    bm25.add([u.id for u in units], [u.bm25_text for u in units])
    by_id = {u.id: u for u in units}
    rankings = {}
    for q in questions:
        scores = matrix @ cache.query(q.question)
        best = np.full(len(units), -np.inf, dtype=np.float32)
        np.maximum.at(best, owner, scores)
        top = np.argsort(-best)[:depth]
        knn = [(units[i].id, float(best[i])) for i in top]
        rankings[q.question] = (bm25.search(q.question, depth), knn)
    fusions = fusions or {"bm25": lambda q, b, v, n: b, "knn": lambda q, b, v, n: v,
                          "auto": lambda q, b, v, n: fusion.adaptive(q, v, b, n)}
    rows = []
    for name, fuse in fusions.items():
        def search(question, _type, _reranker, k, fuse=fuse):
            b, v = rankings[question]
            return [_Hit(by_id[item]) for item, _ in fuse(question, b, v, len(units))[:k]]

        row = evaluate_search(search, questions, search_types=[name], folder=folder).rows[0]
        rows.append({"set": set_name, "variant": variant.name, "search_type": name, "chunks": len(units),
                     "vectors": len(owners), **{m: row[m] for m in ("recall@1", "recall@5", "mrr@10", "ndcg@10")}})
    log.info("%s %s: %d chunks, %d vectors, %.1f s", set_name, variant.name, len(units), len(owners),
             time.perf_counter() - started)
    return rows


def main(argv: list[str] | None = None) -> int:
    from bench.eval_quality import SETS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="debian-faq-ja,debian-faq-zh-cn,debian-faq-en,python-faq")
    parser.add_argument("--variants", default="base,headings")
    parser.add_argument("--embeddings", default="hf:all-MiniLM-L6-v2")
    parser.add_argument("--out", type=Path, default=RESULTS / "chunk_study.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    from akasha.embeddings import resolve_embedder
    from akasha.evaluation.relevance import load_questions

    embedder = resolve_embedder(args.embeddings)
    rows: list[dict] = []
    for set_name in args.sets.split(","):
        root = DATA / set_name
        if not (root / "questions.jsonl").exists():
            SETS[set_name](root)
        questions = load_questions(root / "questions.jsonl")
        documents = load_documents(root / "corpus")
        cache = VectorCache(embedder, set_name)
        for name in args.variants.split(","):
            rows.extend(run_variant(set_name, documents, questions, root / "corpus", VARIANTS[name], cache))
    print("| set | variant | search | chunks | vectors | recall@1 | recall@5 | MRR@10 | nDCG@10 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['set']} | {r['variant']} | {r['search_type']} | {r['chunks']} | {r['vectors']} | "
              f"{r['recall@1']:.3f} | {r['recall@5']:.3f} | {r['mrr@10']:.3f} | {r['ndcg@10']:.3f} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
